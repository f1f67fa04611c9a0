"""The audits check what was timed: the distribution audit samples, for every configuration, the
generation the timed runs made (the same grammar, prediction, quoted JSON copies and schema
example, so the same drafter); and the greedy audit judges an output that ended at an end-of-text
token like any other token (a near-tie there is a near-tie, with its margin and its token)."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
from builds import recorded

from specgen.bench.audit import NEAR_TIE, audit
from specgen.bench.plan import Plan, RunRecord, configurations
from specgen.bench.prompts import read_prompt_files
from specgen.bench.runner import benchmark
from specgen.bench.view import audit_lines
from specgen.decoding.auto import AutoDrafter
from specgen.decoding.events import Summary
from specgen.decoding.sampling import SamplingParams
from specgen.engine.generation import Generation

SCHEMA = {
    "type": "object",
    "properties": {"city_name": {"type": "string"}, "is_warm": {"type": "boolean"}},
    "required": ["city_name", "is_warm"],
}
TIMED_TOKENS, AUDITED_TOKENS = 10, 3


def drafter_made(generation: Generation) -> tuple:
    """What decides a generation's drafts: its request but for the prompt's seed and length, and
    the drafter the engine chose for it (its kind and, for auto, its JSON copies and schema example)."""
    request = generation.request
    config = replace(request.config, max_tokens=0, sampling=replace(request.config.sampling, seed=None))
    drafter = generation.drafter
    auto = (drafter.quoted, drafter.example, drafter.prediction is not None) if isinstance(drafter, AutoDrafter) else ()
    return replace(request, prompt=(), config=config), type(drafter).__name__, auto


def test_the_distribution_audit_checks_the_drafter_the_timed_runs_use(target_model, draft_model, monkeypatch, tmp_path):
    monkeypatch.setenv("SPECGEN_CACHE_DIR", str(tmp_path))
    lines = json.dumps({"prompt": 'the "print" of self', "name": "record", "json_schema": SCHEMA}) + "\n"
    prompts = read_prompt_files(["-"], io.StringIO(lines))
    plan = Plan(
        configurations((2, "auto"), True, True),
        TIMED_TOKENS,
        1,
        0,
        SamplingParams(0.8, seed=4),
        audit_seeds=12,
        audit_tokens=AUDITED_TOKENS,
    )
    made = recorded(monkeypatch)
    result = benchmark(target_model, draft_model, prompts, plan, raw=True)
    assert result.distribution is not None and len(made) == len(plan.configs) * (1 + 12)
    timed = {drafter_made(g) for g in made if g.request.config.max_tokens == TIMED_TOKENS}
    audited = {drafter_made(g) for g in made if g.request.config.max_tokens == AUDITED_TOKENS}
    assert len(timed) == len(plan.configs) and audited == timed
    auto = [g for g in made if isinstance(g.drafter, AutoDrafter)]
    assert auto and all(g.drafter.quoted and '"city_name"' in g.drafter.example for g in auto)
    assert all(g.request.grammar is not None for g in made)


class _EndsAtANearTie:
    """A target whose best token after the prompt is 1 (` The`, say), with the end-of-text token 2
    0.02 behind it and token 3 far behind."""

    def sync(self, tokens):
        pass

    def start(self, prompt):
        return self.forward(prompt, all_logits=False), len(prompt)

    def forward(self, tokens, all_logits):
        return np.array([[0.0, 5.0, 4.98, 1.0]] * (len(tokens) if all_logits else 1), dtype=np.float32)

    def piece(self, token):
        return f"t{token}".encode()

    def is_eog(self, token):
        return token == 2


def _record(config: str, output: tuple[int, ...], stop_reason: str) -> RunRecord:
    summary = Summary(
        mode="m",
        draft_tokens=0,
        prompt_tokens=1,
        prefilled_tokens=0,
        tokens=len(output),
        rounds=len(output),
        tokens_per_second=1.0,
        prefill_s=0.0,
        decode_s=1.0,
        other_s=0.0,
        stop_reason=stop_reason,
    )
    return RunRecord(0, config, 0, summary, 0, output)


def test_an_output_that_ended_at_a_near_tie_with_the_end_token_is_a_near_tie_not_a_bug():
    """The target alone wrote token 1 where auto's run ended (stop_reason "eog"): the end token
    was 0.02 behind, so the audit reports a near-tie with the end token as auto's token."""
    records = [_record("target", (1, 1, 1), "length"), _record("lookup-auto", (1,), "eog")]
    [_, checked] = audit(_EndsAtANearTie(), [[9]], records)
    first = checked.first
    assert (first.position, first.baseline_token, first.other_token, first.other_text) == (1, 1, 2, "(end)")
    assert first.near_tie and abs(first.top2_margin - 0.02) < 1e-5 and first.top2_margin < NEAR_TIE

    class Shown:
        audits, distribution, prompts = [checked], None, [SimpleNamespace(name="summary")]

    [line] = audit_lines(Shown)
    assert "'(end)'" in line and "a near-tie" in line and "not a near-tie" not in line, line


def test_an_output_cut_short_without_an_end_token_has_no_token_there():
    """Cut at -n (stop_reason "length"), an output chose no token where it stopped: nothing to weigh."""
    records = [_record("target", (1, 1, 1), "length"), _record("lookup-auto", (1,), "length")]
    [_, checked] = audit(_EndsAtANearTie(), [[9]], records)
    assert checked.first.other_token is None and not checked.first.near_tie
