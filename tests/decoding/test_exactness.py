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
from specgen.decoding.drafters.base import NO_DRAFT, Draft, Source
from specgen.decoding.drafters.lookup import PromptLookupDrafter
from specgen.decoding.drafters.model import ModelDrafter
from specgen.decoding.events import Round
from specgen.decoding.loop import GenerationConfig, generate
from specgen.decoding.policy import Policy
from specgen.decoding.sampling import SamplingParams, distribution, one_hot, sample

N = 1200
DEPTH = 3
ALPHA = 0.001
PROMPT = "the print of self"
REPEATING = "a b c a b c a b c a b"
TOP_K = SamplingParams(temperature=1.0, top_k=8)
TOP_P = SamplingParams(temperature=0.9, top_p=0.9)


def encoded(target, text: str | tuple[int, ...]) -> list[int]:
    """A prompt's tokens: a text tokenized, or tokens as given."""
    return list(text) if isinstance(text, tuple) else target.tokenize(text, add_special=True, parse_special=False)


def generations(
    target, drafter, text: str | tuple[int, ...], params: SamplingParams, k: int, seeds: range, depth: int = DEPTH
) -> list[list[Round]]:
    """The rounds of one seeded generation of `depth` tokens per seed."""
    prompt = encoded(target, text)
    out = []
    for seed in seeds:
        config = GenerationConfig(depth, k, SamplingParams(params.temperature, params.top_k, params.top_p, seed))
        out.append(list(generate(target, drafter, prompt, config))[:-1])
    return out


def padded(runs: list[list[Round]], depth: int = DEPTH) -> list[tuple[int, ...]]:
    """The tokens of each generation, padded with -1 where it ended early."""
    return [tuple([t for event in rounds for t in event.tokens] + [-1] * depth)[:depth] for rounds in runs]


def first_tokens(
    target, drafter, text: str | tuple[int, ...], params: SamplingParams, k: int, seeds: range, depth: int = DEPTH
) -> list[tuple[int, ...]]:
    return padded(generations(target, drafter, text, params, k, seeds, depth), depth)


_baselines: dict = {}


def baseline(target, text: str | tuple[int, ...], params: SamplingParams, depth: int = DEPTH) -> list[tuple[int, ...]]:
    key = (text, params, depth)
    if key not in _baselines:
        _baselines[key] = first_tokens(target, None, text, params, 0, range(10**6, 10**6 + N), depth)
    return _baselines[key]


def same_distribution(target, drafter, text, params, k, depth: int = DEPTH) -> tuple[bool, list[float]]:
    pvalues = position_pvalues(
        first_tokens(target, drafter, text, params, k, range(N), depth), baseline(target, text, params, depth)
    )
    return min(pvalues) > ALPHA / len(pvalues), pvalues


# A GPU-like profile (flat verify, cheap draft steps) makes the policy draft long; a steeper one
# makes its confidence gate drop unsure tokens. Untimed, so the decisions are reproducible.
FLAT = StepCosts({1: 1.0, 2: 1.02, 4: 1.05, 8: 1.1}, {1: 0.1, 8: 0.3})
STEEP = StepCosts({1: 1.0, 2: 1.5, 4: 2.5, 8: 4.5}, {1: 0.01, 8: 0.05})


@pytest.mark.parametrize("k, params", [(1, TOP_K), (3, TOP_K), (4, TOP_P)], ids=["k1-topk", "k3-topk", "k4-topp"])
def test_draft_model_samples_the_target_distribution(target_model, draft_model, k, params):
    ok, pvalues = same_distribution(target_model, ModelDrafter(draft_model), PROMPT, params, k)
    assert ok, pvalues


def kept_a_copy(rounds: list[Round]) -> bool:
    """Whether a round of this generation drafted a copy and the target kept some of it."""
    return any(event.source.copied and event.drafted and event.accepted > 0 for event in rounds)


def copy_prompt(target) -> tuple[int, ...]:
    """REPEATING, the target's greedy next token after it, then REPEATING again: the prompt ends
    as it began, so the copy drafter offers that token, one the target samples often."""
    first = encoded(target, REPEATING)
    events = list(generate(target, None, first, GenerationConfig(1, 0)))
    greedy = events[0].token
    return (*first, greedy, *first[1:])


def test_prompt_lookup_samples_the_target_distribution_with_copies_kept(target_model):
    """The copy drafter's rounds follow the target's distribution, and they are copy rounds:
    in more than a quarter of the generations a copied token was drafted and kept."""
    prompt = copy_prompt(target_model)
    runs = generations(target_model, PromptLookupDrafter(), prompt, TOP_K, 3, range(N))
    pvalues = position_pvalues(padded(runs), baseline(target_model, prompt, TOP_K))
    assert min(pvalues) > ALPHA / len(pvalues), pvalues
    copied = sum(kept_a_copy(rounds) for rounds in runs)
    assert copied > N // 4, f"only {copied} of {N} generations kept a copied token"


@pytest.mark.parametrize("costs, gated", [(FLAT, False), (STEEP, True)], ids=["drafting", "gating"])
def test_auto_policy_samples_the_target_distribution(target_model, draft_model, costs, gated):
    drafter = RecordingAutoDrafter(ModelDrafter(draft_model), Policy(costs, 4, timed=False))
    ok, pvalues = same_distribution(target_model, drafter, PROMPT, TOP_K, 4, DEPTH + 1)  # auto drafts from the second
    assert ok, pvalues
    model_rounds = [d for d in drafter.drafts if d.source == Source.MODEL]
    assert len(model_rounds) > N // 2, "the policy should have drafted with the model"
    stopped = sum(d.dropped is not None for d in model_rounds)
    assert (stopped > len(model_rounds) // 10) if gated else max(len(d.tokens) for d in model_rounds) >= 2


REACH = 6  # output positions of the tests below: far enough that rejections send drafts back over them


def redrafted(rounds: list[Round]) -> bool:
    """Whether the draft model drafted again a position that an earlier round's draft model had
    drafted and the target had then left unsettled (it rejected an earlier token)."""
    written = drafted_to = 0
    for event in rounds:
        if event.source == Source.MODEL and event.drafted:
            if written < drafted_to:
                return True
            drafted_to = written + len(event.drafted)
        written += len(event.tokens)
    return False


def test_auto_with_the_draft_model_samples_the_target_distribution_past_rejections(target_model, draft_model):
    """Sampled auto with the draft model: each round's draft numbers are its own, so a choice
    made from earlier rounds (K, the model or not, where the gate stops) is independent of the
    numbers that draw the redrafted positions' tokens."""
    drafter = RecordingAutoDrafter(ModelDrafter(draft_model), Policy(FLAT, 4, timed=False))
    runs = generations(target_model, drafter, PROMPT, TOP_K, 4, range(N), REACH)
    pvalues = position_pvalues(padded(runs, REACH), baseline(target_model, PROMPT, TOP_K, REACH))
    assert min(pvalues) > ALPHA / len(pvalues), pvalues
    assert sum(redrafted(rounds) for rounds in runs) > N // 4, "rejections should send drafts back over positions"


UNDER = 0.8  # a redraft is made only from numbers under this: never from the top fifth of q's cumulative sum
REFUSED = 0  # a token the target never samples under TOP_K here (it is outside every top 8)


class RedraftChooser(ModelDrafter):
    """A planted dependency. Where it drafts a position for the first time it leads with REFUSED
    (copied, so q is one-hot: exact), which sends the next round back over the model's tokens
    after it; there it drafts again only the positions (as many as come in a row) whose token it
    drew with a number under UNDER, and nothing otherwise. With `reuse`, it draws with numbers
    keyed by output position alone (the loop's scheme before each round had its own): a redraft
    then uses the very number its choice was made from. On the loop's own numbers the same
    choice is harmless."""

    def __init__(self, model, reuse: bool):
        super().__init__(model)
        self.reuse, self.redrafts = reuse, 0

    def prepare(self, prefix, prefill=True):
        super().prepare(prefix, prefill)
        self.prompt_length, self.drawn = len(prefix) + 1, {}

    def propose(self, history, last, k, params, draws, keep=None):
        position = len(history) + 1 - self.prompt_length
        if self.reuse:
            draws = np.array([np.random.default_rng([params.seed, position + i, 7]).random() for i in range(k)])
        if position in self.drawn:  # drafted before, then left unsettled by a rejection
            k = next((i for i in range(k) if self.drawn.get(position + i, 1.0) >= UNDER), k)
            self.redrafts += k > 0
            return super().propose(history, last, k, params, draws) if k else NO_DRAFT
        if k < 2:
            return NO_DRAFT
        after = super().propose([*history, last], REFUSED, k - 1, params, draws[1:])
        self.drawn.update({position + 1 + i: draws[1 + i] for i in range(len(after.tokens))})
        return Draft([REFUSED, *after.tokens], [one_hot(REFUSED), *after.q], source=Source.MODEL)


@pytest.mark.parametrize("reuse", [True, False], ids=["numbers-reused", "numbers-per-round"])
def test_a_choice_made_from_a_redrafted_positions_number_fails_only_where_it_is_reused(
    target_model, draft_model, reuse
):
    drafter = RedraftChooser(draft_model, reuse)
    ok, pvalues = same_distribution(target_model, drafter, PROMPT, TOP_K, 3, REACH)
    assert ok != reuse, pvalues
    assert drafter.redrafts > N // 2, "the planted drafter should have drafted positions again"


class ThresholdAfterSampling(ModelDrafter):
    """A biased gate: draw the token, then drop it when its own probability is low."""

    def propose(self, history, last, k, params, draws, keep=None):
        model = self.model
        feed = [*history[len(model.tokens) :], last]
        tokens, rows = [], []
        for position in range(k):
            q = distribution(model.forward(feed, all_logits=False)[0], params)
            token = sample(q, draws[position])
            if q.prob(token) < 0.2:
                break
            tokens.append(token)
            rows.append(q)
            feed = [token]
        return Draft(tokens, rows, source=Source.MODEL)


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
        config = GenerationConfig(30, k, SamplingParams(0.9, 0, 0.95, 8))  # a seed whose auto text has both
        drafter = (
            AutoDrafter(ModelDrafter(draft_model), Policy(FLAT, k, timed=False, risk=math.inf))
            if auto
            else ModelDrafter(draft_model)
        )
        events = list(generate(target_model, drafter, prompt, config))[:-1]
        return [t for e in events for t in e.tokens], {e.source for e in events}

    assert text(3, False) == text(3, False)
    auto, sources = text(4, True)
    assert (auto, sources) == text(4, True)
    assert Source.MODEL in sources and any(source.copied for source in sources), (
        "seeded auto must be reproducible through model and copy rounds"
    )
