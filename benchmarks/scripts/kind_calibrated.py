"""Would estimates calibrated by kind of output make auto faster? Replays each recorded output twice
on one curve: with auto as it is, and with every copy reach it prices mapped through the
calibration cells of the output's own kind (reach_calibration.py's table, interpolated between
its cells and its lengths). The output's kind is known there, which no real estimator knows;
with a table made from the same outputs this bounds what calibration by kind can give. Prints
geometric means by kind, with the hindsight reference over both runs' offers.

    python benchmarks/scripts/reach_calibration.py OUTPUTS.json ... --curve C --vocab V.gguf > CAL.txt
    python benchmarks/scripts/kind_calibrated.py CAL.txt OUTPUTS.json ... --curve C --vocab V.gguf
"""

from __future__ import annotations

import argparse
import itertools
import math
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import copyreplay as cr
from reach_calibration import JS, recordings, replayed

from specgen.decoding.copy_rates import CopyEvidence
from specgen.decoding.costs import StepCosts
from specgen.decoding.policy import Policy

Table = dict[str, dict[int, list[tuple[float, float]]]]  # kind -> j -> (mean prediction, share kept), sorted


def read_table(path: Path) -> Table:
    """reach_calibration.py's cells of at least 30 offers, with (0, 0) and (1, 1) at the ends."""
    table: Table = {}
    kind = ""
    for line in path.read_text().splitlines():
        if line in ("grounded:", "other:"):
            kind = line[:-1]
        elif found := re.match(r"\s+j=\s*(\d+)\s+(.*)", line):
            cells = re.findall(r"([\d.]+)/([\d.]+) \( *(\d+)\)", found[2])
            points = sorted((float(p), float(k)) for p, k, n in cells if int(n) >= 30)
            table.setdefault(kind, {})[int(found[1])] = [(0.0, 0.0), *points, (1.0, 1.0)]
    return table


def interpolate(points: list[tuple[float, float]], x: float) -> float:
    for (x0, y0), (x1, y1) in itertools.pairwise(points):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0) if x1 > x0 else y1
    return points[-1][1]


def calibrated(table: Table, kind: str, j: int, chance: float) -> float:
    """`chance` of keeping j tokens mapped through the kind's cells, between the two nearest lengths."""
    low, high = max(x for x in JS if x <= min(j, 48)), min(x for x in JS if x >= min(j, 48))
    at_low, at_high = interpolate(table[kind][low], chance), interpolate(table[kind][high], chance)
    if high == low:
        return at_low
    share = (math.log(j) - math.log(low)) / (math.log(high) - math.log(low))
    return at_low + (at_high - at_low) * share


class KindCalibrated(Policy):
    """auto's policy, pricing each copy by its reach mapped through the output's kind's cells."""

    def __init__(self, costs: StepCosts, table: Table, kind: str):
        super().__init__(costs, 8, timed=False)
        self.table, self.kind = table, kind

    def copy_reach(self, evidence: CopyEvidence | None, offer: tuple[int, ...]) -> list[float]:
        out, last = [], 1.0
        for j, chance in enumerate(super().copy_reach(evidence, offer), 1):
            last = min(calibrated(self.table, self.kind, j, chance), last)  # still falling with j
            out.append(last)
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("table", type=Path, help="reach_calibration.py's output")
    parser.add_argument("outputs", nargs="+", type=Path)
    parser.add_argument("--curve", default="epyc-2611")
    parser.add_argument("--vocab", type=Path, default=None, help="the recorded tokens' GGUF (record patterns)")
    args = parser.parse_args()
    table, curve = read_table(args.table), args.curve
    vocabulary = cr.qwen_vocabulary(args.vocab) if args.vocab else None
    costs = cr.named_costs(curve)
    results: dict[str, list[tuple[float, float, float]]] = {"grounded": [], "other": []}
    for name, r, kind in recordings(args.outputs):
        auto = replayed(name, r, costs, vocabulary)
        mapped = replayed(name, r, costs, vocabulary, lambda c, kind=kind: KindCalibrated(c, table, kind))
        seen: dict[int, list] = {}
        for offers in (auto.offers, mapped.offers):
            for at, made in offers.items():
                seen.setdefault(at, []).extend(made)
        shape = {"quoted": r.get("quoted", False), "example": r.get("example", "")}
        best = cr.hindsight(r["prompt"], r["output"], costs, vocabulary, seen=seen, **shape)
        results[kind].append((auto.speedup, mapped.speedup, best))
    for kind, rows in results.items():
        if not rows:
            continue
        a, m, h = (math.exp(sum(math.log(row[i]) for row in rows) / len(rows)) for i in range(3))
        print(
            f"{curve} {kind:8s} n={len(rows):3d} auto {a:.3f} ({(a - 1) / (h - 1):.0%})  "
            f"kind-calibrated {m:.3f} ({(m - 1) / (h - 1):.0%})  hindsight {h:.3f}  "
            f"lowest auto {min(row[0] for row in rows):.2f} kind-calibrated {min(row[1] for row in rows):.2f}"
        )


if __name__ == "__main__":
    main()
