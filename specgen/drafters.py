"""Where draft tokens come from: a small model, or n-gram lookup in the text so far.

A drafter proposes up to k tokens after the target's accepted history and says which
distribution each was drawn from (q), because exact speculative sampling needs it. The
target's history is passed in; the drafter keeps whatever state it needs in step with it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .sampling import SamplingParams, distribution, one_hot, sample


@dataclass(frozen=True)
class Draft:
    """Proposed tokens, the distributions they were drawn from (sampling only), the drafter's
    confidence in each (only when a gate asked for it), and the draft forward passes spent."""

    tokens: list[int]
    q_rows: list[np.ndarray]
    confidences: list[float]
    steps: int


def confidence(logits: np.ndarray) -> float:
    """The draft's top probability: 1 / sum(exp(logits - max))."""
    return float(1.0 / np.exp(logits - logits.max()).sum())


class ModelDrafter:
    """A draft model sharing the target's vocabulary; its KV cache trails the target's history."""

    name = "speculative"

    def __init__(self, model):
        self.model = model

    def prepare(self, prefix: list[int]) -> None:
        self.model.sync(prefix)

    def propose(self, history: list[int], last: int, k: int, params: SamplingParams, rng,
                keep: Callable[[int, float], bool] | None = None) -> Draft:
        """Feed the accepted tokens the draft has not seen, then draft up to k tokens.

        `keep(position, confidence)` may end the draft early, dropping the unsure token.
        """
        model = self.model
        feed = [*history[len(model.tokens) :], last]
        if len(feed) > model.n_batch:
            model.prefill(feed[:-1])
            feed = feed[-1:]
        drafted: list[int] = []
        q_rows: list[np.ndarray] = []
        confidences: list[float] = []
        steps = 0
        for position in range(k):
            logits = model.forward(feed, all_logits=False)[0]
            steps += 1
            if params.greedy:
                token = int(np.argmax(logits))
                q = None
            else:
                q = distribution(logits, params)
                token = sample(q, rng)
            if keep is not None:
                sure = confidence(logits) if q is None else float(q[token])
                if not keep(position, sure):
                    break
                confidences.append(sure)
            drafted.append(token)
            if q is not None:
                q_rows.append(q)
            if model.is_eog(token):
                break
            feed = [token]
        return Draft(drafted, q_rows, confidences, steps)

    def rollback(self, history: list[int]) -> None:
        """Forget drafted positions the target did not keep."""
        self.model.truncate(min(len(self.model.tokens), len(history)))


class PromptLookupDrafter:
    """Drafts by copying what followed the latest earlier occurrence of the last n tokens."""

    name = "prompt-lookup"

    def __init__(self, n_vocab: int, max_ngram: int = 3, min_ngram: int = 1):
        self.n_vocab, self.max_ngram, self.min_ngram = n_vocab, max_ngram, min_ngram

    def prepare(self, prefix: list[int]) -> None:
        """Nothing to load: the history itself is the draft source."""

    def propose(self, history: list[int], last: int, k: int, params: SamplingParams, rng,
                keep: Callable[[int, float], bool] | None = None) -> Draft:
        """Copied tokens are certain (q is one-hot), so `keep` has nothing to weigh."""
        drafted = self.lookup([*history, last], k)
        q_rows = [] if params.greedy else [one_hot(t, self.n_vocab) for t in drafted]
        return Draft(drafted, q_rows, [], 0)

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

    def rollback(self, history: list[int]) -> None:
        """Nothing to undo."""
