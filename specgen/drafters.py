"""Where draft tokens come from: a small model, n-gram lookup in the text so far, or a policy
that picks between them (and plain decoding) every round.

A drafter proposes up to k tokens after the target's accepted history and says which
distribution each was drawn from (q), because exact speculative sampling needs it. After the
target has judged them, `observe` tells the drafter what happened and `rollback` what to forget.
A drafter may stop early (the adaptive gate), but only on what it knew before drawing the token
(the draft's top probability), never on the token drawn: that keeps the output exact.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .adaptive import LOOKUP, LOOKUP_MAX, MODEL, PLAIN, Choice, Outcome, Policy
from .sampling import Dist, SamplingParams, distribution, one_hot, sample

Gate = Callable[[int, float], bool]


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
    source: str = ""  # adaptive.MODEL or adaptive.LOOKUP


NO_DRAFT = Draft([])


def confidence(logits: np.ndarray) -> float:
    """The draft's top probability at temperature 1: 1 / sum(exp(logits - max))."""
    return float(1.0 / np.exp(logits - logits.max()).sum())


class ModelDrafter:
    """A draft model sharing the target's vocabulary; its KV cache trails the target's history."""

    name = "speculative"

    def __init__(self, model):
        self.model = model

    def prepare(self, prefix: list[int], prefill: bool = True) -> None:
        """Make the draft's cache hold `prefix`, or (without `prefill`) only what it shares with it."""
        if prefill:
            self.model.sync(prefix)
        else:
            self.model.sync(prefix[: self.lag_free(prefix)])

    def lag_free(self, prefix: list[int]) -> int:
        """How many leading tokens of `prefix` the draft's cache already holds."""
        common = 0
        for have, want in zip(self.model.tokens, prefix):
            if have != want:
                break
            common += 1
        return common

    def lag(self, history: list[int]) -> int:
        """Accepted tokens the draft model has not seen yet."""
        return max(len(history) - len(self.model.tokens), 0)

    def propose(self, history: list[int], last: int, k: int, params: SamplingParams,
                draws: list[np.ndarray] | None, keep: Gate | None = None) -> Draft:
        """Feed the accepted tokens the draft has not seen, then draft up to k tokens.

        `draws[i][0]` samples position i; `keep(position, top probability)` may end the draft
        before a token is drawn.
        """
        model = self.model
        feed = [*history[len(model.tokens) :], last]
        lag = len(feed) - 1
        if len(feed) > model.n_batch:
            model.prefill(feed[:-1])
            feed = feed[-1:]
        tokens: list[int] = []
        q_rows: list[Dist] = []
        confidences: list[float] = []
        for position in range(k):
            logits = model.forward(feed, all_logits=False)[0]
            q = None if params.greedy else distribution(logits, params)
            if keep is not None:
                sure = confidence(logits) if q is None else q.top
                if not keep(position, sure):
                    top = int(np.argmax(logits)) if q is None else -1
                    return Draft(tokens, q_rows, confidences, position + 1, lag, (sure, top), MODEL)
                confidences.append(sure)
            token = int(np.argmax(logits)) if q is None else sample(q, draws[position][0])
            tokens.append(token)
            if q is not None:
                q_rows.append(q)
            if model.is_eog(token):
                break
            feed = [token]
        return Draft(tokens, q_rows, confidences, len(tokens), lag, None, MODEL)

    def observe(self, draft: Draft, emitted: list[int], seconds: float) -> None:
        """Nothing to learn: K is fixed."""

    def rollback(self, history: list[int]) -> None:
        """Forget drafted positions the target did not keep."""
        self.model.truncate(min(len(self.model.tokens), len(history)))


class PromptLookupDrafter:
    """Drafts by copying what followed the latest earlier occurrence of the last n tokens."""

    name = "prompt-lookup"

    def __init__(self, max_ngram: int = 3, min_ngram: int = 1):
        self.max_ngram, self.min_ngram = max_ngram, min_ngram

    def prepare(self, prefix: list[int]) -> None:
        """Nothing to load: the history itself is the draft source."""

    def propose(self, history: list[int], last: int, k: int, params: SamplingParams,
                draws: list[np.ndarray] | None, keep: Gate | None = None) -> Draft:
        """Copied tokens are certain (q is one-hot), so `keep` has nothing to weigh."""
        return copied(self.lookup([*history, last], k), params)

    def lookup(self, tokens: list[int], k: int) -> list[int]:
        """The k tokens after the most recent earlier match of the longest possible suffix n-gram."""
        array = np.asarray(tokens)
        for n in range(min(self.max_ngram, len(tokens) - 1), self.min_ngram - 1, -1):
            suffix = array[-n:]
            windows = np.lib.stride_tricks.sliding_window_view(array[:-1], n)
            hits = np.flatnonzero((windows == suffix).all(axis=1))
            if hits.size:
                start = int(hits[-1]) + n
                return array[start : start + k].tolist()
        return []

    def observe(self, draft: Draft, emitted: list[int], seconds: float) -> None:
        """Nothing to learn: K is fixed."""

    def rollback(self, history: list[int]) -> None:
        """Nothing to undo."""


def copied(tokens: list[int], params: SamplingParams) -> Draft:
    return Draft(tokens, [] if params.greedy else [one_hot(t) for t in tokens], source=LOOKUP)


class AdaptiveDrafter:
    """`--draft-tokens auto`: each round a `Policy` picks plain decoding, the draft model at some
    K, or prompt lookup; `observe` feeds it what the round showed and how long it took."""

    def __init__(self, model: ModelDrafter | None, policy: Policy):
        self.model, self.policy = model, policy
        self.lookup = PromptLookupDrafter()
        self.name = (model.name if model else PromptLookupDrafter.name) + " (auto)"
        self._pending: tuple[Choice, list[int]] = (Choice(PLAIN), [])

    def prepare(self, prefix: list[int]) -> None:
        """Prefill the draft model now only if it could ever pay; else it catches up when first used."""
        if self.model is not None:
            self.model.prepare(prefix, prefill=self.policy.model_can_pay())

    def propose(self, history: list[int], last: int, k: int, params: SamplingParams,
                draws: list[np.ndarray] | None, keep: Gate | None = None) -> Draft:
        offer = self.lookup.lookup([*history, last], LOOKUP_MAX)
        lag = self.model.lag(history) if self.model is not None else 0
        choice = self.policy.choose(k, len(offer), lag)
        self._pending = (choice, offer)
        if choice.source == LOOKUP:
            return copied(offer[: choice.k], params)
        if choice.source == MODEL:
            return self.model.propose(history, last, choice.k, params, draws, self.policy.keep)
        return NO_DRAFT

    def observe(self, draft: Draft, emitted: list[int], seconds: float | None) -> None:
        choice, offer = self._pending
        judged = min(len(offer), len(emitted))
        hits = next((i for i in range(judged) if offer[i] != emitted[i]), judged)
        dropped = None
        if draft.dropped is not None and draft.dropped[1] >= 0 and len(emitted) > len(draft.tokens):
            dropped = (draft.dropped[0], emitted[len(draft.tokens)] == draft.dropped[1])
        self.policy.observe(Outcome(
            choice, len(draft.tokens), len(emitted) - 1, tuple(draft.confidences),
            draft.lag, judged, hits, dropped, seconds))

    def rollback(self, history: list[int]) -> None:
        if self.model is not None:
            self.model.rollback(history)

