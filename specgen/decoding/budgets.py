"""What a reply may spend on drafts that do not pay: the two budgets the auto policy keeps.

The loss budget bounds what copies may lose against plain decoding. A copy of k tokens whose
first token the target refuses costs one pass over k + 1 tokens (and, where that size differs
from the pass before it and after it, the switch costs) for one token. Such a copy is drafted
only where that loss is covered by what this reply's copies have already saved plus `RISK` of
its plain-decoding time so far, so a reply is never slower than plain decoding by more than
`RISK` of its time in the measured costs, however its copies go. Where a prediction or a
schema foresees the reply's length, it may lose `FORESEEN_RISK` of that reply's plain time from
the first round (`foresee`).

The look budget bounds the Python time spent weighing drafts (finding offers, pricing them,
learning from the round), which matters only where a pass is short: a reply weighs drafts
while that time stays within what drafted rounds saved plus `LOOK_SHARE` of its plain time,
and always in its first `FIRST_LOOKS` rounds, in a reply a prediction or a schema foresees,
after a round whose drafts were kept (a copy grows as it pays) and after one whose copy only
the loss budget held back (it is drafted once the reply can bear its loss). Pure Python.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

RISK = 0.03  # the most of a reply's plain-decoding time that copies not yet paid for may lose
FORESEEN_RISK = 0.06  # the most of a foreseen reply's plain-decoding time (a prediction's, a schema's) copies may lose
LOOK_SHARE = 0.01  # the most of a reply's plain-decoding time that weighing drafts may take beyond what drafts saved
FIRST_LOOKS = 16  # rounds a reply always weighs, so that one that opens by reprinting its source finds its first copy


@dataclass
class LossBudget:
    """Predicted seconds: what this reply's copies saved over plain decoding (< 0: lost), what
    plain decoding would have taken for its tokens, and for the reply a prediction or schema
    foresees."""

    risk: float = RISK
    saved: float = 0.0
    plain: float = 0.0
    foreseen: float = 0.0

    def bearable(self) -> float:
        """The most predicted seconds a round may lose now: what copies saved, plus `risk` of the
        reply's plain time (or, while that is less, `FORESEEN_RISK` of the foreseen reply's);
        without limit where `risk` is infinite (no budget), even before the reply has plain time."""
        if math.isinf(self.risk):
            return math.inf
        return self.saved + max(self.risk * self.plain, FORESEEN_RISK * self.foreseen)

    def bears(self, worst: float) -> bool:
        """Whether a round that loses at most `worst` seconds against plain decoding fits."""
        return worst <= self.bearable()


@dataclass
class LookBudget:
    """Measured seconds spent weighing drafts, against predicted seconds drafts saved."""

    looked: float = 0.0  # measured seconds this reply spent weighing drafts and learning from rounds
    earned: float = 0.0  # predicted seconds this reply's drafted rounds (copies and the model) saved
    weighed: int = 0  # rounds that weighed drafts
    kept_last: bool = False  # whether the last weighed round drafted tokens the target kept
    held_back: bool = False  # whether the last weighed round's copy would have paid but for the loss budget

    def worth_looking(self, foreseen: bool, plain: float) -> bool:
        """Whether to weigh drafts this round (see the module docstring); `plain`: the reply's
        plain-decoding seconds so far."""
        if self.weighed < FIRST_LOOKS or foreseen or self.kept_last or self.held_back:
            return True
        return self.looked <= max(self.earned, 0.0) + LOOK_SHARE * plain

    def weighed_round(self, looked: float, earned: float, kept: bool, held_back: bool) -> None:
        """A round that weighed drafts: its weighing time, what it saved, what it showed."""
        self.looked += looked
        self.earned += earned
        self.weighed += 1
        self.kept_last, self.held_back = kept, held_back
