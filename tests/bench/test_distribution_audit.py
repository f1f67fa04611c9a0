"""The distribution audit: real sampled runs on the tiny models pass it; a drafter that lies fails it."""

from __future__ import annotations

import io
import math
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from specgen.bench.audit import chi2_sf, distribution_audit, pooled_table, position_test
from specgen.bench.plan import Plan, configurations, make_drafter
from specgen.bench.prompts import read_prompt_files
from specgen.bench.view import distribution_lines
from specgen.decoding.drafters.model import ModelDrafter
from specgen.decoding.sampling import Dist, SamplingParams
from specgen.llama.model import LoadOptions, Model

PROMPTS = '{"prompt": "def add(a, b):"}\n{"prompt": "the print of self"}\n'


class LyingDrafter(ModelDrafter):
    """Samples from a sharpened q (temperature / 4) but reports the q of the real temperature."""

    def propose(self, history, last, k, params, draws, keep=None):
        sharp = replace(params, temperature=params.temperature / 4)
        draft = super().propose(history, last, k, sharp, draws, keep)
        claimed = []
        for q in draft.q:
            flat = np.power(q.probs.astype(np.float64), 0.25)
            claimed.append(Dist((flat / flat.sum()).astype(np.float32), q.ids))
        return replace(draft, q=claimed)


@pytest.fixture(scope="module")
def pair(tiny_models):
    with (
        Model(tiny_models["target"], LoadOptions(n_ctx=256, n_threads=1)) as target,
        Model(tiny_models["draft"], LoadOptions(n_ctx=256, n_threads=1)) as draft,
    ):
        yield target, draft


def audit(pair, make, sampling, k=(3,), lookup=True, seeds=200):
    target, draft = pair
    prompts = [target.tokenize(p.text, True, False) for p in read_prompt_files(["-"], io.StringIO(PROMPTS))]
    plan = Plan(configurations(k, True, lookup), 8, 1, 0, sampling, audit_seeds=seeds, audit_tokens=5)
    return distribution_audit(target, draft, prompts, plan, make)


@pytest.mark.parametrize("sampling", [SamplingParams(1.0, seed=11), SamplingParams(0.8, top_k=12, top_p=0.9, seed=5)])
def test_the_real_loop_passes_at_every_position(pair, sampling):
    result = audit(pair, make_drafter, sampling, k=(3, "auto"))
    assert result.passed and not result.failed(), [(c.config, c.p_value) for c in result.checks]
    assert [c.config for c in result.checks] == ["draft-k3", "draft-auto", "lookup-k3"] * 2
    assert all(len(c.positions) == 5 and c.seeds == 200 for c in result.checks)
    assert any(t.df >= 2 for c in result.checks for t in c.positions), "the samples must spread over tokens"


def test_a_drafter_whose_q_rows_lie_fails(pair):
    def lying(config, target, draft):
        return LyingDrafter(draft) if config.drafter == "model" else make_drafter(config, target, draft)

    result = audit(pair, lying, SamplingParams(1.0, seed=11), lookup=False)
    assert not result.passed and result.p_value < 1e-3
    assert {c.config for c in result.failed()} == {"draft-k3"}


def test_failure_lines_name_the_configuration_and_position(pair):
    def lying(config, target, draft):
        return LyingDrafter(draft) if config.drafter == "model" else None

    result = audit(pair, lying, SamplingParams(1.0, seed=3), lookup=False, seeds=120)

    class Shown:
        distribution = result
        prompts = read_prompt_files(["-"], io.StringIO(PROMPTS))

    lines = distribution_lines(Shown)
    assert lines[0].startswith("distribution: FAIL at the 0.001 level")
    assert any("draft-k3 on stdin:" in line and "at token" in line for line in lines[1:])


def test_chi_square_tail_matches_known_values():
    assert chi2_sf(3.841458820694124, 1) == pytest.approx(0.05, rel=1e-9)
    assert chi2_sf(18.307038053275146, 10) == pytest.approx(0.05, rel=1e-9)
    assert chi2_sf(9.0, 2) == pytest.approx(math.exp(-4.5), rel=1e-12)
    assert chi2_sf(0.5, 7) == pytest.approx(0.9994, abs=1e-4)
    assert chi2_sf(200.0, 3) < 1e-40 and chi2_sf(0.0, 3) == 1.0


def test_rare_tokens_are_pooled_and_equal_samples_pass():
    table = pooled_table(Counter({1: 50, 2: 3, 3: 2, 4: 1}), Counter({1: 45, 2: 4, 3: 1, 5: 1}))
    assert table == [(50, 45), (6, 6)]
    assert pooled_table(Counter({1: 50, 2: 2}), Counter({1: 50, 3: 1})) == [(52, 51)]
    same = position_test(0, [1] * 60 + [2] * 40, [2] * 40 + [1] * 60)
    assert same.statistic == 0.0 and same.p_value == 1.0
    apart = position_test(0, [1] * 80 + [2] * 20, [1] * 20 + [2] * 80)
    assert apart.df == 1 and apart.p_value < 1e-15
