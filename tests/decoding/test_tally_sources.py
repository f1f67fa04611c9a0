"""What each kind of drafter drafted and the target kept, counted round by round, as run's
summary line, chat's status and bench's report show it."""

from __future__ import annotations

from specgen.decoding.drafters.base import Source
from specgen.decoding.events import Round, Tally, drafted_by


def a_round(drafted: int, accepted: int, source: Source = Source.TEXT) -> Round:
    return Round(tuple(range(drafted)), accepted, 7, "", "", "", source if drafted else Source.PLAIN)


def test_each_kind_of_drafter_is_counted_apart_with_its_missed_rounds():
    rounds = [
        a_round(3, 0),
        a_round(3, 3),
        a_round(16, 5),
        a_round(4, 0, Source.MODEL),
        a_round(4, 2, Source.MODEL),
        a_round(8, 0, source=Source.PATTERN),
        a_round(0, 0),
    ]
    tally = Tally()
    for event in rounds:
        tally.add(event)
    counts = {name: (c.drafted, c.kept, c.rounds, c.missed) for name, c in tally.by_source.items()}
    assert counts == {"copy": (22, 8, 3, 1), "model": (8, 2, 2, 1), "pattern": (8, 0, 1, 1)}
    assert tally.missed_copy_rounds == 2  # the model's missed round is not a copy's
    assert [drafted_by(e) for e in rounds] == ["copy", "copy", "copy", "model", "model", "pattern", ""]
