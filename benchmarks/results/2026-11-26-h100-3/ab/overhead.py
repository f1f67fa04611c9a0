"""Per-round Python time of auto against plain decoding (absolute ms: what a fast GPU pass exposes)."""
import cProfile, pstats, sys, time
from specgen.llama.library import llama; llama()
from specgen.llama.model import Model, LoadOptions
from specgen.llama.calibrate import drafter_for, base_drafter
from specgen.decoding.loop import GenerationConfig, generate
from specgen.decoding.sampling import SamplingParams
from specgen.llama.pair import encode_messages

M = "/root/.cache/specgen-models/"
target = Model(M + sys.argv[1], LoadOptions(n_ctx=2048))
draft = Model(M + sys.argv[2], LoadOptions(n_ctx=2048)) if sys.argv[2] != "-" else None
prompts = ["Who sings i'll sleep when i'm dead? Answer in a paragraph.",
           "Explain what a KV cache is, in two paragraphs.",
           "Translate to German: The quick brown fox jumps over the lazy dog, and then it runs home to eat dinner."]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 128
prof = cProfile.Profile() if "--prof" in sys.argv else None
for k, auto in ((0, False), (4, True)):
    rounds = py = dec = 0.0; toks = 0
    for text in prompts:
        cfg = GenerationConfig(n, k, SamplingParams(temperature=0.0))
        drafter = drafter_for(target, base_drafter(draft), cfg, auto) if k else None
        tokens = encode_messages(target, [("user", text)])
        target.truncate(0)
        if prof and auto: prof.enable()
        for ev in generate(target, drafter, tokens, cfg):
            if hasattr(ev, "python_s") and hasattr(ev, "emitted"):
                rounds += 1; py += ev.python_s; toks += ev.emitted; dec += ev.draft_s + ev.verify_s
        if prof and auto: prof.disable()
    print(f"{'auto' if auto else 'plain'}: {toks} tokens, {rounds:.0f} rounds, python {1000*py/rounds:.3f} ms/round, decode {1000*dec/rounds:.2f} ms/round")
if prof:
    pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
