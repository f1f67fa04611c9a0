"""A policy that holds the target's pass at two tokens every round (`decoding.hold`), whatever
its record: the offer's first token, or a filler (the token before) where nothing is offered; it
prices no copy. For tests of what held passes draft and keep, apart from when auto holds."""

from __future__ import annotations

from specgen.decoding.copy_rates import CopyEvidence
from specgen.decoding.drafters.base import Source
from specgen.decoding.policy import Choice, Policy


class HoldsEveryRound(Policy):
    def choose(
        self, room: int, lookup: int, lag: int, evidence: CopyEvidence | None = None, offer: tuple[int, ...] = ()
    ) -> Choice:
        return Choice(Source.LOOKUP, 1, holding=True) if room else Choice(Source.PLAIN)
