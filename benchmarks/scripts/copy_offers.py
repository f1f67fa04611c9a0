"""Every copy offer of a replay, with what was known of it and whether its first token was kept.

How likely a copy is to hold decides whether it pays; this prints, for recorded greedy outputs
replayed through the real loop and auto policy (tests/copyreplay.py), the share of offers whose
first token the target then emitted, by the match behind the offer and by how the source's other
occurrences of the context went on (all agreeing on the offered token, split, or a single one).

    python benchmarks/scripts/copy_offers.py OUTPUTS.json ... [--vocab MODEL.gguf]
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from copyreplay import CURVES, RecordedTarget, qwen_vocabulary

from specgen.decoding import auto
from specgen.decoding.costs import StepCosts
from specgen.decoding.drafters.base import Source
from specgen.decoding.drafters.lookup import Copier
from specgen.decoding.loop import GenerationConfig, generate
from specgen.decoding.policy import Policy

BINS = (1, 2, 3, 4, 6, 8, 16)


def offers(path: Path, vocabulary) -> list[tuple[int, str, bool]]:
    """(match, agreement, first token kept) for every offer the copier made while replaying."""
    rows = []
    for record in json.loads(path.read_text())["outputs"].values():
        costs = StepCosts(CURVES["xeon-vm"], {})
        target = RecordedTarget(record["prompt"], record["output"], costs)
        drafter = auto.AutoDrafter(None, Policy(costs, 8, timed=False), vocabulary=vocabulary)
        truth, start = record["output"], len(record["prompt"])
        copier = next(source for source in drafter.sources if isinstance(source, Copier))
        offer = copier.offer

        def seen(history, last, k, offer=offer, truth=truth, start=start):
            made = offer(history, last, k)
            at = len(history) + 1 - start
            if made.tokens and at < len(truth):
                known = auto.evidence(made.branch, Source.TEXT)
                rows.append((known.match, known.agreement, made.tokens[0] == truth[at]))
            return made

        copier.offer = seen  # type: ignore[method-assign]  # tallies each offer, then makes it
        for _ in generate(target, drafter, record["prompt"], GenerationConfig(max_tokens=len(truth), draft_tokens=8)):
            pass
    return rows


def main() -> None:
    args = sys.argv[1:]
    vocabulary = None
    if "--vocab" in args:
        at = args.index("--vocab")
        vocabulary = qwen_vocabulary(Path(args[at + 1]))
        del args[at : at + 2]
    rows = [row for name in args for row in offers(Path(name), vocabulary)]
    cells: dict[tuple[int, str], list[int]] = collections.defaultdict(lambda: [0, 0])
    for match, agreement, kept in rows:
        low = max(b for b in BINS if b <= match)
        for key in ((low, agreement), (low, "all")):
            cells[key][0] += kept
            cells[key][1] += 1
    print("match  " + "  ".join(f"{a:>14s}" for a in ("all", "single", "agree", "split")))
    for low in BINS:
        line = "  ".join(
            f"{cells[low, a][0] / cells[low, a][1]:.2f} of {cells[low, a][1]:5d}" if cells[low, a][1] else f"{'-':>14s}"
            for a in ("all", "single", "agree", "split")
        )
        print(f"{low:>4d}+  {line}")


if __name__ == "__main__":
    main()
