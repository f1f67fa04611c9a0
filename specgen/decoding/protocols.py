"""What the loop and the drafters ask of the models they are handed: the target (`Target`) and
a draft model (`DraftModel`), beside `constraint.Constraint`, what they ask of a grammar.

The decoding layer imports no model library; `specgen.llama.model.Model` is one that satisfies
both. Each holds a KV cache that mirrors `tokens`: `forward` appends to it and returns logits
rows, `truncate` rolls it back, `sync` makes it hold a given history, reusing what it shares (the
target's `start` also gives the logits row of the prompt's last token).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np


class Target(Protocol):
    """The model whose output the loop keeps: it prefills the prompt, verifies each round's draft
    in one pass, is rolled back to the tokens it kept, and renders them as text."""

    @property
    def tokens(self) -> list[int]:
        """The tokens its KV cache holds."""

    @property
    def n_ctx(self) -> int:
        """The most tokens its context holds."""

    def start(self, prompt: list[int]) -> tuple[np.ndarray, int]:
        """Make the cache hold exactly `prompt`, its last token decoded with the uncached ones
        before it; return that token's logits row (the same row however much was cached) and
        how many tokens were decoded."""

    def forward(self, tokens: list[int], all_logits: bool) -> np.ndarray:
        """Decode `tokens` after the cache; their logits rows (all, or only the last)."""

    def truncate(self, n_keep: int) -> None:
        """Drop every cached position from `n_keep` on."""

    def is_eog(self, token: int) -> bool:
        """Whether `token` ends a generation."""

    def piece(self, token: int) -> bytes:
        """The bytes `token` stands for (a special token: none)."""


class DraftModel(Protocol):
    """A draft model sharing the target's vocabulary (`drafters.model.ModelDrafter`): its cache
    trails the target's history, catches up in batches, and forgets what the target refused."""

    @property
    def tokens(self) -> list[int]:
        """The tokens its KV cache holds."""

    @property
    def n_batch(self) -> int:
        """The most tokens one decode takes."""

    def sync(self, tokens: list[int]) -> int:
        """Make the cache hold exactly `tokens`; return how many were decoded for it."""

    def prefill(self, tokens: list[int]) -> None:
        """Decode `tokens` after the cache without computing logits."""

    def forward(self, tokens: list[int], all_logits: bool) -> np.ndarray:
        """Decode `tokens` after the cache; their logits rows (all, or only the last)."""

    def truncate(self, n_keep: int) -> None:
        """Drop every cached position from `n_keep` on."""

    def is_eog(self, token: int) -> bool:
        """Whether `token` ends a generation."""
