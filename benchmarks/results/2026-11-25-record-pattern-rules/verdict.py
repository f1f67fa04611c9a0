"""Per rule, the never-tuned prompts it helps and harms in a variants.py output: the full
pattern against the full pattern without the rule, and the core with the rule against the core,
on every curve. A change of 2% or less either way counts as noise.

    python verdict.py replays-all-rules.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

NOISE = 0.02
RULES = {  # rule: (variant without it, variant with it, what each is compared with)
    "field place": ("full - field place", "core + field place", "core"),
    "leading spaces": ("full - leading spaces", "core + leading spaces", "core"),
    "shape": ("full - shape", "core + shape", "core"),
    "keywords": ("full - keywords", None, None),
    "sentence end": ("full - sentence end", None, None),
    "padding": ("full - padding", "core + padding", "core"),
    "gap fallback": ("full - gap fallback", "core + shape, gap fallback", "core + shape"),
}


def changes(replays: dict, better: str, worse: str, curve: str) -> tuple[list[str], list[str]]:
    """The never-tuned prompts where `better` beats `worse` by more than the noise, and those
    where it loses by more."""
    helped, harmed = [], []
    for name, replay in replays.items():
        if not name.startswith("heldout-outputs"):
            continue
        speeds = replay["speedup"][curve]
        ratio = speeds[better] / speeds[worse]
        label = f"{name.split('/')[1].removeprefix('reformat-').removesuffix(':1')} {ratio - 1:+.0%}"
        if ratio > 1 + NOISE:
            helped.append(label)
        elif ratio < 1 - NOISE:
            harmed.append(label)
    return helped, harmed


def main() -> None:
    replays = json.loads(Path(sys.argv[1]).read_text())["replays"]
    curves = list(next(iter(replays.values()))["speedup"])
    print("| rule | comparison | curve | helps (never tuned on) | harms (never tuned on) |")
    print("|---|---|---|---|---|")
    for rule, (without, alone, base) in RULES.items():
        pairs = [("full against " + without, "full", without)]
        if alone:
            pairs.append((f"{alone} against {base}", alone, base))
        for label, better, worse in pairs:
            for curve in curves:
                helped, harmed = changes(replays, better, worse, curve)
                print(f"| {rule} | {label} | {curve} | {', '.join(helped) or '-'} | {', '.join(harmed) or '-'} |")


if __name__ == "__main__":
    main()
