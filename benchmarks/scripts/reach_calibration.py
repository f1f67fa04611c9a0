"""Whether auto's copy estimates are calibrated: each offer's predicted chance that at least j of
its tokens are kept, set against how often the output then kept them.

The policy drafts a copy of the length its estimates price best, so where they are low for copies
that hold (or high for copies that break) it drafts too short (or too long), whatever the pricing.
This replays recorded greedy outputs through the real loop and auto policy (tests/copyreplay.py)
on one curve and, for every offer the policy priced (in rounds that drafted it or not), takes its
reach at j = 1, 2, 4, ... 48 and whether the output's next j tokens were the offer's. Rows: the
kind of output, grounded (the output reprints what it was given: edits, reformats, extraction,
summaries, RAG, revisions, JSON, by the recorded kind's name) or other, and j; columns: bins of
the prediction, each with its mean prediction, the share kept and the count. A calibrated
estimate reads the same in both.

With `--confidences FILE` (benchmarks/scripts/target_confidences.py's) each group is split by how
sure the target was of the token written just before the offer: "sure" where its probability was
at least `--sure` (0.99), else "unsure". Evidence that tells offers that hold from offers that
break apart shows as different shares kept at the same prediction.

    python benchmarks/scripts/reach_calibration.py OUTPUTS.json ... [--curve NAME] [--vocab MODEL.gguf]
        [--confidences FILE [--sure P]]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from copyreplay import Replay, default_policy, named_costs, qwen_vocabulary, replay

from specgen.decoding.copy_rates import CopyEvidence
from specgen.decoding.costs import StepCosts
from specgen.decoding.policy import Choice, Outcome, Policy
from specgen.decoding.tokens import common_prefix

JS = (1, 2, 4, 8, 16, 32, 48)
BINS = 5  # of the predicted chance: 0-0.2, ..., 0.8-1
GROUNDED = (
    "edit",
    "rename",
    "bugfix",
    "reformat",
    "extract",
    "summar",
    "rag",
    "revise",
    "json",
    "tools",
    "yaml",
    "table",
    "csv",
    "dict",
)


class Recording(Policy):
    """The auto policy, noting each priced offer's output position, tokens and reach."""

    def __init__(self, costs: StepCosts):
        super().__init__(costs, 8, timed=False)
        self.position = 1  # output tokens emitted before this round (the prefill gives the first)
        self.priced: list[tuple[int, tuple[int, ...], list[float]]] = []

    def choose(
        self, room: int, lookup: int, lag: int, evidence: CopyEvidence | None = None, offer: tuple[int, ...] = ()
    ) -> Choice:
        if evidence is not None and offer:
            self.priced.append((self.position, offer, self.copy_reach(evidence, offer[: min(lookup, room, 64)])))
        return super().choose(room, lookup, lag, evidence, offer)

    def observe(self, outcome: Outcome) -> None:
        super().observe(outcome)
        self.position += outcome.accepted + 1

    def decoded_plainly(self, outcome: Outcome) -> None:
        super().decoded_plainly(outcome)
        self.position += outcome.accepted + 1


def recordings(files: list[Path]) -> Iterator[tuple[str, dict, str]]:
    """Each recorded output of `files`: its name, its record, and its group (grounded or other)."""
    for _, name, record, group in sourced_recordings(files):
        yield name, record, group


def sourced_recordings(files: list[Path]) -> Iterator[tuple[Path, str, dict, str]]:
    """`recordings`, each with the file it is in."""
    for path in files:
        for name, record in json.loads(path.read_text())["outputs"].items():
            yield path, name, record, "grounded" if any(word in record["kind"] for word in GROUNDED) else "other"


def replayed(
    name: str, record: dict, costs: StepCosts, vocabulary, policy: Callable[[StepCosts], Policy] = default_policy
) -> Replay:
    """`record` replayed through the loop and `policy` on `costs` (copyreplay.replay)."""
    quoted, example = record.get("quoted", False), record.get("example", "")
    prompt, output = record["prompt"], record["output"]
    return replay(
        name, record["kind"], prompt, output, costs, vocabulary, quoted=quoted, example=example, policy=policy
    )


def tally(
    files: list[Path], curve: str, vocabulary, confidences: dict | None = None, sure: float = 0.99
) -> dict[tuple[str, int, int], list[float]]:
    """(group, j, bin) -> [sum of predictions, number kept, count], over every priced offer; with
    `confidences` (target_confidences.py's), each group split by the target's probability of the
    token written before the offer (", sure" at least `sure`, ", unsure" below)."""
    cells: dict[tuple[str, int, int], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for path, name, record, group in sourced_recordings(files):
        sureness = None if confidences is None else [top for top, _ in confidences[str(path)][name]]
        policies: list[Recording] = []

        def made(costs: StepCosts, policies: list[Recording] = policies) -> Recording:
            policies.append(Recording(costs))
            return policies[-1]

        result = replayed(name, record, named_costs(curve), vocabulary, made)
        for position, offer, reach in policies[0].priced:
            rest = result.emitted[position:]
            kept = common_prefix(offer, rest)
            split = group if sureness is None else f"{group}, {'sure' if sureness[position - 1] >= sure else 'unsure'}"
            for j in JS:
                if j <= len(reach) and j <= len(rest):
                    cell = cells[(split, j, min(int(reach[j - 1] * BINS), BINS - 1))]
                    cell[0] += reach[j - 1]
                    cell[1] += kept >= j
                    cell[2] += 1
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outputs", nargs="+", type=Path)
    parser.add_argument("--curve", default="epyc-2611")
    parser.add_argument("--vocab", type=Path, default=None, help="the recorded tokens' GGUF (record patterns)")
    parser.add_argument("--confidences", type=Path, default=None, help="target_confidences.py's file: split by it")
    parser.add_argument("--sure", type=float, default=0.99, help="the probability from which the target is sure")
    args = parser.parse_args()
    for path in [*args.outputs, *(p for p in (args.vocab, args.confidences) if p is not None)]:
        if not path.is_file():
            parser.error(f"no such file: {path}")
    vocabulary = qwen_vocabulary(args.vocab) if args.vocab else None
    confidences = json.loads(args.confidences.read_text()) if args.confidences else None
    missing = [str(path) for path in args.outputs if confidences is not None and str(path) not in confidences]
    if missing:
        parser.error(f"{args.confidences} has no confidences of {missing[0]}: run target_confidences.py on it")
    cells = tally(args.outputs, args.curve, vocabulary, confidences, args.sure)
    print(f"predicted P(kept >= j) / share kept (offers), by bin of the prediction; curve {args.curve}")
    splits = ("",) if confidences is None else (", sure", ", unsure")
    for group in (f"{kind}{split}" for kind in ("grounded", "other") for split in splits):
        print(f"{group}:")
        for j in JS:
            columns = []
            for b in range(BINS):
                predicted, kept, count = cells.get((group, j, b), (0.0, 0.0, 0.0))
                columns.append(f"{predicted / count:.2f}/{kept / count:.2f} ({int(count):4d})" if count else " " * 16)
            print(f"  j={j:2d}  " + "  ".join(columns))


if __name__ == "__main__":
    main()
