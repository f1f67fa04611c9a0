"""Holding the target's pass at two tokens where changing its size costs: the auto policy's
choice between one-token passes and a one-token draft every round.

Where a pass of another size than the last costs a switch (a GPU's captured graphs, one per
size, `StepCosts.switch`), a pass of two tokens costs little more than one of one, and the
switch into it and back costs more than both: a one-token copy priced round by round pays for
itself only where its token is nearly sure to be kept, though the same draft made every round
pays wherever the output keeps one in a dozen of them. So the choice is made for a stretch of
rounds, not one: the output's recent rounds tell how often a one-token draft of the best copy
offer would have been kept (`HoldRate`, judged every round whatever was drafted: the offer's
first token against the token the target then emitted, none where there was no offer), and
the pass is held at two tokens while at that rate a stretch of `STAY` such rounds saves more
than the switches it costs (`worth_holding`). A held round with no offer drafts a filler token,
verified as any draft is, so it changes nothing in the output.

Only where two switches cost more than the extra of a two-token pass over a one-token one: else
a round without an offer is cheaper left and entered again, and the round-by-round choice, which
prices each offer, does better. So on a CPU, where a larger pass costs far more than a switch,
nothing changes. Pure Python.
"""

from __future__ import annotations

from dataclasses import dataclass

STAY = 16  # rounds a hold is expected to last, over which the switches into it and back are spread
_FORGET = 0.94  # per round, of the counts behind the rate (16 rounds ago: about a third)
_PRIOR_ROUNDS = 2.0  # pseudo-rounds whose offers were not kept, behind the learnt rate


@dataclass
class HoldRate:
    """How often this reply's best copy offer had its first token kept, over recent rounds
    (rounds without an offer count as not kept)."""

    kept: float = 0.0
    rounds: float = 0.0

    def add(self, first_kept: bool) -> None:
        self.kept = self.kept * _FORGET + first_kept
        self.rounds = self.rounds * _FORGET + 1.0

    def rate(self) -> float:
        return self.kept / (self.rounds + _PRIOR_ROUNDS)


def worth_holding(one: float, two: float, rate: float, extra_switches: float, rounds: int) -> bool:
    """Whether to pass two tokens a round for the next stretch rather than one: a pass of one
    token takes `one` seconds, of two `two` (steady costs) and yields the target's token plus
    the draft's with chance `rate`; holding saves one x (1 + rate) - two a round over `rounds`
    rounds, against `extra_switches`, the seconds of switching it adds (into two tokens now and
    back later, less what a one-token pass now would pay to switch)."""
    return rounds * (one * (1.0 + rate) - two) > extra_switches
