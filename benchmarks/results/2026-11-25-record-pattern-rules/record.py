"""Record the target model's greedy outputs for prompt files, as token ids, in the form
tests/copyreplay.py replays: {"about": ..., "outputs": {name: {"kind", "prompt", "output"}}}.

The prompt is chat-templated as `specgen run` does it, the target decodes alone (plain greedy
decoding, `-k 0`), and the output's token ids are kept as the loop emitted them.

    python record.py --target T.gguf -n 384 --out outputs.json PROMPT.txt ...
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from specgen.bench.prompts import read_prompt_files
from specgen.decoding.events import Round
from specgen.decoding.loop import GenerationConfig, generate
from specgen.llama.model import LoadOptions, Model
from specgen.llama.pair import encode_prompt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=Path, required=True)
    parser.add_argument("-n", "--max-tokens", type=int, default=384)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--about", default="")
    parser.add_argument("prompts", nargs="+")
    args = parser.parse_args()
    outputs = {}
    with Model(args.target, LoadOptions(n_threads=args.threads)) as target:
        for prompt in read_prompt_files(args.prompts, None):
            tokens = encode_prompt(target, prompt.text, raw=False)
            config = GenerationConfig(max_tokens=args.max_tokens, draft_tokens=0)
            output = [t for event in generate(target, None, tokens, config) if isinstance(event, Round)
                      for t in event.tokens]
            outputs[prompt.name] = {"kind": prompt.kind, "prompt": tokens, "output": output}
            print(f"{prompt.name}: {len(tokens)} prompt tokens, {len(output)} output tokens", flush=True)
    args.out.write_text(json.dumps({"about": args.about, "outputs": outputs}) + "\n")


if __name__ == "__main__":
    main()
