"""The calibration's costs where the machine's pace changes while it measures (`calibrate.time_passes`):
timed on the real tiny model with a fake clock whose planted prices slow down for a few passes,
or drift pass by pass, as a shared CPU does. What the policy weighs is each size's cost against
a one-token pass's, so that ratio must come out as planted."""

from __future__ import annotations

import pytest
from fakeclock import PricedModel, fake_clock

from specgen.llama.calibrate import time_passes

SIZES = (1, 2, 4, 8, 16)
SLOW = 1.8  # planted: how much slower every pass is during a slow spell
SPELL = 3  # planted: passes a slow spell lasts
DRIFT = 0.01  # planted: how much slower each pass is than the one before


def _price(n: int) -> float:
    """Seconds of an n-token pass at the machine's usual pace: like a CPU's, nearly linear, so
    that the larger sizes run once in a row (over `calibrate._STEADY_S`)."""
    return 0.01 + 0.015 * n


class _Pace:
    """A pace that changes with each pass: `slowdown(i)` is how much slower the i-th pass runs."""

    def __init__(self, slowdown) -> None:
        self.slowdown, self.passes = slowdown, 0

    def price(self, n: int) -> float:
        self.passes += 1
        return _price(n) * self.slowdown(self.passes - 1)


def _ratios(steady: dict[int, float]) -> dict[int, float]:
    return {n: seconds / steady[1] for n, seconds in steady.items()}


PLANTED = {n: _price(n) / _price(1) for n in SIZES}


def _calibrate(target_model, clock, pace: _Pace) -> dict[int, float]:
    return time_passes(PricedModel(target_model, clock, price=pace.price), SIZES)[0]


def test_a_slow_spell_anywhere_in_the_calibration_moves_no_size(target_model, monkeypatch):
    """A spell of `SPELL` passes at `SLOW` times the cost, started at every pass in turn: each
    size's cost against a one-token pass's is the planted one, and so is the one-token cost."""
    target_model.sync(target_model.tokenize("def add(a, b):", add_special=True, parse_special=False))
    clock = fake_clock(monkeypatch)
    steady_pace = _Pace(lambda i: 1.0)
    _calibrate(target_model, clock, steady_pace)
    assert steady_pace.passes > 3 * len(SIZES)  # each size timed in several sweeps
    for start in range(steady_pace.passes):
        pace = _Pace(lambda i, start=start: SLOW if start <= i < start + SPELL else 1.0)
        steady = _calibrate(target_model, clock, pace)
        assert _ratios(steady) == pytest.approx(PLANTED, rel=1e-6), start
        assert steady[1] == pytest.approx(_price(1), rel=1e-6), start


def test_a_machine_that_slows_pass_by_pass_keeps_each_size_in_proportion(target_model, monkeypatch):
    """Each pass `DRIFT` slower than the one before: against the one-token pass just before it,
    a size's cost is off by a few passes' drift at most, where one measured apart from it would
    be off by the drift of the whole calibration."""
    target_model.sync(target_model.tokenize("def add(a, b):", add_special=True, parse_special=False))
    clock = fake_clock(monkeypatch)
    pace = _Pace(lambda i: (1.0 + DRIFT) ** i)
    steady = _calibrate(target_model, clock, pace)
    assert pace.passes * DRIFT > 0.3  # the calibration drifts by more than 30% from start to end
    assert _ratios(steady) == pytest.approx(PLANTED, rel=0.05)
