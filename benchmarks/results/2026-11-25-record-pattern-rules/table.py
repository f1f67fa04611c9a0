"""Markdown tables of a variants.py output: speedup over plain decoding per prompt and variant on
one cost curve, then the geometric mean of each group of prompts (never tuned on, seen while the
pattern was built, tuned on) on every curve.

    python table.py replays.json [CURVE] [VARIANT ...]
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

GROUPS = ("never tuned on", "seen while building", "tuned on")


def group(name: str) -> str:
    """The group of a replay, by the file it was recorded in: heldout-outputs*.json (this
    folder), seen-outputs.json (this folder), or the recorded outputs the replay had before."""
    stem = name.split("/")[0]
    if stem.startswith("heldout-outputs"):
        return GROUPS[0]
    return GROUPS[1] if stem == "seen-outputs" else GROUPS[2]


def geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main() -> None:
    data = json.loads(Path(sys.argv[1]).read_text())
    curve = sys.argv[2] if len(sys.argv) > 2 else "xeon-vm"
    variants = sys.argv[3:] or data["variants"]
    replays = data["replays"]
    print(f"Speedup over plain decoding, `{curve}` curve\n")
    print("| prompt | group | " + " | ".join(variants) + " |")
    print("|---|---|" + "---:|" * len(variants))
    for name, replay in replays.items():
        speeds = replay["speedup"][curve]
        print(f"| {name} | {group(name)} | " + " | ".join(f"{speeds[v]:.2f}" for v in variants) + " |")
    print("\nGeometric means\n")
    print("| curve | group | prompts | " + " | ".join(variants) + " |")
    print("|---|---|---:|" + "---:|" * len(variants))
    curves = next(iter(replays.values()))["speedup"]
    for each in curves:
        for label in GROUPS:
            names = [name for name in replays if group(name) == label]
            if names:
                means = [geometric_mean([replays[n]["speedup"][each][v] for n in names]) for v in variants]
                print(f"| {each} | {label} | {len(names)} | " + " | ".join(f"{m:.3f}" for m in means) + " |")


if __name__ == "__main__":
    main()
