"""The bench's exactness audit: a planted divergence is flagged and located, run order alternates,
replayed batches give every emitted token, grammars are respected, and near ties are not bugs."""

from __future__ import annotations

import dataclasses
import io
import json

import numpy as np
import pytest

import specgen.decoding.loop
from specgen.bench import audit as bench_mod
from specgen.bench.audit import divergence
from specgen.bench.plan import Plan, configurations
from specgen.bench.prompts import read_prompt_files
from specgen.bench.runner import benchmark, run_once, run_plan
from specgen.bench.view import audit_lines, render, verdict_line
from specgen.decoding.sampling import SamplingParams
from specgen.llama.model import LoadOptions, Model


@pytest.fixture(scope="module")
def pair(tiny_models):
    """Target and draft on one thread each: llama.cpp's threads spin, and test machines are busy."""
    with (
        Model(tiny_models["target"], LoadOptions(n_ctx=512, n_threads=1)) as target,
        Model(tiny_models["draft"], LoadOptions(n_ctx=512, n_threads=1)) as draft,
    ):
        yield target, draft


def test_audit_flags_a_planted_divergence(pair, monkeypatch):
    """A verifier that keeps every draft token breaks exactness; the audit must say where."""
    target_model, draft_model = pair
    original = specgen.decoding.loop.verify_greedy
    monkeypatch.setattr(
        specgen.decoding.loop,
        "verify_greedy",
        lambda argmax, drafted: original(np.array([*drafted, argmax[len(drafted)]]), drafted),
    )
    lines = '{"prompt": "def add(a, b):", "name": "[bold]"}\n{"prompt": "the print of self"}'
    prompts = read_prompt_files(["-"], io.StringIO(lines))
    plan = Plan(configurations((4,), True, False), 24, 1, 0, SamplingParams())
    result = benchmark(target_model, draft_model, prompts, plan, raw=True)
    bad = [a for a in result.audits if a.diverged]
    assert bad and all(a.config == "draft-k4" for a in bad)
    first = bad[0].first
    assert first.baseline_token != first.other_token and not first.near_tie and not first.batched_flip
    assert first.top2_margin > bench_mod.NEAR_TIE
    baseline = next(r.output for r in result.runs if r.config == "target" and r.prompt == bad[0].prompt)
    prefix = target_model.tokenize(prompts[bad[0].prompt].text, True, False) + list(baseline[: first.position])
    logits = bench_mod.logits_after(target_model, prefix)
    assert int(np.argmax(logits)) == first.baseline_token
    assert first.top2_margin == pytest.approx(float(np.sort(logits)[-1] - np.sort(logits)[-2]))
    assert any(f"first at token {first.position}" in line and "a bug" in line for line in audit_lines(result))
    shown = io.StringIO()
    render(result, shown)
    assert f"first at token {first.position}" in shown.getvalue() and "[bold]" in shown.getvalue()
    assert "WARNING" in verdict_line(result)


def test_every_other_repeat_runs_the_configurations_in_reverse_order(pair):
    target_model, draft_model = pair
    prompt = target_model.tokenize("x = 1\nfor i in", True, False)
    plan = Plan(configurations((2,), False, True), 3, 3, 1, SamplingParams())
    order = []
    records = run_plan(
        target_model, draft_model, [prompt], plan, lambda index, p, config, repeat: order.append((repeat, config.name))
    )
    names = [c.name for c in plan.configs]
    assert len(names) == 2
    first, second = names
    assert order == [
        (-1, second),
        (-1, first),
        (0, first),
        (0, second),
        (1, second),
        (1, first),
        (2, first),
        (2, second),
    ]  # the warm-up (repeat -1) is an odd one too
    assert [(r.repeat, r.config) for r in records] == order[2:]


def test_audit_locates_an_altered_sequence(pair):
    target_model = pair[0]
    prompt = target_model.tokenize("x = 1\nfor i in", True, False)
    plan = Plan(configurations((2,), False, True), 20, 1, 0, SamplingParams())
    output = run_once(target_model, None, prompt, plan.configs[0], plan).output
    altered = (*output[:7], (output[7] + 1) % target_model.n_vocab, *output[8:])
    found = divergence(target_model, prompt, output, altered)
    assert (found.position, found.baseline_token, found.other_token) == (7, output[7], altered[7])
    shorter = divergence(target_model, prompt, output, output[:5])
    assert (shorter.position, shorter.other_token, shorter.other_text) == (5, None, "(end)")


def test_replaying_a_runs_own_batches_gives_every_token_it_emitted(pair):
    """The audit's replay of a run's verify batches yields, at every position, the token the run
    emitted; a token the run did not get from those rows is not excused."""
    target_model, draft_model = pair
    prompt = target_model.tokenize("the print of self", True, False)
    plan = Plan(configurations((4,), True, False), 40, 1, 0, SamplingParams())
    run = run_once(target_model, draft_model, prompt, plan.configs[1], plan)
    output, rounds = run.output, run.rounds
    assert any(len(drafted) > 1 and kept for drafted, kept in rounds), "drafts were verified in batches"
    for position, token in enumerate(output):
        assert int(np.argmax(bench_mod.replayed_logits(target_model, prompt, output, rounds, position))) == token
    planted = (*output[:9], (output[9] + 1) % target_model.n_vocab, *output[10:])
    found = divergence(target_model, prompt, output, planted, rounds)
    assert found.position == 9 and not found.batched_flip


ALTERNATING = "root ::= ([a-m] [n-z])+"  # letters from a-m and n-z in turn


def alternation_allows(target, output: tuple[int, ...]) -> np.ndarray:
    """Which tokens may follow `output` under ALTERNATING, from each token's text and a regular
    expression (not llama.cpp's grammar): the text so far plus the token's must alternate, and an
    end token needs a complete pair."""
    import re

    so_far = b"".join(target.piece(t) for t in output)
    allowed = np.zeros(target.n_vocab, dtype=bool)
    for token in range(target.n_vocab):
        if target.is_eog(token):
            allowed[token] = re.fullmatch(rb"([a-m][n-z])+", so_far) is not None
        else:
            text = so_far + target.piece(token)
            allowed[token] = len(text) > len(so_far) and re.fullmatch(rb"([a-m][n-z])*[a-m]?", text) is not None
    return allowed


def test_under_a_grammar_the_audit_weighs_only_the_tokens_it_allows(pair):
    """Where a grammar held the runs, the unconstrained leader can be a token it forbids: the
    audit's margin, top two and baseline token are those among the allowed tokens."""
    from specgen.decoding.loop import GenerationConfig, generate
    from specgen.llama.grammar import Grammar

    target = pair[0]
    prompt = target.tokenize("the print of self", True, False)
    with Grammar(target, ALTERNATING) as grammar:
        events = list(generate(target, None, prompt, GenerationConfig(24), grammar))
    expected = tuple(t for e in events[:-1] for t in e.tokens)
    checked = 0
    for position in range(1, len(expected)):
        logits = bench_mod.logits_after(target, [*prompt, *expected[:position]])
        allowed = alternation_allows(target, expected[:position])
        if allowed[int(np.argmax(logits))] or allowed.sum() < 2:
            continue  # only places where a forbidden token leads tell the two audits apart
        masked = np.where(allowed, logits, -np.inf)
        best, second = np.argsort(masked)[-1], np.argsort(masked)[-2]
        got = (*expected[:position], int(second))
        found = divergence(target, prompt, expected, got, gbnf=ALTERNATING)
        assert (found.position, found.baseline_token, found.other_token) == (position, expected[position], second)
        assert best == expected[position]
        assert found.top2_margin == pytest.approx(float(masked[best] - masked[second]), abs=1e-4)
        checked += 1
    assert checked >= 3, checked


class _TiedTarget:
    """Logits with a near-tie between tokens 1 and 2, and token 3 far behind."""

    def sync(self, tokens):
        pass

    def start(self, prompt):
        return self.forward(prompt, all_logits=False), len(prompt)

    def forward(self, tokens, all_logits):
        return np.array([[0.0, 5.0, 4.99, 1.0]] * (len(tokens) if all_logits else 1), dtype=np.float32)

    def piece(self, token):
        return f"t{token}".encode()

    def is_eog(self, token):
        return token == 2


def test_near_tie_is_told_apart_from_a_bug():
    tie = divergence(_TiedTarget(), [9], (1, 1), (1, 2))
    assert tie.position == 1 and tie.near_tie and tie.top2_margin == pytest.approx(0.01, abs=1e-5)
    assert not divergence(_TiedTarget(), [9], (1,), (3,)).near_tie
    assert divergence(_TiedTarget(), [9], (1,), (1, 4)).baseline_token is None


class _ThreeTiedTarget(_TiedTarget):
    """Tokens 1, 2 and 3 within 0.02 of each other; token 0 far behind."""

    def forward(self, tokens, all_logits):
        return np.array([[0.0, 5.0, 4.99, 4.98]] * (len(tokens) if all_logits else 1), dtype=np.float32)

    def is_eog(self, token):
        return False


def test_a_tie_of_three_is_a_near_tie_even_for_the_third():
    third = divergence(_ThreeTiedTarget(), [9], (1,), (3,))
    assert third.near_tie and third.top2_margin == pytest.approx(0.01, abs=1e-5)
    assert not divergence(_ThreeTiedTarget(), [9], (1,), (0,)).near_tie


def test_a_divergence_is_written_to_bench_json():
    """bench --json writes each divergence: its verdicts are plain bools, not numpy's (a near-tie
    read from float32 logits once made the whole bench fail at the end)."""
    third = divergence(_ThreeTiedTarget(), [9], (1,), (3,))
    assert json.loads(json.dumps(dataclasses.asdict(third)))["near_tie"] is True


class _EndingTarget(_TiedTarget):
    def is_eog(self, token):
        return token == 1


def test_an_end_token_in_a_near_tie_counts_as_a_near_tie():
    ended = divergence(_EndingTarget(), [9], (5,), (5, 2))
    assert (ended.baseline_token, ended.baseline_text, ended.other_token, ended.near_tie) == (1, "(end)", 2, True)


class _BatchFlippingTarget(_TiedTarget):
    """One token at a time token 1 leads by 0.2; decoded in a batch of 4 or more, token 2 leads."""

    def forward(self, tokens, all_logits):
        row = [0.0, 5.0, 4.8, 1.0] if len(tokens) < 4 else [0.0, 4.9, 5.0, 1.0]
        return np.array([row] * (len(tokens) if all_logits else 1), dtype=np.float32)

    def is_eog(self, token):
        return False


def test_a_choice_the_targets_own_batched_pass_makes_is_not_called_a_bug():
    flipped = divergence(_BatchFlippingTarget(), [9, 9, 9, 9, 9], (1, 1), (1, 2))
    assert flipped.top2_margin == pytest.approx(0.2, abs=1e-5) and flipped.batched_flip and flipped.near_tie
    wrong = divergence(_BatchFlippingTarget(), [9, 9, 9, 9, 9], (1, 1), (1, 3))
    assert not wrong.batched_flip and not wrong.near_tie
    short = divergence(_BatchFlippingTarget(), [9], (1,), (2,))  # too short a prefix for a batch of 4
    assert not short.batched_flip and not short.near_tie
