"""What a pass after a prompt costs against a one-token pass there (`calibrate.depth_factors`),
timed on the real tiny model with a fake clock whose planted prices grow with the context."""

from __future__ import annotations

import pytest
from fakeclock import PricedModel, fake_clock, pass_price

from specgen.decoding.costs import StepCosts
from specgen.llama.calibrate import DEPTH_MIN, DEPTH_SIZES, depth_factors

ATTEND = 2e-6  # planted: seconds a pass costs more per row and per token of context before it
SWITCH = 0.003  # planted: what a pass after one of another size costs more


def _calibration() -> StepCosts:
    """The costs after an empty cache: the planted prices at depth 0, with the planted switch."""
    return StepCosts({n: pass_price(n) for n in (1, *DEPTH_SIZES)}, {}, SWITCH)


def _context(target_model, tokens: int) -> list[int]:
    words = target_model.tokenize("def add(a, b):\n    return a + b\n" * 40, add_special=True, parse_special=False)
    return (words * (tokens // len(words) + 1))[:tokens]


def test_factors_are_how_much_dearer_each_size_is_after_the_context_than_calibrated(target_model, monkeypatch):
    """By hand: after d tokens an n-token pass costs p(n) + d n a, so against a one-token pass
    there it costs (p(n) + d n a) / (p(1) + d a) where the calibration says p(n) / p(1); the
    switch every timed pass pays is taken off."""
    clock = fake_clock(monkeypatch)
    context = _context(target_model, 300)
    target_model.sync(context)

    def price(n: int) -> float:  # after the pass, the cache holds its n tokens too
        return pass_price(n) + (len(target_model.tokens) - n) * n * ATTEND

    factors = depth_factors(PricedModel(target_model, clock, switch=SWITCH, price=price), _calibration())
    d = len(context)
    expected = {
        n: (pass_price(n) + d * n * ATTEND) / (pass_price(1) + d * ATTEND) / (pass_price(n) / pass_price(1))
        for n in (1, *DEPTH_SIZES)
    }
    assert factors == pytest.approx(expected)
    assert factors[64] > factors[16] > factors[4] > 1.0
    assert target_model.tokens == context  # every timed pass was rolled back


def test_a_short_prompt_is_priced_as_calibrated_and_times_nothing(target_model, monkeypatch):
    clock = fake_clock(monkeypatch)
    context = _context(target_model, DEPTH_MIN - 1)
    target_model.sync(context)
    assert depth_factors(PricedModel(target_model, clock, switch=SWITCH), _calibration()) == {}
    assert clock.seconds == 0.0 and target_model.tokens == context
