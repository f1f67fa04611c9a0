"""The real auto drafter, keeping every draft it hands the loop, for tests that check what the
policy chose (which drafter, how many tokens, whether its gate stopped the draft model)."""

from __future__ import annotations

from specgen.decoding.auto import AutoDrafter
from specgen.decoding.drafters.base import Draft


class RecordingAutoDrafter(AutoDrafter):
    def __init__(self, model, policy, shared=(), vocabulary=None):
        super().__init__(model, policy, shared, vocabulary)
        self.drafts: list[Draft] = []

    def propose(self, history, last, k, params, draws, keep=None) -> Draft:
        draft = super().propose(history, last, k, params, draws, keep)
        self.drafts.append(draft)
        return draft
