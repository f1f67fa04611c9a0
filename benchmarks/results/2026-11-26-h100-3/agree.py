"""How often a draft stand-in picks the target stand-in's next token, teacher-forced on the
target's own greedy output (64 tokens of one chat prompt), on the CPU:

    python agree.py T.gguf S.gguf [S2.gguf ...]
"""
import sys

import llama_cpp
import numpy as np

PROMPT = "<|im_start|>user\nWhat kind of bird is in the lion king?<|im_end|>\n<|im_start|>assistant\n"
target = llama_cpp.Llama(sys.argv[1], n_ctx=512, logits_all=True, verbose=False, n_threads=2)
prompt = target.tokenize(PROMPT.encode(), special=True)
output = []
for token in target.generate(prompt, temp=0.0, top_k=1):
    output.append(token)
    if len(output) == 64:
        break
sequence = prompt + output
for name in sys.argv[2:]:
    draft = llama_cpp.Llama(name, n_ctx=512, logits_all=True, verbose=False, n_threads=2)
    draft.eval(sequence[:-1])
    picks = [int(np.argmax(draft.scores[i])) for i in range(len(prompt) - 1, len(sequence) - 1)]
    print(name, "teacher-forced agreement:", round(float(np.mean([p == t for p, t in zip(picks, output)])), 3))
