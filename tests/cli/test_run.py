"""`specgen run` as a shell user meets it: a real process, pipes, stdout versus stderr."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

SPECGEN = [sys.executable, "-m", "specgen"]


def specgen(*args: str, stdin: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*SPECGEN, *args], input=stdin, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def one_error_line(result: subprocess.CompletedProcess, *fragments: str) -> None:
    assert result.returncode != 0
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("specgen: error: ")
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.fixture(scope="module")
def pair(tiny_models) -> list[str]:
    return ["--target", str(tiny_models["target"]), "--draft", str(tiny_models["draft"])]


def test_prompt_from_stdin_text_on_stdout_summary_on_stderr(pair):
    result = specgen("run", *pair, "-n", "12", "--raw", stdin="def add(a, b):")
    assert result.returncode == 0, result.stderr
    assert result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "tok/s" in lines[0] and "accepted" in lines[0]


def test_dash_means_stdin_and_matches_the_argument(pair):
    from_stdin = specgen("run", "-", *pair, "-n", "12", "--raw", "-q", stdin="x = 1\nfor i in")
    from_arg = specgen("run", "x = 1\nfor i in", *pair, "-n", "12", "--raw", "-q")
    assert from_stdin.returncode == from_arg.returncode == 0
    assert from_stdin.stdout == from_arg.stdout and from_stdin.stdout
    assert from_stdin.stderr == ""  # --quiet


def test_speculative_and_target_only_print_the_same_text(pair, tiny_models):
    spec = specgen("run", "the print of self", *pair, "-n", "30", "--raw", "-k", "3", "--json")
    plain = specgen("run", "the print of self", "--target", str(tiny_models["target"]), "--no-draft", "-k", "0",
                    "-n", "30", "--raw", "--json")
    a, b = json.loads(spec.stdout), json.loads(plain.stdout)
    assert a["text"] == b["text"] and a["tokens"] == b["tokens"]
    assert a["mode"] == "speculative" and b["mode"] == "target-only" and b["drafted"] == 0
    copied = specgen("run", "the print of self", "--target", str(tiny_models["target"]), "--no-draft",
                     "-n", "30", "--raw", "--json")
    c = json.loads(copied.stdout)
    assert c["text"] == b["text"] and c["mode"] == "prompt-lookup (auto)"  # no draft model: copies only


def test_k0_needs_no_draft_model(tiny_models):
    """-k 0 is plain decoding: --target alone runs it, without asking for --draft or --no-draft."""
    result = specgen("run", "the print of self", "--target", str(tiny_models["target"]), "-k", "0",
                     "-n", "12", "--raw", "--json")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["mode"] == "target-only" and record["drafted"] == 0 and record["tokens"] == 12


def test_json_holds_the_text_and_every_summary_field(pair):
    result = specgen("run", "hello there", *pair, "-n", "16", "--json")
    assert result.returncode == 0 and result.stderr == ""
    record = json.loads(result.stdout)
    for field in ("text", "tokens", "rounds", "drafted", "accepted", "acceptance_rate", "tokens_per_round",
                  "tokens_per_second", "prefill_s", "draft_s", "verify_s", "other_s", "stop_reason"):
        assert field in record
    assert record["acceptance_rate"] == pytest.approx(record["accepted"] / record["drafted"])
    assert record["tokens_per_round"] == pytest.approx(record["tokens"] / record["rounds"])


def test_sampling_options_are_reproducible(pair):
    args = ("run", "def add(a, b):", *pair, "-n", "20", "--temp", "0.8", "--top-k", "20", "--top-p", "0.9",
            "--seed", "3", "-q")
    assert specgen(*args).stdout == specgen(*args).stdout


def test_early_closed_pipe_ends_cleanly(pair):
    command = " ".join([*SPECGEN, "run", "'def add(a, b):'", *pair, "--raw", "-n", "2000", "--ctx", "2048"])
    result = subprocess.run(f"{command} | head -c 5", shell=True, capture_output=True, timeout=120)
    assert len(result.stdout) == 5
    assert b"Traceback" not in result.stderr and b"Exception" not in result.stderr


def test_ctrl_c_keeps_the_text_prints_the_summary_and_exits_130(tiny_models):
    endless = ["--target", str(tiny_models["target_endless"]), "--draft", str(tiny_models["draft"])]
    process = subprocess.Popen([*SPECGEN, "run", "x = 1\nfor i in", *endless, "--raw", "-n", "100000",
                                "--ctx", "32768"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout.read(1)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130
    assert "stop: interrupted" in err.decode() and "Traceback" not in err.decode()


@pytest.mark.parametrize("case", ["missing", "not_gguf", "truncated", "incompatible", "wrong_type", "too_big"])
def test_bad_model_files_give_one_line(case, tiny_models, tmp_path):
    target, draft = str(tiny_models["target"]), str(tiny_models["draft"])
    expected = {
        "missing": ([str(tmp_path / "nope.gguf"), draft], "not found"),
        "not_gguf": ([str(Path(__file__)), draft], "not a GGUF"),
        "truncated": ([str(tmp_path / "cut.gguf"), draft], "truncated"),
        "incompatible": ([target, str(tiny_models["draft_renamed"])], "token 139 differs"),
        "wrong_type": ([target, str(tiny_models["draft_gpt2"])], "vocabulary types differ"),
        "too_big": ([target, str(tiny_models["draft_padded"])], "sizes differ"),
    }[case]
    (tmp_path / "cut.gguf").write_bytes(tiny_models["target"].read_bytes()[:200_000])
    paths, fragment = expected
    one_error_line(specgen("run", "hi", "--target", paths[0], "--draft", paths[1]), fragment)


def test_empty_prompt(pair):
    one_error_line(specgen("run", *pair, stdin="  \n"), "prompt is empty")


def test_prompt_longer_than_the_context(pair):
    one_error_line(specgen("run", *pair, "--ctx", "256", "--raw", stdin="word " * 2000), "context holds 256")


def test_bad_option_value_and_unknown_option(pair):
    one_error_line(specgen("run", "hi", *pair, "-n", "0"), "--max-tokens")
    one_error_line(specgen("run", "hi", *pair, "--frobnicate"), "No such option")


def test_missing_chat_template_points_to_raw(tiny_models):
    result = specgen("run", "hi", "--target", str(tiny_models["target_no_template"]), "--no-draft")
    one_error_line(result, "--raw")


def test_debug_shows_the_traceback(tiny_models):
    result = specgen("run", "hi", "--target", "/nonexistent.gguf", "--no-draft", env={"SPECGEN_DEBUG": "1"})
    assert result.returncode != 0 and "Traceback" in result.stderr


def test_help_is_instant_and_does_not_import_llama_cpp():
    code = "import sys; from specgen.cli import main\ntry: main(['--help'])\nexcept SystemExit: pass\n" \
           "print('llama_cpp' in sys.modules, 'numpy' in sys.modules, 'huggingface_hub' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip().splitlines()[-1] == "False False False"
