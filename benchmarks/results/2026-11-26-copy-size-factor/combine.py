"""The nine prompts' speedups of this folder's live runs, each prompt benched on its own (this
commit and 0eca9e3, one after the other), pooled as `specgen bench` pools prompts of one run:
the ratio of median rates over repeats, with bench's bootstrap interval over prompts and repeats;
the six held-out prompts and the three new ones also apart. Run from the repository root:

    python benchmarks/results/2026-11-26-copy-size-factor/combine.py
"""

import json
import statistics
from pathlib import Path
from types import SimpleNamespace

from specgen.bench.stats import _rates_by_repeat, speedup_interval

R = Path("benchmarks/results/2026-11-26-copy-size-factor")
HELDOUT = ("library", "csv", "meals", "fleet", "courses", "orders")
NEW = ("bridges", "patients", "sensors")
NAMES = HELDOUT + NEW


def runs(tree: str, config: str, names=NAMES) -> list[SimpleNamespace]:
    found = []
    for name in names:
        for run in json.loads((R / f"live-{tree}-{name}.json").read_text())["runs"]:
            if run["config"] == config:
                summary = SimpleNamespace(tokens=run["tokens"], decode_s=run["decode_s"])
                found.append(SimpleNamespace(prompt=name, repeat=run["repeat"], summary=summary))
    return found


def speedup(tree: str, names=NAMES) -> str:
    auto, plain = runs(tree, "draft-auto", names), runs(tree, "target", names)
    ratio = statistics.median(_rates_by_repeat(auto)) / statistics.median(_rates_by_repeat(plain))
    interval = speedup_interval(auto, plain)
    low, high = (interval.low, interval.high) if interval else (float("nan"),) * 2
    return f"{ratio:.2f}× ({low:.2f}–{high:.2f}), plain {statistics.median(_rates_by_repeat(plain)):.1f} tok/s"


done = [n for n in NAMES if all((R / f"live-{t}-{n}.json").exists() for t in ("new", "old"))]
for name in done:
    print(f"json-{name:8s} new {speedup('new', [name])}   old {speedup('old', [name])}")
for label, group in (("held-out", HELDOUT), ("new", NEW), ("all", NAMES)):
    names = [n for n in group if n in done]
    if names:
        print(f"{label + ' ' + str(len(names)):13s} new {speedup('new', names)}   old {speedup('old', names)}")
