"""The step costs' arithmetic on hand-made tables: interpolation between timed sizes and the most a
copy kept whole can gain."""

from __future__ import annotations

import pytest

from specgen.decoding.costs import RoundCosts, StepCosts
from specgen.decoding.drafters.base import Source

# a CPU-like curve: 4 tokens for twice one token, 16 for ten times, 64 for twenty
CURVE = {1: 0.1, 4: 0.2, 16: 1.0, 64: 2.0}


def test_sizes_between_timed_ones_are_interpolated_and_past_the_largest_priced_per_token():
    costs = StepCosts(CURVE, {})
    assert costs.verify_cost(10) == pytest.approx(0.2 + 0.8 * 6 / 12)
    assert costs.verify_cost(128) == pytest.approx(4.0)
    assert costs.verify_cost(16) == 1.0  # a timed size as measured


def test_the_table_of_every_length_reads_each_size_as_interpolated_and_size_zero_as_one():
    """By hand: 0.1 s for sizes 0 and 1, then a third of 0.1 s more per token up to 4 (0.2 s);
    past 64 tokens, 2.0 s / 64 a token."""
    costs = StepCosts(CURVE, {})
    assert costs.verify_table(4) == pytest.approx((0.1, 0.1, 0.1 + 0.1 / 3, 0.1 + 0.2 / 3, 0.2))
    assert costs.verify_table(66)[65] == pytest.approx(2.0 * 65 / 64)
    assert costs.verify_table(4) is costs.verify_table(4)  # made once, then looked up


def test_a_copys_lengths_are_priced_with_the_switch_and_the_time_factor_of_their_pass_size():
    """By hand, passes of 2, 3 and 4 tokens cost 1.2, 1.4 and 1.6 s, another size than the last
    0.5 s more. Untimed, a copy takes plain decoding's factor (one round 2x slow: 1 + 0.15 x 1).
    A timed 2-token pass 3x slow gives that size 1.15 + 0.15 x 1.85 = 1.4275; a 3-token pass
    at 0.5x then gives its size and the sizes not yet timed 1.4275 - 0.15 x 0.9275 = 1.288375."""
    rounds = RoundCosts(StepCosts({1: 1.0, 2: 1.2, 4: 1.6}, {}, switch=0.5), timed=True)
    rounds.passed(3)
    rounds.timed_round(Source.PLAIN, 0, 2.0, 1.0)
    assert _flat(rounds.copy_costs(3)) == pytest.approx([1.7, 1.15, 1.4, 1.15, 2.1, 1.15])
    rounds.timed_round(Source.LOOKUP, 1, 3.0, 1.0)
    rounds.timed_round(Source.LOOKUP, 2, 0.5, 1.0)
    assert _flat(rounds.copy_costs(3)) == pytest.approx([1.7, 1.4275, 1.4, 1.288375, 2.1, 1.288375])


def _flat(pairs: list[tuple[float, float]]) -> list[float]:
    return [x for pair in pairs for x in pair]


def test_the_copy_ceiling_is_the_best_batch_kept_whole():
    """By hand: 64 tokens in 2.0 s against 64 passes of 0.1 s is 3.2x, the best up to 64; up to
    16 the best is 4 tokens in 0.2 s against 0.4 s, 2x (5 tokens cost 0.267 s: 1.875x); on a
    flat curve every token of the longest batch is free."""
    costs = StepCosts(CURVE, {})
    assert costs.copy_ceiling(64) == (64, pytest.approx(3.2))
    assert costs.copy_ceiling(16) == (4, pytest.approx(2.0))
    assert StepCosts({1: 0.01, 64: 0.01}, {}).copy_ceiling(64) == (64, pytest.approx(64.0))


def test_costs_after_a_context_scale_each_size_by_its_factor_and_hold_the_last_past_it():
    """Factors 1.5 at 4 tokens and 2 at 16 (a pass after a long context): by hand, 4 tokens 0.3 s,
    16 tokens 2.0 s, 64 tokens 2.0 x 2 = 4.0 s (16's factor held, not extrapolated), 10 tokens
    between 4's and 16's new costs; the ceiling falls from 3.2x to 1.6x (64 in 4.0 s against 6.4 s)."""
    deep = StepCosts(CURVE, {}).scaled({1: 1.0, 4: 1.5, 16: 2.0})
    assert deep.verify == pytest.approx({1: 0.1, 4: 0.3, 16: 2.0, 64: 4.0})
    assert deep.verify_cost(10) == pytest.approx(0.3 + 1.7 * 6 / 12)
    assert deep.copy_ceiling(64) == (64, pytest.approx(1.6))
    assert StepCosts(CURVE, {}).scaled({}) == StepCosts(CURVE, {})
