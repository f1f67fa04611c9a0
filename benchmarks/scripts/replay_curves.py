"""Auto's replay of recorded greedy outputs on chosen verify-cost curves, without the model.

Each output (the format of tests/copyreplay.py: prompt and output token ids, kind, and for JSON
replies `quoted` and the schema's `example`) goes through the real loop and auto policy against a
stand-in target that emits the recorded tokens, every pass priced by the curve; one line per curve
and output, then the curve's geometric mean. One script for what the results folders of
2026-11-26 (h100, json-structure, schema-example, schema-foresight) each replayed with a copy of
their own:

    python benchmarks/scripts/replay_curves.py OUTPUTS.json --vocab QWEN-0.5B.gguf \
        --curve epyc-2611 --curve gpu-sim --curve 'h100=1:.0025,2:.0027,4:.0034,8:.0037,64:.0074' \
        --add-ms 0.5 --example both

A curve is a name from tests/copyreplay.py (all of them by default) or NAME=SIZE:SECONDS,...;
`--add-ms MS` replays each curve also with MS added to every pass (Python work a round costs
that a curve of bare passes leaves out); `--example both` replays each output without and with
its schema's example document. `--vocab` (the recorded tokens' model) puts record patterns and
JSON-escaped copies in play.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from copyreplay import CURVES, geometric_mean, qwen_vocabulary, replay

from specgen.decoding.drafters.base import Vocabulary

Curve = tuple[str, dict[int, float]]  # a name and seconds of a pass by its tokens


def parse_curve(text: str) -> Curve:
    """NAME (one of copyreplay's curves) or NAME=SIZE:SECONDS,SIZE:SECONDS,..."""
    if "=" not in text:
        if text not in CURVES:
            names = ", ".join(CURVES)
            raise argparse.ArgumentTypeError(f"unknown curve {text!r}: name one of {names}, or give NAME=1:.065,...")
        return text, CURVES[text]
    name, points = text.split("=", 1)
    try:
        curve = {int(size): float(seconds) for size, seconds in (point.split(":") for point in points.split(","))}
    except ValueError:
        raise argparse.ArgumentTypeError(f"curve {text!r}: write NAME=SIZE:SECONDS,... (1:.065,2:.1)") from None
    if 1 not in curve:
        raise argparse.ArgumentTypeError(f"curve {name!r} needs the one-token pass (1:SECONDS)")
    return name, curve


def curves_to_run(chosen: list[Curve], added_ms: list[float]) -> list[Curve]:
    """Each chosen curve, then each again with every added delay."""
    out = []
    for name, curve in chosen:
        out.append((name, curve))
        out += [(f"{name}+{ms:g}ms", {n: s + ms / 1000 for n, s in curve.items()}) for ms in added_ms]
    return out


def replay_curve(
    name: str, curve: dict[int, float], outputs: dict[str, dict], vocabulary: Vocabulary | None, examples: list[str]
) -> None:
    """Print each output's speedup on `curve` per example mode, then their geometric means."""
    speedups: dict[str, list[float]] = {mode: [] for mode in examples}
    for output_name, r in outputs.items():
        cells = []
        for mode in examples:
            example = r.get("example", "") if mode == "with" else ""
            result = replay(
                output_name,
                r["kind"],
                r["prompt"],
                r["output"],
                curve,
                vocabulary,
                quoted=r.get("quoted", False) and vocabulary is not None,
                example=example,
            )
            speedups[mode].append(result.speedup)
            cells.append(f"{mode} example {result.speedup:.3f}")
        print(f"{name:14s} {output_name:18s} {'  '.join(cells)}", flush=True)
    means = "  ".join(f"{mode} example {geometric_mean(values):.3f}" for mode, values in speedups.items())
    print(f"{name:14s} {'geometric mean':18s} {means}  ({len(outputs)} outputs)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outputs", type=Path, nargs="+", help="recorded outputs (JSON, tests/copyreplay.py's format)")
    parser.add_argument("--vocab", type=Path, help="the model file whose vocabulary the recorded tokens are")
    parser.add_argument("--curve", type=parse_curve, action="append", help="NAME or NAME=SIZE:SECONDS,... (repeatable)")
    parser.add_argument(
        "--add-ms",
        type=float,
        action="append",
        default=[],
        help="also replay each curve with MS added to every pass (repeatable)",
    )
    parser.add_argument(
        "--example",
        choices=("with", "without", "both"),
        default="with",
        help="replay with the record's schema example, without it, or both (default with)",
    )
    args = parser.parse_args()
    vocabulary = qwen_vocabulary(args.vocab) if args.vocab else None
    examples = ["without", "with"] if args.example == "both" else [args.example]
    for path in args.outputs:
        outputs = json.loads(path.read_text())["outputs"]
        for name, curve in curves_to_run(args.curve or list(CURVES.items()), args.add_ms):
            replay_curve(name, curve, outputs, vocabulary, examples)


if __name__ == "__main__":
    main()
