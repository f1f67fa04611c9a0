"""Per variant and curve: the geometric mean of auto's speedup over all replayed outputs, how many
are below 0.99x, the lowest, and auto's share of hindsight's gain on the grounded kinds (geometric
means over those outputs). `python frontier.py FOLDER ...` (folders run.sh wrote)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "2026-11-29-policy"))
from table import CURVES, GROUNDED, gmean, read


def row(folder: Path) -> str:
    data = read(folder)
    cells = []
    for curve in CURVES:
        every = [(a, b) for (c, group), outs in data.items() if c == curve for _, a, b in outs]
        grounded = [(a, b) for (c, group), outs in data.items() if c == curve and group in GROUNDED for _, a, b in outs]
        if not every:
            cells.append("")
            continue
        auto, best = gmean([a for a, _ in grounded]), gmean([b for _, b in grounded])
        lowest = min(a for a, _ in every)
        cells.append(
            f"{gmean([a for a, _ in every]):.3f}, {sum(a < 0.99 for a, _ in every)} < 0.99, "
            f"min {lowest:.2f}, grounded {(auto - 1) / (best - 1):.0%}"
        )
    return f"| {folder.name} | " + " | ".join(cells) + " |"


if __name__ == "__main__":
    print("| variant | " + " | ".join(CURVES) + " |")
    print("| --- |" + " --- |" * len(CURVES))
    for name in sys.argv[1:]:
        print(row(Path(name)))
