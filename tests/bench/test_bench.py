"""`specgen bench` end to end on the tiny models: JSON consistency, the audit, the prompt files."""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import importlib.util
import io
import json
import statistics
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from costfiles import plant_slow_costs

import specgen.decoding.loop
from specgen.bench import audit as bench_mod
from specgen.bench.audit import divergence
from specgen.bench.plan import Plan, configurations, parse_draft_tokens
from specgen.bench.prompts import BenchPrompt, read_prompt_files
from specgen.bench.runner import benchmark, encode_all, run_once, run_plan
from specgen.bench.stats import (
    Interval,
    Spread,
    Stats,
    length_mix,
    outcome,
    permutation_p,
    speedup_interval,
    summarize,
    verdict,
)
from specgen.bench.view import audit_lines, positions_table, render, verdict_line
from specgen.cli import main
from specgen.decoding.sampling import SamplingParams
from specgen.errors import UsageError
from specgen.llama.model import LoadOptions, Model

CODE = "def add(a, b):\n---\n\nx = 1\nfor i in\n\n"
PROSE = '{"prompt": "the print of self", "name": "self"}\n\n{"prompt": "a b c d e f a b c d e f a b c"}\n'
FIGURE = Path(__file__).parents[2] / "benchmarks" / "scripts" / "make_figure.py"


def call(argv: list[str], stdin: str | None = None) -> tuple[int, str, str]:
    """Run the CLI in-process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.ExitStack() as stack:
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        if stdin is not None:
            stack.enter_context(_patched_stdin(stdin))
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
    return exit_info.value.code, out.getvalue(), err.getvalue()


@contextlib.contextmanager
def _patched_stdin(text: str):
    import sys

    saved, sys.stdin = sys.stdin, io.StringIO(text)
    try:
        yield
    finally:
        sys.stdin = saved


def models(tiny_models, draft: bool = True) -> list[str]:
    args = ["--target", str(tiny_models["target"]), "--raw", "-t", "1", "-n", "16"]
    return args + (["--draft", str(tiny_models["draft"])] if draft else [])


@pytest.fixture(scope="module")
def pair(tiny_models):
    """Target and draft on one thread each: llama.cpp's threads spin, and test machines are busy."""
    with (
        Model(tiny_models["target"], LoadOptions(n_ctx=512, n_threads=1)) as target,
        Model(tiny_models["draft"], LoadOptions(n_ctx=512, n_threads=1)) as draft,
    ):
        yield target, draft


@pytest.fixture(scope="module")
def report(tiny_models, tmp_path_factory):
    """One bench over two prompt files: (exit code, stdout, JSON document, CSV rows, folder)."""
    folder = tmp_path_factory.mktemp("bench")
    (folder / "code.txt").write_text(CODE)
    (folder / "prose.jsonl").write_text(PROSE)
    argv = [
        "bench",
        str(folder / "code.txt"),
        str(folder / "prose.jsonl"),
        *models(tiny_models),
        "-k",
        "2,4,auto",
        "-r",
        "2",
        "--warmup",
        "1",
        "--json",
        str(folder / "out.json"),
        "--csv",
        str(folder / "out.csv"),
    ]
    started = time.perf_counter()
    code, stdout, _ = call(argv)
    (folder / "wall_s").write_text(str(time.perf_counter() - started))  # an outside clock
    document = json.loads((folder / "out.json").read_text())
    with open(folder / "out.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return code, stdout, document, rows, folder


def test_bench_reports_consistent_numbers(report):
    code, stdout, doc, rows, folder = report
    assert code == 0
    assert doc["schema"] == "specgen-bench/1"
    names = [c["name"] for c in doc["configs"]]
    assert names == ["target", "draft-k2", "draft-k4", "draft-auto", "lookup-k2", "lookup-k4"]
    assert doc["settings"]["draft_tokens"] == [2, 4, "auto"]
    assert [p["name"] for p in doc["prompts"]] == ["code:1", "code:2", "self", "prose:2"]
    assert len(doc["runs"]) == 4 * 6 * 2
    results = doc["results"]
    assert {(r["group"], r["key"]) for r in results} >= {("overall", "all"), ("kind", "code"), ("prompt", "self")}
    # each prompt's medians and speedups, recomputed here from the raw runs
    by_run: dict[tuple[str, str], list[float]] = {}
    for run in doc["runs"]:
        by_run.setdefault((run["prompt"], run["config"]), []).append(run["tokens"] / run["decode_s"])
    for r in results:
        rate = r["tokens_per_second"]
        assert rate["min"] <= rate["median"] <= rate["max"]
        if r["group"] == "prompt":
            assert rate["median"] == pytest.approx(statistics.median(by_run[r["key"], r["config"]]))
            assert r["speedup"] == pytest.approx(rate["median"] / statistics.median(by_run[r["key"], "target"]))
        if r["drafted"]:
            assert r["prediction"]["speedup"] > 0
        if r["config"] == "target":
            assert r["speedup_interval"] is None and r["outcome"] is None
        else:
            ci = r["speedup_interval"]
            assert ci["low"] <= ci["high"] and r["outcome"] in ("faster", "slower", "unclear")
        split = r["time_split"]
        assert split["draft"] + split["verify"] + split["other"] == pytest.approx(1.0, abs=1e-6)
        assert 0 < split["python"] < 1  # the rounds less the models' passes: part of the three above
    measured = sum(run["decode_s"] + run["prefill_s"] for run in doc["runs"])
    assert measured <= float((folder / "wall_s").read_text())  # no run claims more speed than the clock allows
    assert doc["audit"]["identical"] is True and doc["distribution_audit"] is None
    costs = doc["step_costs"]
    assert costs["verify"]["1"] > 0 and costs["draft_step"] > 0
    timed = {int(n): seconds for n, seconds in costs["verify"].items()}
    ceiling = costs["copy_ceiling"]  # at least the best of the timed sizes, kept whole (sizes between interpolated)
    assert 1 <= ceiling["tokens"] <= 64 and ceiling["speedup"] >= max(n * timed[1] / timed[n] for n in timed) - 1e-9
    assert (
        f"a copy kept whole gains at most {ceiling['speedup']:.2f}× here ({ceiling['tokens']} tokens a pass)" in stdout
    )
    overall = {r["config"]: r["tokens_per_second"]["median"] for r in results if r["group"] == "overall"}
    fastest = max((c for c in overall if c != "target"), key=overall.get)
    assert doc["peak_rss_mib"] > 0 and doc["verdict"]["best"] == fastest
    assert doc["memory_mib"]["anonymous"] > 0 and doc["memory_mib"]["file"] > 0
    assert len(rows) == len(results) and rows[0]["config"] == "target"
    assert "speedup" in stdout and "verdict:" in stdout and "all 48 runs give the target alone's tokens" in stdout
    assert "95% interval" in stdout and "repacked kernels on" in stdout.splitlines()[0]


def test_figure_script_draws_one_line_per_kind_and_drafter(report):
    *_, folder = report
    spec = importlib.util.spec_from_file_location("make_figure", FIGURE)
    figure = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(figure)
    figure.main([str(folder / "out.json"), "-o", str(folder / "speedup.svg")])
    svg = (folder / "speedup.svg").read_text()
    assert svg.startswith("<svg") and svg.count("<polyline") == 6
    assert "code, draft model" in svg and "prose, prompt lookup" in svg and "code, auto K" in svg
    assert ">auto</text>" in svg


def test_json_to_stdout_with_prompts_on_stdin_and_no_draft_model(tiny_models):
    code, stdout, stderr = call(
        ["bench", "-", *models(tiny_models, draft=False), "-k", "3", "-r", "1", "--warmup", "0", "--json", "-"],
        stdin=PROSE,
    )
    assert code == 0
    doc = json.loads(stdout)
    assert [c["name"] for c in doc["configs"]] == ["target", "lookup-k3"]
    assert doc["settings"]["draft"] is None and doc["prompts"][1]["kind"] == "stdin"
    assert "verdict:" in stderr


def test_a_bench_whose_auto_rows_find_the_cached_costs_too_slow_removes_them(tiny_models, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECGEN_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "p.txt").write_text("def add(a, b):")
    argv = [
        "bench",
        str(tmp_path / "p.txt"),
        "--target",
        str(tiny_models["target"]),
        "--raw",
        "-t",
        "1",
        "-n",
        "40",
        "--no-draft",
        "-k",
        "auto",
        "-r",
        "1",
        "--warmup",
        "0",
    ]
    assert call(argv)[0] == 0  # the auto row measured this machine's costs and cached them
    stored = plant_slow_costs(tmp_path / "cache")
    assert call(argv)[0] == 0
    assert not stored.exists()


def test_sampled_bench_audits_distributions(tiny_models, tmp_path):
    (tmp_path / "p.txt").write_text("the print of self")
    code, stdout, _ = call(
        [
            "bench",
            str(tmp_path / "p.txt"),
            *models(tiny_models),
            "-k",
            "2",
            "-r",
            "1",
            "--warmup",
            "0",
            "--temp",
            "0.8",
            "--top-p",
            "0.95",
            "--seed",
            "3",
            "--audit-seeds",
            "60",
            "--audit-tokens",
            "3",
            "--json",
            str(tmp_path / "o.json"),
        ]
    )
    assert code == 0 and "distribution: PASS at the 0.001 level" in stdout and "exactness" not in stdout
    doc = json.loads((tmp_path / "o.json").read_text())
    audit = doc["distribution_audit"]
    assert audit["passed"] and audit["seeds"] == 60 and audit["tokens"] == 3
    assert [c["config"] for c in audit["checks"]] == ["draft-k2", "lookup-k2"]
    assert doc["settings"]["top_p"] == 0.95 and doc["settings"]["audit_seeds"] == 60


def test_sampled_bench_without_audit_seeds_says_so(tiny_models, tmp_path):
    (tmp_path / "p.txt").write_text("the print of self")
    code, stdout, _ = call(
        [
            "bench",
            str(tmp_path / "p.txt"),
            *models(tiny_models),
            "-k",
            "2",
            "-r",
            "1",
            "--warmup",
            "0",
            "--no-lookup",
            "--temp",
            "0.8",
            "--audit-seeds",
            "0",
        ]
    )
    assert code == 0 and "distribution audit was off" in stdout


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


def test_prompt_file_formats(tmp_path):
    (tmp_path / "one.txt").write_text("{not json} is a fine prompt\n")
    (tmp_path / "many.txt").write_text(CODE)
    (tmp_path / "lines.jsonl").write_text('{"prompt": "a", "kind": "qa"}\n{"prompt": "b", "name": "bee"}\n')
    prompts = read_prompt_files([str(tmp_path / n) for n in ("one.txt", "many.txt", "lines.jsonl")], None)
    assert [(p.name, p.kind, p.text) for p in prompts] == [
        ("one:1", "one", "{not json} is a fine prompt"),
        ("many:1", "many", "def add(a, b):"),
        ("many:2", "many", "x = 1\nfor i in"),
        ("lines:1", "qa", "a"),
        ("bee", "lines", "b"),
    ]


def test_a_chat_turn_is_timed_after_its_conversation(tmp_path, target_model):
    """A "messages" line is encoded through the chat template whole, as chat and serve do; the
    timed reply is the last user turn's."""
    turns = [
        {"role": "user", "content": "write f"},
        {"role": "assistant", "content": "def f(): pass"},
        {"role": "user", "content": "rename f to g"},
    ]
    (tmp_path / "revise.jsonl").write_text(json.dumps({"messages": turns}) + "\n")
    [prompt] = read_prompt_files([str(tmp_path / "revise.jsonl")], None)
    assert (prompt.name, prompt.kind, prompt.text) == ("revise:1", "revise", "rename f to g")
    tokens = encode_all(target_model, [prompt], raw=False)[0]
    assert tokens == target_model.encode_chat([(t["role"], t["content"]) for t in turns])
    assert tokens != encode_all(target_model, [BenchPrompt("x", "x", "rename f to g")], raw=False)[0]
    with pytest.raises(UsageError, match="drop --raw"):
        encode_all(target_model, [prompt], raw=True)


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("missing.txt", None, "cannot read prompt file"),
        ("empty.txt", "\n \n", "is empty"),
        ("gap.txt", "a\n---\n\n---\nb\n", "prompt 2 (line 3) is empty"),
        ("trailing.txt", "a\n---\n", "remove the extra '---'"),
        ("bad.jsonl", '{"prompt": "a"}\n{"prompt": \n', "line 2 is not valid JSON"),
        ("noprompt.jsonl", '{"prompt": "a"}\n{"text": "b"}\n', 'line 2 has no "prompt" string'),
        ("latin1.txt", "caf\xe9".encode("latin-1"), "is not UTF-8"),
        ("dupes.jsonl", '{"prompt": "a", "name": "x"}\n{"prompt": "b", "name": "x"}\n', "two prompts are named 'x'"),
        (
            "chat.jsonl",
            '{"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}\n',
            "must end with the user's turn",
        ),
        ("role.jsonl", '{"messages": [{"role": "robot", "content": "a"}]}\n', 'each message needs a "role"'),
        ("list.jsonl", '{"messages": "hello"}\n', '"messages" must be a list'),
    ],
)
def test_bad_prompt_files_get_one_line_errors(tmp_path, name, content, message):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    code, stdout, stderr = call(["bench", str(path), "--target", "t.gguf", "--draft", "d.gguf"])
    assert code == 2 and stdout == ""
    assert stderr.count("\n") == 1 and stderr.startswith("specgen: error: ") and message in stderr


def test_draft_tokens_option():
    assert parse_draft_tokens("2, 4,2,8,AUTO") == (2, 4, 8, "auto")
    for text in ("0", "33", "two", "2,,4"):
        with pytest.raises(UsageError, match="from 1 to 32"):
            parse_draft_tokens(text)
    assert [c.name for c in configurations((2, "auto"), draft_model=False, lookup=True)] == [
        "target",
        "lookup-k2",
        "lookup-auto",
    ]
    auto = configurations(("auto",), draft_model=True, lookup=True, auto_cap=6)[-1]
    assert (auto.name, auto.k, auto.adaptive) == ("draft-auto", 6, True)
    with pytest.raises(UsageError, match="nothing to compare"):
        configurations((2,), draft_model=False, lookup=False)


def test_stdin_twice_and_nothing_to_compare_are_one_line_errors(tmp_path):
    code, _, stderr = call(["bench", "-", "-", "--target", "t.gguf"], stdin="a")
    assert code == 2 and "read only once" in stderr
    (tmp_path / "p.txt").write_text("a")
    code, _, stderr = call(["bench", str(tmp_path / "p.txt"), "--target", "t.gguf", "-k", "auto", "--no-lookup"])
    assert code == 2 and "nothing to compare" in stderr and stderr.count("\n") == 1


def test_an_output_file_in_a_missing_folder_is_refused_before_the_runs(tmp_path):
    (tmp_path / "p.txt").write_text("a")
    code, _, stderr = call(
        ["bench", str(tmp_path / "p.txt"), "--target", "t.gguf", "--json", str(tmp_path / "nowhere" / "out.json")]
    )
    assert code == 2 and "folder does not exist" in stderr and stderr.count("\n") == 1


def test_an_output_path_that_is_a_folder_is_refused_before_the_runs(tmp_path):
    (tmp_path / "p.txt").write_text("a")
    for option, says in (("--json", "is a folder; name a file in it"), ("--csv", "is a directory")):
        code, _, stderr = call(["bench", str(tmp_path / "p.txt"), "--target", "t.gguf", option, str(tmp_path)])
        assert code == 2 and says in stderr and stderr.count("\n") == 1


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
