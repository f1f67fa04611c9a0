"""The loop's own timing: where one round's wall time went, kept apart from the algorithm.

A round is timed at three marks, after the drafter proposed, after the target's forward pass
and after the verdict was applied; its `Round` gets the drafting and verifying seconds and the
time spent outside the models' passes. This is the only clock in `decoding`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

from specgen.decoding.events import Round


@dataclass
class RoundClock:
    """One round's marks, in `time.perf_counter` seconds; it starts when made."""

    start: float = field(default_factory=time.perf_counter)
    drafted_at: float = 0.0
    forward_s: float = 0.0  # the target's pass alone
    verified_at: float = 0.0

    def drafted(self) -> None:
        self.drafted_at = time.perf_counter()

    def forwarded(self) -> None:
        self.forward_s = time.perf_counter() - self.drafted_at

    def verified(self) -> None:
        self.verified_at = time.perf_counter()

    @property
    def round_s(self) -> float:
        """Drafting and verifying: what the round cost its drafter."""
        return self.verified_at - self.start

    def stamp(self, event: Round, proposed: bool, model_drafted: bool) -> Round:
        """`event` with its times: drafting (zero when nothing was proposed), verifying, and the
        rest of the round so far outside the models' passes (a draft model's drafting counts
        whole as the model's)."""
        draft_s = self.drafted_at - self.start if proposed else 0.0
        models_s = self.forward_s + (draft_s if model_drafted else 0.0)
        python_s = max(time.perf_counter() - self.start - models_s, 0.0)
        return replace(event, draft_s=draft_s, verify_s=self.verified_at - self.drafted_at, python_s=python_s)
