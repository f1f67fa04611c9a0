"""The adaptive draft length: decisions on given costs and acceptance, and exactness end to end."""

from __future__ import annotations

import pytest

from specgen.adaptive import AdaptivePlanner, Plan
from specgen.drafters import ModelDrafter
from specgen.speculative import GenerationConfig, Summary, generate


def planner_with(acceptance: float, draft_step: float, verify: dict[int, float]) -> AdaptivePlanner:
    planner = AdaptivePlanner(8)
    for size, seconds in verify.items():
        planner.record_costs(size, seconds, 0, 0.0)
    planner.draft_step = draft_step
    planner.kept = [acceptance * 1000] * 8
    planner.reached = [1000.0] * 8
    return planner


CHEAP_VERIFY = {n: 0.050 * (1 + 0.1 * (n - 1)) for n in range(1, 10)}  # a GPU-like flat verify
STEEP_VERIFY = {n: 0.050 * n for n in range(1, 10)}  # verify cost grows like n single steps


def test_high_acceptance_and_cheap_steps_draft_long():
    k, speed = planner_with(0.9, 0.005, CHEAP_VERIFY).best_model_k()
    assert k >= 6 and speed > 2 / 0.05  # more than twice plain decoding


def test_low_acceptance_turns_drafting_off():
    assert planner_with(0.2, 0.02, STEEP_VERIFY).best_model_k()[0] == 0
    assert planner_with(0.2, 0.02, STEEP_VERIFY).plan(0) == Plan(0)


def test_expected_tokens_follow_leviathan():
    planner = AdaptivePlanner(8)
    alpha, k = 0.8, 4
    assert planner.expected_tokens(k, [alpha] * k) == pytest.approx((1 - alpha ** (k + 1)) / (1 - alpha))


def test_plain_rounds_explore_again_now_and_then():
    planner = planner_with(0.2, 0.02, CHEAP_VERIFY)
    plans = [planner.plan(0) for _ in range(60)]
    assert Plan(2) in plans and plans.count(Plan(0)) > 50


def test_no_exploration_when_even_perfect_acceptance_would_lose():
    planner = planner_with(0.2, 0.04, STEEP_VERIFY)  # draft step 0.8 of a target step, verify linear
    assert planner.best_model_k(perfect=True)[0] == 0
    assert all(planner.plan(0) == Plan(0) for _ in range(100))


def test_confidence_gate_drops_unsure_tokens_when_verify_is_steep():
    planner = planner_with(0.7, 0.01, STEEP_VERIFY)
    planner.plan(0)
    assert planner.keep(0, 0.95)
    assert not planner.keep(1, 0.02)
    cheap = planner_with(0.7, 0.01, CHEAP_VERIFY)
    cheap.plan(0)
    assert cheap.keep(0, 0.95) and cheap.keep(1, 0.5)


def test_lookup_wins_when_it_is_reliable():
    planner = planner_with(0.5, 0.02, CHEAP_VERIFY)
    planner.lookup_kept, planner.lookup_reached = 95.0, 100.0
    assert planner.plan(6) == Plan(6, lookup=True)
    planner.lookup_kept = 5.0
    assert not planner.plan(6).lookup


def test_unmeasured_verify_sizes_are_interpolated():
    planner = AdaptivePlanner(8)
    planner.record_costs(1, 0.05, 0, 0.0)
    planner.record_costs(5, 0.09, 0, 0.0)
    assert planner.verify_cost(3) == pytest.approx(0.07)
    assert planner.verify_cost(7) > 0.09


def test_learning_counts_only_judged_positions():
    planner = AdaptivePlanner(8)
    before = list(planner.reached)
    planner.record_model_round([0.9, 0.8, 0.3, 0.2], accepted=1)  # kept one, rejected the second
    assert [r - b for r, b in zip(planner.reached, before)][:4] == [1, 1, 0, 0]


@pytest.mark.parametrize("prompt", ["def add(a, b):", "x = 1\nfor i in", "a b c d a b c d a b"])
def test_auto_is_exact_at_temperature_zero(target_model, draft_model, prompt):
    tokens = target_model.tokenize(prompt, add_special=True, parse_special=False)

    def run(drafter, config):
        events = list(generate(target_model, drafter, tokens, config))
        out = [t for e in events[:-1] for t in (*e.drafted[: e.accepted], *([e.token] if e.token is not None else []))]
        return out, events[-1]

    plain, _ = run(None, GenerationConfig(max_tokens=60))
    auto, summary = run(ModelDrafter(draft_model), GenerationConfig(max_tokens=60, draft_tokens=8, adaptive=True))
    assert auto == plain
    assert isinstance(summary, Summary) and summary.mode == "speculative (auto)"
