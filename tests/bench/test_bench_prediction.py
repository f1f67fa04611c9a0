"""The bench's predicted speedups from isolated step costs and measured tokens per round (fixed, auto,
draft-auto), and its acceptance-by-position table."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from specgen.bench.stats import (
    length_mix,
    summarize,
)
from specgen.bench.view import positions_table
from specgen.decoding.costs import StepCosts


def _prediction(summary, config, costs, base_tokens=None):
    """The overall prediction for one run of `config` beside a run of the target alone that made
    `base_tokens` tokens (default: as many), one a round."""
    tokens = summary.tokens if base_tokens is None else base_tokens
    base = SimpleNamespace(
        **{
            **vars(summary),
            "tokens": tokens,
            "rounds": tokens,
            "drafted": 0,
            "accepted": 0,
            "model_drafted": 0,
            "drafted_by_position": (),
        }
    )
    runs = [
        SimpleNamespace(prompt=0, repeat=0, config="target", summary=base),
        SimpleNamespace(prompt=0, repeat=0, config=config.name, summary=summary),
    ]
    baseline = SimpleNamespace(name="target", drafter="none", k=0, adaptive=False)
    stats = summarize(runs, [baseline, config], [SimpleNamespace(name="p", kind="p")], costs)
    return next(s for s in stats if s.config == config.name and s.group == "overall").prediction


def test_predicted_speedup_uses_isolated_costs_and_the_measured_tokens_per_round():
    """K = 2, every round drafts 2; position 1 kept 80%, position 2 kept 60% (of all drafted there)."""
    costs = SimpleNamespace(
        verify={1: 0.05, 2: 0.06, 3: 0.08}, draft_step=0.01, verify_cost=lambda n: {1: 0.05, 2: 0.06, 3: 0.08}[n]
    )
    summary = SimpleNamespace(
        tokens=240,
        rounds=100,
        drafted=200,
        accepted=140,
        decode_s=1.0,
        draft_s=0.2,
        verify_s=0.7,
        other_s=0.1,
        lookup_rounds=0,
        model_drafted=200,
        drafted_by_position=(100, 100),
        accepted_by_position=(80, 60),
        prefill_s=0.0,
        python_s=0.01,
        constraint_s=0.0,
        missed_copy_rounds=0,
    )
    p = _prediction(summary, SimpleNamespace(name="draft-k2", drafter="model", k=2, adaptive=False), costs)
    assert p.expected_tokens_per_round == pytest.approx(1 + 0.8 + 0.6)
    assert p.round_cost == pytest.approx(2 * 0.2 + 0.08 / 0.05)
    assert p.speedup == pytest.approx(2.4 / 2.0)
    assert length_mix(10, [8, 3]) == [2, 5, 3]


def test_predicted_speedup_of_auto_counts_the_tokens_its_long_copies_really_made():
    """Half the rounds copy 15 tokens, all kept; half copy 1, never kept. By position alone that
    would read as 50% kept at position 1 and 100% after it; the rounds made 17 and 1 tokens."""
    verify = {1: 0.05, 2: 0.08, 16: 0.2}
    costs = SimpleNamespace(verify=verify, draft_step=None, verify_cost=lambda n: verify.get(n, 1.0))
    summary = SimpleNamespace(
        tokens=50 * 16 + 50 * 1,
        rounds=100,
        drafted=50 * 15 + 50,
        accepted=50 * 15,
        decode_s=1.0,
        draft_s=0.0,
        verify_s=0.9,
        other_s=0.1,
        lookup_rounds=100,
        model_drafted=0,
        drafted_by_position=(100,) + (50,) * 14,
        accepted_by_position=(50,) * 15,
        prefill_s=0.0,
        python_s=0.01,
        constraint_s=0.0,
        missed_copy_rounds=0,
    )
    p = _prediction(
        summary, SimpleNamespace(name="lookup-auto", drafter="lookup", k=8, adaptive=True), costs, base_tokens=850
    )
    assert p.expected_tokens_per_round == pytest.approx(8.5)
    assert p.round_cost == pytest.approx((50 * 0.2 / 0.05 + 50 * 0.08 / 0.05) / 100)
    assert p.speedup == pytest.approx(8.5 / 2.8)


def test_predicted_speedup_of_draft_auto_charges_draft_steps_only_to_the_models_rounds():
    """draft-auto, 100 rounds: 80 plain, 10 where the draft model drafted 2 (one kept), 10 copies of
    8 (all kept). Draft steps cost 0.5 v(1) each, for the model's 20 tokens only."""
    verify = {1: 0.04, 3: 0.06, 9: 0.12}
    costs = SimpleNamespace(verify=verify, draft_step=0.02, verify_cost=lambda n: verify.get(n, 99.0))
    tokens = 80 * 1 + 10 * 2 + 10 * 9
    summary = SimpleNamespace(
        tokens=tokens,
        rounds=100,
        drafted=10 * 2 + 10 * 8,
        accepted=10 + 80,
        decode_s=1.0,
        draft_s=0.1,
        verify_s=0.8,
        other_s=0.1,
        lookup_rounds=10,
        model_drafted=20,
        drafted_by_position=(20, 20) + (10,) * 6,
        accepted_by_position=(20,) + (10,) * 7,
        prefill_s=0.0,
        python_s=0.01,
        constraint_s=0.0,
        missed_copy_rounds=0,
    )
    p = _prediction(summary, SimpleNamespace(name="draft-auto", drafter="model", k=4, adaptive=True), costs)
    cost_in_passes = 80 * 1 + 10 * (0.06 / 0.04 + 2 * 0.5) + 10 * (0.12 / 0.04)
    assert p.round_cost == pytest.approx(cost_in_passes / 100)
    assert p.speedup == pytest.approx(190 / cost_in_passes)


def test_each_prompts_rounds_are_priced_at_the_costs_after_that_prompt():
    """Two prompts, one auto run each: 10 rounds copying 15 tokens (all kept). After the short
    prompt a 16-token pass costs 4 one-token passes; after the long one 6 (as `depth_factors`
    measure there). Overall: 2 x 160 tokens over 10 x 4 + 10 x 6 passes; each prompt its own."""
    short, long = StepCosts({1: 0.05, 16: 0.2}, {}), StepCosts({1: 0.05, 16: 0.3}, {})
    times = {"decode_s": 1.0, "draft_s": 0.0, "verify_s": 0.9, "other_s": 0.1, "prefill_s": 0.0, "python_s": 0.01}
    copies = {"drafted": 150, "accepted": 150, "lookup_rounds": 10, "model_drafted": 0, "missed_copy_rounds": 0}
    by_position = {"drafted_by_position": (10,) * 15, "accepted_by_position": (10,) * 15}
    summary = SimpleNamespace(tokens=160, rounds=10, constraint_s=0.0, **times, **copies, **by_position)
    base = SimpleNamespace(**{**vars(summary), "rounds": 160, "drafted": 0, "accepted": 0, "drafted_by_position": ()})
    runs = [
        SimpleNamespace(prompt=p, repeat=0, config=c, summary=s)
        for p in (0, 1)
        for c, s in (("target", base), ("lookup-auto", summary))
    ]
    configs = [
        SimpleNamespace(name="target", drafter="none", k=0, adaptive=False),
        SimpleNamespace(name="lookup-auto", drafter="lookup", k=8, adaptive=True),
    ]
    prompts = [SimpleNamespace(name="short", kind="a"), SimpleNamespace(name="long", kind="b")]
    stats = summarize(runs, configs, prompts, short, (short, long))
    predicted = {s.key: s.prediction.speedup for s in stats if s.config == "lookup-auto"}
    assert predicted == pytest.approx(
        {"short": 160 / 40, "long": 160 / 60, "a": 160 / 40, "b": 160 / 60, "all": 320 / 100}
    )
    calibrated = {s.key: s.prediction.speedup for s in summarize(runs, configs, prompts, short) if s.prediction}
    assert calibrated["long"] == pytest.approx(160 / 40)  # without them, every prompt at the calibration


def test_acceptance_by_position_shows_long_copies_in_spans_weighted_by_what_was_drafted():
    """20 positions: #1-#4, then 5-8, 9-16 and 17-20 as spans; a span's rate is kept / drafted."""
    rates = (0.9, 0.8, 0.7, 0.6) + (1.0, 0.5, 0.5, 0.5) + (1.0,) * 8 + (0.25,) * 4
    drafted = (100, 90, 80, 70) + (10, 30, 30, 30) + (5,) * 8 + (4,) * 4
    stats = SimpleNamespace(
        group="overall", config="lookup-auto", drafted=1, acceptance_by_position=rates, drafted_by_position=drafted
    )
    table = positions_table(SimpleNamespace(stats=[stats]))
    assert [c.header for c in table.columns] == ["config", "#1", "#2", "#3", "#4", "#5-8", "#9-16", "#17-32"]
    cells = [next(iter(c.cells)) for c in table.columns]
    assert cells[1:] == ["90%", "80%", "70%", "60%", f"{(10 + 45) / 100:.0%}", "100%", "25%"]
