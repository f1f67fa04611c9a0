"""Tables auto against hindsight by kind of output and curve, from the text files `run.sh` wrote
(tests/copyreplay.py --oracle's lines). Reads text only: `python table.py baseline [after]`."""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

LINE = re.compile(r"^(\S+)\s+(\S+)\s+auto\s+([\d.]+)x\s+hindsight\s+([\d.]+)x\s+share\s+\S+\s+\((\d+) tokens\)")
GROUPS = {  # kind of output -> the kind; the first seven are the grounded kinds
    "edits": ("edit", "final-rename", "final-bugfix", "stdlib"),
    "reformats": ("reformat", "final-reformat", "final-yaml-toml", "city-table", "env-yaml", "log-table", "sql-csv",
                  "team-json", "md-dict"),
    "extraction": ("extract",),
    "summaries": ("summarize", "summarization"),
    "RAG": ("rag",),
    "revisions": ("revise", "chat-revise"),
    "JSON": ("json", "tools"),
    "code": ("code",), "prose": ("prose",), "chat": ("chat",), "translation": ("translation",), "QA": ("qa",),
    "math": ("math",),
}
GROUNDED = ("edits", "reformats", "extraction", "summaries", "RAG", "revisions", "JSON")


SPECIAL = {"late-edit": "edit", "late-reformat": "reformat", "chat-revise": "chat-revise"}


def group_of(name: str) -> str:
    """An output's kind from its name: `kind:n`, `kind-label` (Spec-Bench, JSON, reformats) or a special name."""
    base = name.split(":")[0]
    kind = SPECIAL.get(base, base if base in sum(GROUPS.values(), ()) else base.split("-")[0])
    return next(g for g, kinds in GROUPS.items() if kind in kinds)


def read(folder: Path) -> dict[tuple[str, str], list[tuple[str, float, float]]]:
    """(curve, group) -> [(output, auto, hindsight)]; a recording's outputs keep its file's name."""
    out: dict[tuple[str, str], list[tuple[str, float, float]]] = {}
    for path in sorted(folder.glob("*.txt")):
        for line in path.read_text().splitlines():
            m = LINE.match(line)
            if m:
                curve, name, auto, best = m.group(1), m.group(2), float(m.group(3)), float(m.group(4))
                out.setdefault((curve, group_of(name)), []).append((f"{path.stem}/{name}", auto, best))
    return out


def gmean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def share(auto: float, best: float) -> float:
    return (auto - 1) / (best - 1) if best > 1 else 1.0


def table(data: dict) -> str:
    """The curves are those the files hold, in the order copyreplay.py replays them."""
    curves = list(dict.fromkeys(curve for curve, _ in data))
    rows = ["| kind (outputs) | " + " | ".join(curves) + " |", "| --- |" + " --- |" * len(curves)]
    for group in GROUPS:
        cells = []
        for curve in curves:
            found = data.get((curve, group), [])
            if not found:
                cells.append("")
                continue
            auto, best = gmean([a for _, a, _ in found]), gmean([b for _, _, b in found])
            cells.append(f"{auto:.2f} / {best:.2f} ({share(auto, best):.0%})")
        count = len(data.get((curves[0], group), []))
        label = f"**{group}**" if group in GROUNDED else group
        rows.append(f"| {label} ({count}) | " + " | ".join(cells) + " |")
    lows = []
    for curve in curves:
        every = [(a, n) for (c, _), found in data.items() if c == curve for n, a, _ in found]
        low = min(every, default=None)  # a folder replayed before the curve was added has none
        lows.append(f"{low[0]:.2f} ({low[1]})" if low else "")
    rows.append("| lowest output | " + " | ".join(lows) + " |")
    return "\n".join(rows)


def main() -> None:
    for folder in sys.argv[1:]:
        print(f"## {folder}: auto / hindsight (share of hindsight's gain), geometric means\n")
        print(table(read(Path(folder))))
        print()


if __name__ == "__main__":
    main()
