"""What the engine built for the front ends: `recorded(monkeypatch)` keeps every `Generation` made
from then on (the real one, which still runs), so a test can read the request a front end asked
for and the drafter the engine chose for it."""

from __future__ import annotations

from specgen.engine.generation import Generation


def recorded(monkeypatch) -> list[Generation]:
    made: list[Generation] = []
    build = Generation.__init__

    def record(self, *args, **kwargs) -> None:
        build(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(Generation, "__init__", record)
    return made
