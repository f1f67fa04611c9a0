"""How many tokens of a draft a round keeps: the distribution the auto policy decides from.

A round that drafts k tokens keeps the first j of them (0 <= j <= k) and the target adds one
of its own. What the policy weighs follows from the chances `reach[j-1]` that at least j are
kept: the tokens a round yields on average, 1 + sum of reach[:k] (Leviathan et al. 2023), and
the chance that a copy of k tokens breaks, 1 - reach[k-1], which sends the next pass to another
size.

The draft model's keep rates are learnt by draft position (`Acceptance`); a copy's reach comes
from its source's record (`copy_rates`). Pure Python.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

_SHRINK = 3.0  # pseudo-observations pulling a thin position toward the pooled rate


def reach_of(rates: list[float], floor: float = 0.0) -> list[float]:
    """The chance that at least j tokens are kept, j = 1..len(rates), from the chance that each
    is kept once all before it were (rates of at most 1): up to the first under `floor`."""
    out, reach = [], 1.0
    for rate in rates:
        reach *= rate
        out.append(reach)
        if reach < floor:
            break
    return out


def expected_tokens(rates: list[float], k: int) -> float:
    """Tokens a round drafting k yields on average: 1 + sum of the chances to keep each prefix."""
    return 1.0 + sum(reach_of(rates[:k]))


@dataclass
class Acceptance:
    """The draft model's keep rates by draft position, with forgetting, shrunk toward the pooled
    rate where data are thin."""

    size: int
    prior: float = 0.5
    kept: list[float] = field(default_factory=list)
    reached: list[float] = field(default_factory=list)
    pool: list[float] = field(default_factory=list)  # [kept, reached] over all positions
    _rates: dict[bool, list[float]] = field(default_factory=dict)  # rates(optimistic) until the counts change

    def __post_init__(self) -> None:
        self.kept, self.reached = [0.0] * self.size, [0.0] * self.size
        self.pool = [self.prior * 2.0, 2.0]

    def forget(self, factor: float) -> None:
        self._rates.clear()
        self.kept = [x * factor for x in self.kept]
        self.reached = [x * factor for x in self.reached]
        self.pool = [x * factor for x in self.pool]

    def add(self, judged: int, kept: int, start: int = 0) -> None:
        """Positions start..judged-1 were judged (those before `start` earlier); those before
        `kept` were kept."""
        self._rates.clear()
        for i in range(start, min(judged, self.size)):
            self.reached[i] += 1.0
            self.kept[i] += i < kept
        self.pool[0] += max(min(kept, judged) - start, 0)
        self.pool[1] += max(judged - start, 0)

    def pooled(self) -> float:
        return (self.pool[0] + 0.1) / (self.pool[1] + 0.2)

    def rates(self, optimistic: bool = False) -> list[float]:
        """Keep rate by position (with `optimistic`, an upper bound); computed once per round."""
        if optimistic not in self._rates:
            self._rates[optimistic] = self._compute(optimistic)
        return self._rates[optimistic]

    def _compute(self, optimistic: bool) -> list[float]:
        base = self.pooled()
        out = []
        for kept, reached in zip(self.kept, self.reached, strict=True):
            rate = (kept + _SHRINK * base) / (reached + _SHRINK)
            if optimistic:
                rate = min(1.0, rate + 2.0 * math.sqrt(rate * (1 - rate) / (reached + _SHRINK)) + 1.0 / (reached + 2.0))
            out.append(rate)
        return out
