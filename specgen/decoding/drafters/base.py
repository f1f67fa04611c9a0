"""What every drafter is to the loop: the `Drafter` interface, the `Draft` it hands back, and
`Source`, the one name of who drafted a round's tokens.

Drafters live one to a module beside this one: a small model (`model`), copying from the text so
far (`lookup`), drafting from a prediction (`prediction`). The copy sources the auto drafter
(`decoding.auto`) asks every round stand behind their own interface (`source`); it composes
them and the draft model under the policy that picks between them every round.

A drafter proposes up to k tokens after the target's accepted history and says which
distribution each was drawn from (q), because exact speculative sampling needs it. After the
target has judged them, `observe` tells the drafter what happened and `rollback` what to forget.
A drafter may stop early (the auto policy's gate), but only on what it knew before drawing the
token (the draft's top probability), never on the token drawn: that keeps the output exact.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from specgen.decoding.sampling import Dist, SamplingParams, one_hot

Gate = Callable[[int, float], bool]


class Source(str, Enum):
    """Who drafted a round's tokens, spelled as users read it (`by_source`, bench JSON, the live
    view): nobody, the draft model, or a copy source (`drafters.source`). `LOOKUP` is a copy
    from whichever source offers one: what the auto policy chooses before it is drafted."""

    PLAIN = "plain"
    MODEL = "model"
    LOOKUP = "lookup"
    TEXT = "copy"  # the text so far (`drafters.lookup`): the prompt, the output, shared sources
    PATTERN = "pattern"  # the output's record pattern (`drafters.pattern`)
    PREDICTION = "prediction"  # the prediction the user gave (`drafters.prediction`)
    REPEAT = "repeat"  # the reply an earlier identical request got, followed as a prediction (serve, run)
    ATTACHED = "attached"  # the text the prompt attached (a file, piped text, a fenced block), followed as a prediction
    QUOTED = "quoted"  # the prompt as a JSON string escapes it (`drafters.quoted`)
    STRUCTURE = "structure"  # an earlier record of a JSON reply, found by its keys (`drafters.structure`)
    FILLER = "filler"  # no source: a token that holds the pass's size where none offered one (`decoding.hold`)

    def __str__(self) -> str:
        return self.value

    @property
    def copied(self) -> bool:
        """Whether tokens of this source are copies (one-hot drafts), not the draft model's."""
        return self not in (Source.PLAIN, Source.MODEL)


@dataclass(frozen=True)
class Draft:
    """Proposed tokens; the distributions they were drawn from (sampling only); the drafter's
    confidence in each (only when a gate asked); the tokens the draft model caught up on first;
    the confidence and greedy token of a token the gate refused; and the time the draft model's
    passes took (the rest of proposing is Python: pricing, copy offers, the gate)."""

    tokens: list[int]
    q: list[Dist] = field(default_factory=list)
    confidences: list[float] = field(default_factory=list)
    lag: int = 0
    dropped: tuple[float, int] | None = None
    source: Source = Source.PLAIN  # who drafted them: the draft model or a copy source
    rewrites: int = 0  # learnt rewrites the copied tokens carry
    model_s: float = 0.0  # seconds of the draft model's own passes while proposing them


NO_DRAFT = Draft([])


@dataclass(frozen=True)
class Vocabulary:
    """The target's tokens as text and text as tokens (no special tokens either way): what a
    drafter that works on text (the record pattern) needs to offer tokens."""

    piece: Callable[[int], bytes]
    tokenize: Callable[[str], list[int]]


def copied(tokens: list[int], params: SamplingParams, rewrites: int = 0, source: Source = Source.TEXT) -> Draft:
    """Copied tokens as a draft: certain, so q is one-hot over each (sampling only)."""
    return Draft(tokens, [] if params.greedy else [one_hot(t) for t in tokens], source=source, rewrites=rewrites)


class Drafter(ABC):
    """What the loop asks of a drafter each request and each round. The defaults suit a drafter
    that drafts at most K tokens a round, learns nothing from a round and holds no drafted state."""

    name: str  # the mode the Summary reports

    def reach(self, k: int) -> int:
        """The most tokens one round may draft when the user allows K = k."""
        return k

    def prepare(self, prefix: list[int]) -> None:  # noqa: B027 (a drafter may hold nothing per request)
        """A request starts after `prefix` (the prompt but its last token)."""

    @abstractmethod
    def propose(
        self,
        history: list[int],
        last: int,
        k: int,
        params: SamplingParams,
        draws: np.ndarray | None,
        keep: Gate | None = None,
    ) -> Draft:
        """Up to k tokens after history + [last]. `draws[i]` is the uniform that samples draft
        position i (sampling only), new to this round; `keep(position, top probability)` may end
        the draft before a token is drawn."""

    def observe(self, draft: Draft, emitted: list[int], seconds: float, looked: float = 0.0) -> None:  # noqa: B027
        """The round's draft, the tokens the target emitted after it, the seconds it took, and
        `looked`: the seconds this drafter spent choosing it and learning from the round before
        (its propose where no draft model ran in it, and its last observe)."""

    def rollback(self, history: list[int]) -> None:  # noqa: B027 (a drafter may hold no drafted state)
        """The target kept `history`: forget any drafted position beyond it."""
