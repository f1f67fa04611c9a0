"""What every drafter hands the loop: a `Draft`, and the rules a drafter keeps.

Drafters live one to a module beside this one: a small model (`model`), copying from the
text so far (`lookup`), and the auto policy that picks between them every round (`adaptive`).

A drafter proposes up to k tokens after the target's accepted history and says which
distribution each was drawn from (q), because exact speculative sampling needs it. After the
target has judged them, `observe` tells the drafter what happened and `rollback` what to forget.
A drafter may stop early (the adaptive gate), but only on what it knew before drawing the token
(the draft's top probability), never on the token drawn: that keeps the output exact.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from specgen.decoding.sampling import Dist, SamplingParams, one_hot

Gate = Callable[[int, float], bool]
PLAIN, MODEL, LOOKUP = "plain", "model", "lookup"  # who drafted a round: nobody, the draft model, a copy


@dataclass(frozen=True)
class Draft:
    """Proposed tokens; the distributions they were drawn from (sampling only); the drafter's
    confidence in each (only when a gate asked); the draft passes spent; the tokens the draft
    model caught up on first; and the confidence and greedy token of a token the gate refused."""

    tokens: list[int]
    q: list[Dist] = field(default_factory=list)
    confidences: list[float] = field(default_factory=list)
    steps: int = 0
    lag: int = 0
    dropped: tuple[float, int] | None = None
    source: str = ""  # MODEL or LOOKUP
    rewrites: int = 0  # learnt rewrites the copied tokens carry
    patterned: bool = False  # the copy follows the output's record pattern (`pattern`)


NO_DRAFT = Draft([])


@dataclass(frozen=True)
class Vocabulary:
    """The target's tokens as text and text as tokens (no special tokens either way): what a
    drafter that works on text (the record pattern) needs to offer tokens."""

    piece: Callable[[int], bytes]
    tokenize: Callable[[str], list[int]]


def copied(tokens: list[int], params: SamplingParams, rewrites: int = 0, patterned: bool = False) -> Draft:
    return Draft(tokens, [] if params.greedy else [one_hot(t) for t in tokens], source=LOOKUP, rewrites=rewrites,
                 patterned=patterned)


