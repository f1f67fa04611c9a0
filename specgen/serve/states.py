"""Saved KV caches of recent conversations, so that clients taking turns each find their own.

One llama.cpp context holds one sequence. Two clients alternating (an editor and a chat window)
would each evict the other's cache every turn and prefill their whole history again. Like
llama-server's prompt cache (`--cache-ram`), the scheduler saves both models' caches before it
switches to a request that a saved state serves better, and restores that state when its
conversation comes back. The saved states are bounded in bytes; the least recently used go first.

Every state belongs to a user (an API key): a request restores only its own user's states, and
when the live caches hold another user's tokens they are saved and emptied first, so that no
prefix is reused across keys. Within one user, a client is told only of its own cached tokens: a
state counts as the request's own when the request begins with everything the state holds (the
earlier prompt and the reply this client was sent). A prefix shared with another client's
history is still reused, but reported as 0 cached.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from specgen.decoding.tokens import common_prefix
from specgen.llama.model import SavedState


@dataclass(frozen=True)
class Snapshot:
    """One user's saved caches of both models (the draft's None when there is no draft model)."""

    user: int
    target: SavedState
    draft: SavedState | None

    @property
    def tokens(self) -> tuple[int, ...]:
        return self.target.tokens

    @property
    def nbytes(self) -> int:
        return self.target.nbytes + (self.draft.nbytes if self.draft is not None else 0)


class SavedStates:
    """The live caches of `target` and `draft` plus saved ones of every user, least recently used
    first, within one budget."""

    def __init__(self, target, draft, budget_bytes: int):
        self.target, self.draft = target, draft
        self.budget_bytes = budget_bytes
        self.saved: list[Snapshot] = []
        self.owner: int | None = None  # the user whose tokens the live caches hold
        self.saving_s = 0.0  # what the last take_up spent saving the live caches for their owner

    @property
    def nbytes(self) -> int:
        return sum(snapshot.nbytes for snapshot in self.saved)

    def take_up(self, tokens: list[int], user: int) -> int:
        """Make the live caches the best start for `user`'s `tokens`: where a state `user` saved
        shares a longer prefix with them than the live one does, restore it. The live state is
        saved first when `tokens` would cut it short, and emptied when it is another user's.
        Returns how many of `tokens` the live cache now holds that are the request's own (see the
        module)."""
        live = common_prefix(self.target.tokens, tokens) if user == self.owner else 0
        start = time.perf_counter()
        if live < len(self.target.tokens):
            self._save_live()
        self.saving_s = time.perf_counter() - start
        if user != self.owner:
            for model in (self.target, self.draft):
                if model is not None:
                    model.truncate(0)
            self.owner = user
        users_states = [snapshot for snapshot in self.saved if snapshot.user == user]
        best = max(users_states, key=lambda snapshot: common_prefix(snapshot.tokens, tokens), default=None)
        if best is not None and common_prefix(best.tokens, tokens) > live:
            self.saved.remove(best)
            self.target.load_state(best.target)
            if self.draft is not None:
                self.draft.load_state(best.draft)
        held = self.target.tokens
        own = len(held) <= len(tokens) and common_prefix(held, tokens) == len(held)
        return len(held) if own else 0

    def _save_live(self) -> None:
        """Keep the live caches as their owner's (unless empty, or already inside a state of that
        owner), within the budget."""
        if not self.target.tokens or self.budget_bytes <= 0:
            return
        held, owner = tuple(self.target.tokens), self.owner
        if owner is None:  # never: live tokens were taken up by some user
            return
        if any(s.user == owner and s.tokens[: len(held)] == held for s in self.saved):
            return
        draft = self.draft.save_state() if self.draft is not None else None
        snapshot = Snapshot(owner, self.target.save_state(), draft)
        # the owner's states that are prefixes of it add nothing
        self.saved = [s for s in self.saved if s.user != owner or held[: len(s.tokens)] != s.tokens]
        self.saved.append(snapshot)
        while self.saved and self.nbytes > self.budget_bytes:
            self.saved.pop(0)
