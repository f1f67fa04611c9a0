"""What a reply may spend on drafts that do not pay: the two budgets the auto policy keeps.

The loss budget bounds what copies may lose against plain decoding. A copy of k tokens whose
first token the target refuses costs one pass over k + 1 tokens (and, where that size differs
from the pass before it and after it, the switch costs) for one token. Such a copy is drafted
where that loss is covered by what this reply's copies have already saved plus `RISK` of its
plain-decoding time so far, so that however its copies go a reply is never slower than plain
decoding by more than `RISK` of its time in the measured costs; or, where it is not, if by the
estimates of how many of its tokens will be kept the chance that it loses more than that is at
most `CHANCE` and its expected loss is covered (`overshoot`), while the reply's copies have not
lost on the whole: so a reply loses at most `RISK` of its plain time and one such copy's worst
case, however its copies go, even where the estimates are wrong. The second way lets a reply that
has reprinted its source for a while bet on a long copy before small copies have saved what the
worst case of a long one would cost: on a verify curve where a few tokens cost as much as as
many passes of one, small copies save almost nothing, and the reply would decode plainly for
hundreds of tokens first. Where such a bet failed, the reply drafts again within what is left of
its worst case, but only copies that by the estimates lose anything at most `CHANCE` of the time
(`resumes`): the bound stays the same, and the reply does not decode plainly, until its plain
time has grown over the loss, while its source goes on holding. Where a schema foresees the
reply's length, it may lose `FORESEEN_RISK` of that reply's plain time from the first round
(`foresee`), besides `RISK` of its own plain time so far: the two shares add, so a reply whose
first copies spent the foreseen share drafts again as its own share grows (were the foreseen
share the larger of the two instead, such a reply would decode plainly until its plain time had
outgrown the prediction's twice over: for the whole of a reply that follows it). The grammar
holds a schema's reply to the shape foreseen; nothing holds a reply to a user's prediction, and
a short answer beside a predicted file would otherwise be allowed to lose a share of the file's
time. So a prediction's share is counted on `FOLLOWED_LOAN` tokens of plain time for each token
the reply has followed it so far (at most the prediction's length: `foreseen_time`), and covers
the prediction's own copies only; an earlier identical request's reply, followed as a
prediction, is foreseen as a schema's. The text a prompt attached (a file, piped text, a fenced
block: `Source.ATTACHED`), followed as a prediction where the request gives none, is doubted
more: nobody said the reply would reprint it. Its allowance is counted only on the tokens the
reply has reprinted of it (those past the first few of each stretch it followed,
`Prediction.reprinted`), since an answer about it quotes names and signatures for a few tokens
at a time, which must not buy its copies; and it does not add to the reply's own share but
stands for it where larger (`adds`): `RISK` of the plain time of the reply it foresees, not of
that reply and the text besides. So a reply that reprints its attached text may spend its
share early, as if its plain time were already the text's, and loses at most `RISK` of the
longer of the two. Held
passes (`hold`) keep an account of their own: they may lose what they saved plus `HOLD_RISK` of
the reply's plain time, so that a stretch of them never spends what copies saved, and a reply
loses at most `RISK` + `HOLD_RISK` of its plain time (and `FORESEEN_RISK` of a foreseen
reply's) and one bet's worst case.

The look budget bounds the Python time spent weighing drafts (finding offers, pricing them,
learning from the round), which matters only where a pass is short: a reply weighs drafts
while that time stays within what drafted rounds saved plus `LOOK_SHARE` of its plain time (so
its first round, and on a machine where a look costs less than that share of a pass, every
round), and always in a reply a prediction or a schema foresees and after a round whose drafts
were kept (a copy grows as it pays). Rounds a reply always weighed whatever the cost (its
first ones, and those after a copy that only the loss budget held back) would spend, where a
look costs a tenth of a pass, several times the share in a reply that never drafts. Pure Python.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

RISK = 0.03  # the most of a reply's plain-decoding time that copies not yet paid for may lose
FORESEEN_RISK = 0.06  # the most of a foreseen reply's plain-decoding time (a prediction's, a schema's) copies may lose
LOOK_SHARE = 0.01  # the most of a reply's plain-decoding time that weighing drafts may take beyond what drafts saved
HOLD_RISK = 0.01  # the most of a reply's plain-decoding time that held passes (`hold`) may lose beyond what they saved
FOLLOWED_LOAN = 8  # tokens of a prediction whose plain time its allowance counts, per token the reply followed
CHANCE = 0.02  # the most chance that a copy whose worst case the budget cannot bear loses more than it can


@dataclass
class LossBudget:
    """Predicted seconds: what this reply's copies saved over plain decoding (< 0: lost), what
    plain decoding would have taken for its tokens, and for the reply a prediction or schema
    foresees."""

    risk: float = RISK
    saved: float = 0.0
    plain: float = 0.0
    foreseen: float = 0.0
    held: float = 0.0  # what held passes saved (< 0: lost), apart from copies
    # a prediction's reply: plain seconds of the tokens it has followed the prediction (None: a schema foresaw it)
    followed: float | None = None
    share: float = FORESEEN_RISK  # the most of the foreseen reply's plain time its copies may lose
    adds: bool = True  # whether it adds to `risk` of the reply's own plain time, or stands for it where larger
    bet: float = 0.0  # the worst case of the latest copy drafted as a bet (beyond what the reply could bear)

    def bears_hold(self, worst: float) -> bool:
        """Whether a held pass that loses at most `worst` seconds fits: within what held passes
        saved plus `HOLD_RISK` of the reply's plain time (none where `risk` is infinite)."""
        return math.isinf(self.risk) or worst <= self.held + HOLD_RISK * self.plain

    def bearable(self, foreseen: bool = True) -> float:
        """The most predicted seconds a round may lose now: what copies saved, plus `risk` of the
        reply's plain time, plus (`foreseen`: for a copy the foresight covers) `share` of the
        foreseen reply's (`foreseen_time`), or the larger of the two where it does not `adds`;
        without limit where `risk` is infinite (no budget), even before the reply has plain time."""
        if math.isinf(self.risk):
            return math.inf
        own, allowed = self.risk * self.plain, self.share * self.foreseen_time() if foreseen else 0.0
        return self.saved + (own + allowed if self.adds else max(own, allowed))

    def foreseen_time(self) -> float:
        """The plain time of the foreseen reply the allowance is counted on: a schema's whole (its
        grammar holds the reply to the shape foreseen); of a prediction's, `FOLLOWED_LOAN` tokens'
        for each token the reply followed it, at most the whole, so that a reply that does not
        follow its prediction (a short answer beside a file) is not allowed to lose a share of
        the file's time."""
        if self.followed is None:
            return self.foreseen
        return min(self.foreseen, FOLLOWED_LOAN * self.followed)

    def bears(self, worst: float) -> bool:
        """Whether a round that loses at most `worst` seconds against plain decoding fits."""
        return worst <= self.bearable()

    def bears_copy(
        self, worst: float, step: float, reach: list[float], sums: list[float], k: int, bearable: float
    ) -> bool:
        """Whether a copy of k tokens fits: its `worst` loss (its first token refused; each token
        kept takes `step` off it) within `bearable`, what the reply can bear now (`bearable()`,
        passed in so that an offer's lengths read it once), or the chance that it loses more at
        most `CHANCE` and its expected loss within it (`overshoot`; `reach`: the chance that at
        least j of the offer's tokens are kept; `sums`: `reach_sums(reach)`)."""
        if worst <= bearable:
            return True
        if worst > 0.0 and 1.0 - reach[0] > CHANCE:  # its first token alone may be refused more often
            return False
        if self.saved < 0.0:  # copies have lost so far (a bet among them may have failed): no more bets
            return self.resumes(worst, step, bearable, reach, sums, k)
        over, expected = overshoot(worst, step, bearable, reach, sums, k)
        return over <= CHANCE and expected <= bearable

    def is_bet(self, worst: float, foreseen: bool = True) -> bool:
        """Whether a copy that loses at most `worst` and fits (`bears_copy`) is a bet: a copy
        whose worst case is more than the reply can bear, drafted while its copies have not lost."""
        return self.saved >= 0.0 and worst > self.bearable(foreseen)

    def resumes(
        self, worst: float, step: float, bearable: float, reach: list[float], sums: list[float], k: int
    ) -> bool:
        """Whether a reply whose copies have lost (a bet failed) may draft a copy: within what is
        left of the latest bet's worst case beyond the budget (so the reply still loses at most
        `RISK` of its plain time and one bet's worst case), and only one that by the estimates
        loses anything at most `CHANCE` of the time. Otherwise a reply whose bet failed early would
        decode plainly until its plain time had grown to cover the loss, however well its source
        held after it. Arguments as `bears_copy`'s."""
        return worst <= bearable + self.bet and overshoot(worst, step, 0.0, reach, sums, k)[0] <= CHANCE


@dataclass
class LookBudget:
    """Measured seconds spent weighing drafts, against predicted seconds drafts saved."""

    looked: float = 0.0  # measured seconds this reply spent weighing drafts and learning from rounds
    earned: float = 0.0  # predicted seconds this reply's drafted rounds (copies and the model) saved
    weighed: int = 0  # rounds that weighed drafts
    kept_last: bool = False  # whether the last weighed round drafted tokens the target kept

    def worth_looking(self, foreseen: bool, plain: float) -> bool:
        """Whether to weigh drafts this round (see the module docstring); `plain`: the reply's
        plain-decoding seconds so far."""
        if foreseen or self.kept_last:
            return True
        return self.looked <= max(self.earned, 0.0) + LOOK_SHARE * plain

    def weighed_round(self, looked: float, earned: float, kept: bool) -> None:
        """A round that weighed drafts: its weighing time, what it saved, what it showed."""
        self.looked += looked
        self.earned += earned
        self.weighed += 1
        self.kept_last = kept


def reach_sums(reach: list[float]) -> list[float]:
    """sums[n]: the chances that at least j tokens are kept, summed over j = 1..n-1 (sums[0] = sums[1] = 0)."""
    sums = [0.0, 0.0]
    for chance in reach:
        sums.append(sums[-1] + chance)
    return sums


def overshoot(
    worst: float, step: float, bearable: float, reach: list[float], sums: list[float], k: int
) -> tuple[float, float]:
    """For a copy of the first k tokens of an offer that loses `worst` seconds if none is kept and `step`
    less for each token kept (the plain pass it saves), where at least j are kept with chance
    reach[j - 1]: the chance that it loses more than `bearable`, and the loss it is expected to
    make (gains count as none); `sums`: `reach_sums(reach)`. With r(j) that chance for j
    (r(0) = 1, r(k + 1) = 0), J kept
    tokens lose worst - J step: more than `bearable` while J < ceil((worst - bearable) / step),
    anything while J < j0 = ceil(worst / step); and the expected loss, the sum over j < j0 of
    P(J = j) (worst - j step), telescopes to worst (1 - r(j0)) - step (r(1) + ... + r(j0 - 1) - (j0 - 1) r(j0))."""

    def kept(j: int) -> float:
        return 1.0 if j <= 0 else reach[j - 1] if j <= k else 0.0

    over = 1.0 - kept(min(max(math.ceil((worst - bearable) / step), 0), k + 1)) if worst > bearable else 0.0
    j0 = min(max(math.ceil(worst / step), 0), k + 1)
    expected = worst * (1.0 - kept(j0)) - step * (sums[j0] - (j0 - 1) * kept(j0)) if j0 > 0 else 0.0
    return over, max(expected, 0.0)
