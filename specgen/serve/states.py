"""Saved KV caches of recent conversations, so that clients taking turns each find their own.

One llama.cpp context holds one sequence. Two clients alternating (an editor and a chat window)
would each evict the other's cache every turn and prefill their whole history again. Like
llama-server's prompt cache (`--cache-ram`), the scheduler saves both models' caches before it
switches to a request that a saved state serves better, and restores that state when its
conversation comes back. The saved states are bounded in bytes; the least recently used go first.

A client is told only of its own cached tokens: a state counts as the request's own when the
request begins with everything the state holds (the earlier prompt and the reply this client was
sent). A prefix shared with another client's history is still reused, but reported as 0 cached.
"""

from __future__ import annotations

from dataclasses import dataclass

from specgen.decoding.tokens import common_prefix


@dataclass(frozen=True)
class Snapshot:
    """Both models' saved caches at one moment (the draft's None when there is no draft model)."""

    target: object  # llama.model.SavedState
    draft: object | None

    @property
    def tokens(self) -> tuple[int, ...]:
        return self.target.tokens

    @property
    def nbytes(self) -> int:
        return self.target.nbytes + (self.draft.nbytes if self.draft is not None else 0)


class SavedStates:
    """The live caches of `target` and `draft` plus saved ones, least recently used first."""

    def __init__(self, target, draft, budget_bytes: int):
        self.target, self.draft = target, draft
        self.budget_bytes = budget_bytes
        self.saved: list[Snapshot] = []

    @property
    def nbytes(self) -> int:
        return sum(snapshot.nbytes for snapshot in self.saved)

    def take_up(self, tokens: list[int]) -> int:
        """Make the live caches the best start for `tokens`: where a saved state shares a longer
        prefix with them than the live one does, restore it. The live state is saved first when
        `tokens` would cut it short. Returns how many of `tokens` the live cache now holds that
        are the request's own (see the module)."""
        live = common_prefix(self.target.tokens, tokens)
        if live < len(self.target.tokens):
            self._save_live()
        best = max(self.saved, key=lambda snapshot: common_prefix(snapshot.tokens, tokens), default=None)
        if best is not None and common_prefix(best.tokens, tokens) > live:
            self.saved.remove(best)
            self.target.load_state(best.target)
            if self.draft is not None:
                self.draft.load_state(best.draft)
        held = self.target.tokens
        own = len(held) <= len(tokens) and common_prefix(held, tokens) == len(held)
        return len(held) if own else 0

    def _save_live(self) -> None:
        """Keep the live caches (unless empty, or already inside a saved state), within the budget."""
        if not self.target.tokens or self.budget_bytes <= 0:
            return
        held = tuple(self.target.tokens)
        if any(snapshot.tokens[: len(held)] == held for snapshot in self.saved):
            return
        snapshot = Snapshot(self.target.save_state(), self.draft.save_state() if self.draft is not None else None)
        self.saved = [s for s in self.saved if held[: len(s.tokens)] != s.tokens]  # prefixes of it add nothing
        self.saved.append(snapshot)
        while self.saved and self.nbytes > self.budget_bytes:
            self.saved.pop(0)
