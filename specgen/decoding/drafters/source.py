"""What every copy source is to the auto drafter: the `CopySource` interface, and the `Offer`
it makes each round.

A copy source reads the accepted history and offers tokens to copy after it, with the match it
found them by (the evidence the policy prices a copy by). The auto drafter (`decoding.auto`)
asks each of its sources every round and picks one offer by one rule over the list; the sources
live one to a module beside this one: the text so far (`lookup.Copier`, which also searches the
prompt as JSON escapes it, `quoted`), the output's record pattern (`pattern.PatternSource`), an
earlier record of a JSON reply (`structure.StructureSource`) and the prediction the user gave
(`prediction.Prediction`). Adding a source is a module with one class, and its place in the list.

Copied tokens are certain (q is one-hot), so a copied token x is kept with probability p(x):
whatever a source offers, the output stays the target's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from specgen.decoding.drafters.base import Source
from specgen.decoding.drafters.suffix import Branch

if TYPE_CHECKING:
    from specgen.decoding.drafters.structure import Role


@dataclass(frozen=True)
class Offer:
    """What a copy source proposes this round, and the match it comes from (None: nothing to copy)."""

    tokens: list[int]
    branch: Branch | None = None
    rewrites: tuple[int, ...] = ()  # where in `tokens` a learnt rewrite (`Rewrites`) begins
    roles: tuple[Role, ...] = ()  # a structure-aligned offer's: what each token held where it was written
    source: Source = Source.TEXT  # who offers it, as `by_source` reports a copy of it
    priced_as: Source | None = None  # whose record prices it (None: its source's own)

    @property
    def match(self) -> int:
        """The tokens before it that equal the recent ones (0 without a match)."""
        return self.branch.match if self.branch is not None else 0

    @property
    def record(self) -> Source:
        """The source whose record of kept copies prices this offer."""
        return self.priced_as if self.priced_as is not None else self.source


class CopySource(Protocol):
    """A source of copies. `prepare` starts a request; `offer` is asked once a round."""

    @property
    def name(self) -> Source:
        """What its copies are reported as (an offer may name a part of it: `Offer.source`)."""

    @property
    def leads(self) -> bool:
        """Whether its offer is first among equals: where it agrees with the best offer of the
        others it is copied in that one's place, and where it does not, it is judged beside it."""

    def prepare(self, prefix: list[int]) -> None:
        """A request starts after `prefix` (the prompt but its last token)."""

    def offer(self, history: list[int], last: int, k: int) -> Offer:
        """Up to k tokens to copy after history + [last] (the prompt, then the accepted output)."""
