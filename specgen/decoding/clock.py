"""The loop's own timing: where one round's wall time went, kept apart from the algorithm.

A round is timed at four marks, after the drafter proposed, after the target's forward pass,
after the verdict was applied and after the drafter learnt from it; its `Round` gets the
drafting and verifying seconds and the time spent outside the models' passes, and the drafter
the seconds it spent choosing and learning. This is the only clock in `decoding`.

Every mark reads `now()`, and so do the draft model's drafter (timing its passes, so that the
rest of its proposing counts as Python) and the calibration (`llama.calibrate`): the machine's
`time.perf_counter`, unless a test puts a fake clock in `source`, so that what the policy learns
from timings can be tested without depending on how busy the machine is.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a type only: the drafters read `now` too, and stand below the loop's events
    from specgen.decoding.events import Round

source: Callable[[], float] = time.perf_counter  # what `now` reads; tests set a fake clock here


def now() -> float:
    """Seconds on the clock the loop's rounds and the calibration are timed by."""
    return source()


@dataclass
class RoundClock:
    """One round's marks, in `now()` seconds; it starts when made."""

    start: float = field(default_factory=now)
    drafted_at: float = 0.0
    forward_s: float = 0.0  # the target's pass alone
    verified_at: float = 0.0
    observed_at: float = 0.0

    def drafted(self) -> None:
        self.drafted_at = now()

    def forwarded(self) -> None:
        self.forward_s = now() - self.drafted_at

    def verified(self) -> None:
        self.verified_at = now()

    def observed(self) -> None:
        self.observed_at = now()

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

    def stamp(self, event: Round, proposed: bool, model_s: float) -> Round:
        """`event` with its times: drafting (zero when nothing was proposed), verifying, and the
        rest of the round so far outside the models' passes (`model_s`: the draft model's, which
        are part of drafting; the rest of drafting is Python, and counted as such)."""
        draft_s = self.drafted_at - self.start if proposed else 0.0
        models_s = self.forward_s + model_s
        python_s = max(now() - self.start - models_s, 0.0)
        return replace(event, draft_s=draft_s, verify_s=self.verified_at - self.drafted_at, python_s=python_s)
