"""The bench's verdict: faster or slower only when the interval says so, rarely on noise alone, and a
real speedup is found; the interval is deterministic."""

from __future__ import annotations

import itertools
import re
from collections import Counter
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from specgen.bench.stats import (
    Interval,
    Spread,
    Stats,
    least_p,
    outcome,
    permutation_p,
    repeats_to_tell,
    speedup_interval,
    summarize,
    verdict,
)
from specgen.bench.view import verdict_line


def _overall(config: str, median: float, low: float, high: float) -> Stats:
    drafting = config != "target"
    interval = Interval(low, high) if drafting else None
    return Stats(
        "overall",
        "all",
        config,
        "model",
        2,
        False,
        3,
        0,
        0,
        0,
        0,
        Spread(median, median, median),
        median / 10,
        interval,
        outcome(interval, 0.01) if drafting else None,
        None,
        0.0,
        0.0,
        (),
        0.0,
        0.0,
        0.0,
        0.0,
        Spread(0.0, 0.0, 0.0),
    )


@pytest.mark.parametrize(
    "others, result",
    [
        ([(14, 1.1, 1.6), (16, 0.9, 2.2)], ("draft-k2", "pays")),
        ([(8, 0.6, 0.9), (9, 0.7, 0.95)], ("draft-k4", "costs")),
        ([(12, 0.9, 1.3), (8, 0.7, 0.9)], ("draft-k2", "noise")),
    ],
)
def test_verdict_calls_faster_only_an_interval_above_one(others, result):
    """The fastest point estimate (16, interval 0.9-2.2) is not the one named when only another is
    clearly faster (each with a permutation test's p of 0.01)."""
    stats = [_overall("target", 10, 1, 1), _overall("draft-k2", *others[0]), _overall("draft-k4", *others[1])]
    found = verdict(stats)
    assert (found.best, found.outcome) == result


def _runs(config: str, rates: np.ndarray) -> list:
    """Records with the given rates by [prompt, repeat] (128 tokens each)."""
    return [
        SimpleNamespace(
            prompt=p, repeat=r, config=config, summary=SimpleNamespace(tokens=128, decode_s=128 / rates[p, r])
        )
        for p in range(rates.shape[0])
        for r in range(rates.shape[1])
    ]


def _outcomes(speedup: float, prompts: int, repeats: int = 4, noise: float = 0.05, trials: int = 200) -> Counter:
    found = Counter()
    for seed in range(trials):
        rng = np.random.default_rng(seed)
        scale = rng.uniform(0.7, 1.3, size=(prompts, 1)) * 20  # prompts differ in speed
        base = scale * (1 + noise * rng.standard_normal((prompts, repeats)))
        other = speedup * scale * (1 + noise * rng.standard_normal((prompts, repeats)))
        mine, theirs = _runs("x", other), _runs("target", base)
        found[outcome(speedup_interval(mine, theirs), permutation_p(mine, theirs))] += 1
    return found


@pytest.mark.parametrize("prompts, repeats", [(1, 2), (1, 3), (1, 4), (2, 2), (4, 1), (4, 4), (24, 3)])
def test_identical_configurations_with_noise_are_rarely_called_faster_or_slower(prompts, repeats):
    """At most 5% of 200 trials, however few the runs: by the bootstrap interval alone one prompt
    run twice each way was called faster or slower in 30% of them, four prompts run once in 24%."""
    found = _outcomes(1.0, prompts, repeats)
    assert found["faster"] + found["slower"] <= 10 + 4, found  # 5%, and two standard deviations of 200 trials


@pytest.mark.parametrize("prompts", [1, 4, 24])
def test_a_real_speedup_of_1_3_is_called_faster(prompts):
    assert _outcomes(1.3, prompts)["faster"] >= 198  # the default four repeats


def test_runs_too_few_to_show_a_difference_are_unclear_whatever_the_interval():
    """One prompt run twice each way, every run of one side 30% faster: the bootstrap's interval
    lies above 1, but only 2 of the 6 ways to split four runs are that far apart (p = 1/3)."""
    rates = np.array([[20.0, 21.0]])
    mine, theirs = _runs("x", rates * 1.3), _runs("target", rates)
    assert speedup_interval(mine, theirs).low > 1.0
    assert 0.3 < permutation_p(mine, theirs) < 0.37
    assert outcome(speedup_interval(mine, theirs), permutation_p(mine, theirs)) == "unclear"
    four = np.array([[20.0, 21.0, 19.0, 20.5]])
    assert permutation_p(_runs("x", four * 1.3), _runs("target", four)) < 0.05  # 2 of 70 splits


def test_the_interval_is_deterministic_and_needs_two_runs():
    rates = np.array([[20.0, 21.0, 19.0]])
    first = speedup_interval(_runs("x", rates * 1.1), _runs("target", rates))
    assert first == speedup_interval(_runs("x", rates * 1.1), _runs("target", rates))
    assert first.low <= 1.1 <= first.high
    assert speedup_interval(_runs("x", rates[:, :1]), _runs("target", rates[:, :1])) is None


def test_a_noise_verdict_whose_interval_excludes_one_says_the_permutation_test_does_not():
    """One prompt run twice each way, 30% faster every time: the interval lies above 1, the
    permutation test's p is about 1/3 (2 of the 6 splits of four runs are that far apart), so the
    verdict is noise, and says why rather than show an interval above 1 as noise unexplained."""
    rates = np.array([[20.0, 21.0]])
    mine, theirs = _runs("x", rates * 1.3), _runs("target", rates)
    interval, p = speedup_interval(mine, theirs), permutation_p(mine, theirs)
    faster = replace(_overall("draft-k2", 26, interval.low, interval.high), outcome=outcome(interval, p), p_value=p)
    found = verdict([_overall("target", 20, 1, 1), faster])
    assert (found.outcome, found.p_value) == ("noise", p)
    line = verdict_line(SimpleNamespace(verdict=found, audits=[], distribution=None))
    shown = re.search(r"its interval excludes 1, but the permutation test does not \(p = ([0-9.]+)\)", line)
    assert shown and 0.3 < float(shown.group(1)) < 0.37
    unclear = verdict([_overall("target", 20, 1, 1), replace(_overall("draft-k2", 12, 0.9, 1.3), outcome="unclear")])
    assert "permutation" not in verdict_line(SimpleNamespace(verdict=unclear, audits=[], distribution=None))


def _all_splits_p(rates: np.ndarray, base: np.ndarray) -> float:
    """The permutation test's p counted over every split of each prompt's runs between the two
    sides (not sampled), its statistic restated here: the mean over prompts of the log ratio of
    the sides' rates, each side's 128-token runs over their summed seconds."""

    def statistic(fast: list[list[float]], slow: list[list[float]]) -> float:
        return float(
            np.mean(
                [
                    np.log(len(f) / sum(128 / x for x in f) / (len(s) / sum(128 / x for x in s)))
                    for f, s in zip(fast, slow, strict=True)
                ]
            )
        )

    prompts, repeats = rates.shape
    pooled = [list(rates[p]) + list(base[p]) for p in range(prompts)]
    observed = abs(statistic([list(r) for r in rates], [list(b) for b in base]))
    ways = list(itertools.combinations(range(2 * repeats), repeats))
    count = total = 0
    for split in itertools.product(ways, repeat=prompts):
        first = [[pooled[p][i] for i in split[p]] for p in range(prompts)]
        second = [[pooled[p][i] for i in range(2 * repeats) if i not in split[p]] for p in range(prompts)]
        count += abs(statistic(first, second)) >= observed * (1 - 1e-9)
        total += 1
    return count / total


@pytest.mark.parametrize("prompts, repeats", [(1, 2), (1, 3), (2, 1), (2, 2), (3, 1), (5, 1), (6, 1)])
def test_the_least_p_is_the_whole_permutation_tests_p_where_every_run_of_one_side_is_faster(prompts, repeats):
    """Every run 1.5x faster, the runs of a side a little apart: counted over every split, the test
    finds exactly the bound, and its sampled p comes within sampling error of it."""
    base = 20.0 + np.arange(prompts * repeats, dtype=float).reshape(prompts, repeats) / 10
    exact = _all_splits_p(base * 1.5, base)
    assert least_p(prompts, repeats) == pytest.approx(exact)
    assert permutation_p(_runs("x", base * 1.5), _runs("target", base)) == pytest.approx(exact, abs=0.035)
    needed = repeats_to_tell(prompts, repeats)
    assert least_p(prompts, needed) < 0.05 and (needed == repeats or least_p(prompts, needed - 1) >= 0.05)


def _bench_stats(rates: np.ndarray, speedup: float) -> list[Stats]:
    """`summarize` over runs of the target alone at `rates` [prompt, repeat] and of auto `speedup` times as fast."""
    configs = [
        SimpleNamespace(name="target", drafter="none", k=0, adaptive=False),
        SimpleNamespace(name="lookup-auto", drafter="prompt-lookup", k=4, adaptive=True),
    ]
    runs = []
    for config, factor in zip(configs, (1.0, speedup), strict=True):
        for (p, r), rate in np.ndenumerate(rates * factor):
            summary = SimpleNamespace(
                tokens=128, rounds=128, drafted=0, accepted=0, decode_s=128 / rate, draft_s=0.0,
                verify_s=128 / rate, other_s=0.0, lookup_rounds=0, model_drafted=0, python_s=0.0,
                constraint_s=0.0, missed_copy_rounds=0, drafted_by_position=(), accepted_by_position=(), prefill_s=0.0,
            )  # fmt: skip
            runs.append(SimpleNamespace(prompt=p, repeat=r, config=config.name, summary=summary))
    prompts = [SimpleNamespace(name=f"p{p}", kind="qa") for p in range(rates.shape[0])]
    return summarize(runs, configs, prompts)


def test_a_bench_whose_runs_are_too_few_for_the_test_says_so_and_the_repeats_it_names_tell():
    """Three prompts run once each way, auto 1.5x as fast every time: the test cannot go under
    p = 2/8, so the verdict tells no result and names --repeats 2; run twice each, it pays."""
    once = np.array([[20.0], [21.0], [19.0]])
    found = verdict(_bench_stats(once, 1.5))
    assert (found.outcome, found.least_p, found.repeats_to_tell) == ("noise", 0.25, 2)
    line = verdict_line(SimpleNamespace(verdict=found, audits=[], distribution=None))
    assert line.startswith("verdict: too few runs to tell; the best, lookup-auto at 1.50×")
    assert "cannot go under p = 0.25 however large the difference; run --repeats 2 or more" in line
    twice = np.array([[20.0, 20.4], [21.0, 21.3], [19.0, 19.5]])
    found = verdict(_bench_stats(twice, 1.5))
    assert found.outcome == "pays"
    assert "is faster than the target alone" in verdict_line(
        SimpleNamespace(verdict=found, audits=[], distribution=None)
    )
