"""The target's verify curve at a reply's depth, timed the way the loop's passes run, as step costs
that tests/copyreplay.py replays on (`--curve FILE`).

specgen's calibration times each pass size at the start of the context and keeps the fastest of
a few passes. A reply that copies from a long input runs its passes after that input: on a CPU,
attention over the context makes a batched pass cost more there than a one-token pass does, and
a reply's passes take their typical time, not their fastest. A replay priced at the calibration
then overstates what copies gain. This script times, after DEPTH tokens of real text (a file's,
repeated to length), N passes of each calibrated size with every row's logits, as the loop asks
for them, each rolled back, and keeps their median. The output has the step-cost cache's format
(verify by size, draft, switch) plus the depth and the passes behind it.

    python benchmarks/scripts/depth_curve.py TARGET.gguf OUT.json [--depth 1536] [--passes 5]
        [--threads 2] [--text FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from specgen.llama.calibrate import SIZES
from specgen.llama.model import LoadOptions, Model


def context_tokens(target: Model, text: str, count: int) -> list[int]:
    """`count` tokens of `text` as the target reads it, the text repeated as often as it takes
    (none where the text has none)."""
    tokens = target.tokenize(text, False, False)
    return (tokens * (count // len(tokens) + 1))[:count] if tokens else []


def time_sizes(target: Model, tokens: list[int], depth: int, passes: int) -> dict[int, float]:
    """The median seconds of `passes` passes of each size in `SIZES` after the first `depth` of
    `tokens` (each pass over the tokens that follow them, every row's logits, rolled back after it)."""
    target.truncate(0)
    if depth:
        target.prefill(tokens[:depth])
    following, out = tokens[depth : depth + SIZES[-1]], {}
    for size in SIZES:
        seconds = []
        for _ in range(passes):
            start = time.perf_counter()
            target.forward(following[:size], all_logits=True)
            seconds.append(time.perf_counter() - start)
            target.truncate(depth)
        out[size] = statistics.median(seconds)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target")
    parser.add_argument("out", type=Path)
    parser.add_argument("--depth", type=int, default=1536, help="tokens of context before the passes (default 1536)")
    parser.add_argument("--passes", type=int, default=5, help="passes of each size, their median kept (default 5)")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: all cores)")
    parser.add_argument("--text", type=Path, default=Path(__file__), help="the context's text (default: this file)")
    args = parser.parse_args()
    if args.depth < 0 or args.passes < 1:
        parser.error(f"--depth {args.depth} --passes {args.passes}: want a depth of 0 or more and at least one pass")
    for path in (Path(args.target), args.text):
        if not path.is_file():
            parser.error(f"no such file: {path}")
    options = LoadOptions(n_ctx=args.depth + SIZES[-1] + 16, n_threads=args.threads, n_batch=max(512, SIZES[-1]))
    with Model(args.target, options) as target:
        tokens = context_tokens(target, args.text.read_text(), args.depth + SIZES[-1])
        if not tokens:
            parser.error(f"{args.text} has no text to fill the context with: give --text a file with some")
        verify = time_sizes(target, tokens, args.depth, args.passes)
    data = {"verify": verify, "draft": {}, "switch": 0.0, "depth": args.depth, "passes": args.passes}
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    print(" ".join(f"{size}: {1e3 * seconds:.1f} ms" for size, seconds in verify.items()), f"(depth {args.depth})")


if __name__ == "__main__":
    main()
