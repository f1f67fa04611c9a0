"""The loop's own timing: where one round's wall time went, kept apart from the algorithm.

A round is timed at four marks, after the drafter proposed, after the target's forward pass,
after the verdict was applied and after the drafter learnt from it; its `Round` gets the
drafting and verifying seconds and the time spent outside the models' passes, and the drafter
the seconds it spent choosing and learning. This is the only clock in `decoding`.
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
    observed_at: float = 0.0

    def drafted(self) -> None:
        self.drafted_at = time.perf_counter()

    def forwarded(self) -> None:
        self.forward_s = time.perf_counter() - self.drafted_at

    def verified(self) -> None:
        self.verified_at = time.perf_counter()

    def observed(self) -> None:
        self.observed_at = time.perf_counter()

    @property
    def proposing_s(self) -> float:
        return self.drafted_at - self.start

    @property
    def observing_s(self) -> float:
        return self.observed_at - self.verified_at if self.observed_at else 0.0

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
