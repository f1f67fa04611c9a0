"""Prompt lookup: draft by copying what followed an earlier occurrence of the last few tokens.

Copied tokens are certain (q is one-hot), so a copied token x is kept with probability p(x):
the output stays the target's.
"""

from __future__ import annotations

import numpy as np

from specgen.decoding.drafters.base import Draft, Gate, copied
from specgen.decoding.sampling import SamplingParams


class PromptLookupDrafter:
    """Drafts by copying what followed the latest earlier occurrence of the last n tokens."""

    name = "prompt-lookup"

    def __init__(self, max_ngram: int = 3, min_ngram: int = 1):
        self.max_ngram, self.min_ngram = max_ngram, min_ngram

    def reach(self, k: int) -> int:
        """The most tokens one round may draft when the user allows K = k."""
        return k

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


