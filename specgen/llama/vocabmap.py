"""A draft model seen through its target's vocabulary, for pairs whose sizes differ.

The pair check accepts vocabularies up to 128 tokens apart (families pad their larger models), but
llama.cpp rejects a batch holding an id its model lacks. So the draft's logits are cut or padded
with -inf to the target's size before any q or argmax is taken (it never proposes an id the target
lacks, and q stays the distribution its token was really drawn from), and an accepted id the draft
lacks is fed to it as a stand-in token: its guesses after one get worse, the output stays the
target's. `tokens` keeps the ids as given, so the drafter's view of the history is unchanged.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from specgen.decoding.tokens import common_prefix
from specgen.models.gguf import GGUFInfo

if TYPE_CHECKING:
    from specgen.llama.model import Model, SavedState


def stand_in(draft: GGUFInfo, shared: int) -> int:
    """The id fed in place of one the draft lacks: its unknown token, else its EOS, else 0."""
    for token in (draft.unk_id, draft.eos_id):
        if isinstance(token, int) and 0 <= token < shared:
            return token
    return 0


class DraftVocabulary:
    """`model` (a loaded draft) answering in a vocabulary of `n_vocab` ids; the rest is the model's."""

    def __init__(self, model: Model, n_vocab: int, stand_in: int) -> None:
        self.model, self.n_vocab, self.stand_in = model, n_vocab, stand_in
        self.shared = min(n_vocab, model.n_vocab)
        self.tokens: list[int] = []

    def __getattr__(self, name: str) -> Any:
        """path, identity, n_ctx, n_batch, bos, threads, is_eog, piece: the draft model's own."""
        return getattr(self.model, name)

    def forward(self, tokens: list[int], all_logits: bool) -> np.ndarray:
        """The draft's logits rows over the target's ids (-inf where the draft has none)."""
        try:
            rows = self.model.forward(self._mapped(tokens), all_logits)
        finally:
            self._track(tokens)
        if self.model.n_vocab >= self.n_vocab:
            return rows[:, : self.n_vocab]
        wide = np.full((rows.shape[0], self.n_vocab), -np.inf, dtype=rows.dtype)
        wide[:, : self.shared] = rows
        return wide

    def prefill(self, tokens: list[int]) -> None:
        try:
            self.model.prefill(self._mapped(tokens))
        finally:
            self._track(tokens)

    def sync(self, tokens: list[int]) -> int:
        """Make the cache hold exactly `tokens`, reusing the common prefix; return tokens decoded."""
        common = common_prefix(self.tokens, tokens)
        self.truncate(common)
        self.prefill(tokens[common:])
        return len(tokens) - common

    def truncate(self, n_keep: int) -> None:
        self.model.truncate(n_keep)
        del self.tokens[len(self.model.tokens) :]

    def save_state(self) -> SavedState:
        """The draft's saved cache, holding the ids as given (`load_state` maps them again)."""
        return replace(self.model.save_state(), tokens=tuple(self.tokens))

    def load_state(self, saved: SavedState) -> None:
        self.model.load_state(replace(saved, tokens=tuple(self._mapped(list(saved.tokens)))))
        self.tokens[:] = saved.tokens

    def _mapped(self, tokens: list[int]) -> list[int]:
        return [t if t < self.shared else self.stand_in for t in tokens]

    def _track(self, tokens: list[int]) -> None:
        """Record `tokens` as far as the draft's cache took them (all, unless a decode failed)."""
        self.tokens.extend(tokens[: len(self.model.tokens) - len(self.tokens)])
