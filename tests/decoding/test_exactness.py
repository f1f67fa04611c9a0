"""Sampled output follows the target alone's distribution, for every drafter, K, transform and
the auto policy, at several positions; and a planted bias makes the same test fail.

Real llama.cpp on the tiny models: for each configuration, the first three tokens of many
seeded generations are compared with as many from the target alone, position by position and
the first two jointly (chi-square two-sample tests, Bonferroni over the positions).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from recording import RecordingAutoDrafter
from stathelp import position_pvalues

from specgen.decoding.auto import AutoDrafter
from specgen.decoding.costs import StepCosts
from specgen.decoding.drafters.base import MODEL, Draft
from specgen.decoding.drafters.lookup import PromptLookupDrafter
from specgen.decoding.drafters.model import ModelDrafter
from specgen.decoding.loop import GenerationConfig, generate
from specgen.decoding.policy import Policy
from specgen.decoding.sampling import SamplingParams, distribution, sample

N = 1200
DEPTH = 3
ALPHA = 0.001
PROMPT = "the print of self"
REPEATING = "a b c a b c a b c a b"
TOP_K = SamplingParams(temperature=1.0, top_k=8)
TOP_P = SamplingParams(temperature=0.9, top_p=0.9)


def first_tokens(target, drafter, text: str, params: SamplingParams, k: int, seeds: range) -> list[tuple[int, ...]]:
    prompt = target.tokenize(text, add_special=True, parse_special=False)
    out = []
    for seed in seeds:
        config = GenerationConfig(DEPTH, k, SamplingParams(params.temperature, params.top_k, params.top_p, seed))
        events = list(generate(target, drafter, prompt, config))[:-1]
        out.append(tuple(t for event in events for t in event.tokens))
    return out


_baselines: dict = {}


def baseline(target, text: str, params: SamplingParams) -> list[tuple[int, ...]]:
    key = (text, params)
    if key not in _baselines:
        _baselines[key] = first_tokens(target, None, text, params, 0, range(10**6, 10**6 + N))
    return _baselines[key]


def same_distribution(target, drafter, text, params, k) -> tuple[bool, list[float]]:
    pvalues = position_pvalues(first_tokens(target, drafter, text, params, k, range(N)), baseline(target, text, params))
    return min(pvalues) > ALPHA / len(pvalues), pvalues


# A GPU-like profile (flat verify, cheap draft steps) makes the policy draft long; a steeper one
# makes its confidence gate drop unsure tokens. Untimed, so the decisions are reproducible.
FLAT = StepCosts({1: 1.0, 2: 1.02, 4: 1.05, 8: 1.1}, {1: 0.1, 8: 0.3})
STEEP = StepCosts({1: 1.0, 2: 1.5, 4: 2.5, 8: 4.5}, {1: 0.01, 8: 0.05})


@pytest.mark.parametrize("k, params", [(1, TOP_K), (3, TOP_K), (4, TOP_P)], ids=["k1-topk", "k3-topk", "k4-topp"])
def test_draft_model_samples_the_target_distribution(target_model, draft_model, k, params):
    ok, pvalues = same_distribution(target_model, ModelDrafter(draft_model), PROMPT, params, k)
    assert ok, pvalues


def test_prompt_lookup_samples_the_target_distribution(target_model):
    drafter = PromptLookupDrafter()
    ok, pvalues = same_distribution(target_model, drafter, REPEATING, TOP_K, 3)
    assert ok, pvalues


@pytest.mark.parametrize("costs, gated", [(FLAT, False), (STEEP, True)], ids=["drafting", "gating"])
def test_auto_policy_samples_the_target_distribution(target_model, draft_model, costs, gated):
    drafter = RecordingAutoDrafter(ModelDrafter(draft_model), Policy(costs, 4, timed=False))
    ok, pvalues = same_distribution(target_model, drafter, PROMPT, TOP_K, 4)
    assert ok, pvalues
    model_rounds = [d for d in drafter.drafts if d.source == MODEL]
    assert len(model_rounds) > N // 2, "the policy should have drafted with the model"
    stopped = sum(d.dropped is not None for d in model_rounds)
    assert (stopped > len(model_rounds) // 10) if gated else max(len(d.tokens) for d in model_rounds) >= 2


class ThresholdAfterSampling(ModelDrafter):
    """A biased gate: draw the token, then drop it when its own probability is low."""

    def propose(self, history, last, k, params, draws, keep=None):
        model = self.model
        feed = [*history[len(model.tokens) :], last]
        tokens, rows = [], []
        for position in range(k):
            q = distribution(model.forward(feed, all_logits=False)[0], params)
            token = sample(q, draws[position][0])
            if q.prob(token) < 0.2:
                break
            tokens.append(token)
            rows.append(q)
            feed = [token]
        return Draft(tokens, rows, source=MODEL)


def test_a_planted_bias_fails_the_same_test(target_model, draft_model):
    ok, pvalues = same_distribution(target_model, ThresholdAfterSampling(draft_model), PROMPT, TOP_K, 3)
    assert not ok, pvalues


def test_first_position_acceptance_is_the_p_q_rule(target_model, draft_model):
    """Acceptance at the first position is sum(min(p, q)) (the p/q rule), not sum(p*q) (match only)."""
    prompt = target_model.tokenize(PROMPT, add_special=True, parse_special=False)
    target_model.sync(prompt[:-1])
    p = distribution(target_model.forward([prompt[-1]], all_logits=True)[0], TOP_K).at(np.arange(target_model.n_vocab))
    draft_model.sync(prompt[:-1])
    q = distribution(draft_model.forward([prompt[-1]], all_logits=False)[0], TOP_K).at(np.arange(target_model.n_vocab))
    draft_model.truncate(len(prompt) - 1)
    n, accepted = 3000, 0
    for seed in range(n):
        config = GenerationConfig(2, 1, SamplingParams(1.0, 8, 1.0, seed))
        first = next(generate(target_model, ModelDrafter(draft_model), prompt, config))
        accepted += first.accepted
    alpha, match_only = np.minimum(p, q).sum(), (p * q).sum()
    sigma = np.sqrt(alpha * (1 - alpha) / n)
    assert abs(accepted / n - alpha) < 4 * sigma
    assert abs(match_only - alpha) > 8 * sigma, "the fixture must tell the p/q rule from a match-only rule"


def test_a_seed_reproduces_the_text_for_fixed_k_and_for_auto(target_model, draft_model):
    prompt = target_model.tokenize("a b c a b c a b c a b", add_special=True, parse_special=False)

    def text(k, auto):
        config = GenerationConfig(30, k, SamplingParams(0.9, 0, 0.95, 7))
        drafter = AutoDrafter(ModelDrafter(draft_model), Policy(FLAT, k, timed=False, risk=math.inf)) if auto \
            else ModelDrafter(draft_model)
        events = list(generate(target_model, drafter, prompt, config))[:-1]
        return [t for e in events for t in e.tokens], {e.source for e in events}

    assert text(3, False) == text(3, False)
    auto, sources = text(4, True)
    assert (auto, sources) == text(4, True)
    assert {"model", "lookup"} <= sources, "seeded auto must be reproducible through model and copy rounds"
