"""`specgen run` as a shell user meets it: a real process, pipes, stdout versus stderr."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from costfiles import plant_pinned_costs, plant_slow_costs

from specgen.engine.generation import MEASURING_NOTE

SPECGEN = [sys.executable, "-m", "specgen"]
TIMING = "specgen: " + MEASURING_NOTE  # said before a run whose auto times the passes first (nothing cached)


def specgen(
    *args: str, stdin: str | None = None, env: dict | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    """Run specgen; with no `stdin` text its stdin is /dev/null, as from a terminal-less script."""
    return subprocess.run(
        [*SPECGEN, *args],
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


def pin_timed_costs(*models: str, one: float | None = None) -> None:
    """Time this machine's step costs for `models` with a one-token run (cached in
    $SPECGEN_CACHE_DIR) and pin them flat, without a switch cost, every pass `one` seconds where
    given (`costfiles.plant_pinned_costs`): how far auto then copies does not depend on how busy
    the suite kept the machine while it timed."""
    assert specgen("run", "x", *models, "-n", "1", "--raw", "-q").returncode == 0
    plant_pinned_costs(Path(os.environ["SPECGEN_CACHE_DIR"]), flat=True, one=one)


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
    lines = [line for line in result.stderr.strip().splitlines() if line != TIMING]  # the suite's first auto run
    assert len(lines) == 1 and "tok/s" in lines[0] and "accepted" in lines[0]


def test_dash_means_stdin_and_matches_the_argument(pair):
    from_stdin = specgen("run", "-", *pair, "-n", "12", "--raw", "-q", stdin="x = 1\nfor i in")
    from_arg = specgen("run", "x = 1\nfor i in", *pair, "-n", "12", "--raw", "-q")
    assert from_stdin.returncode == from_arg.returncode == 0
    assert from_stdin.stdout == from_arg.stdout and from_stdin.stdout
    assert from_stdin.stderr == ""  # --quiet


def test_speculative_and_target_only_print_the_same_text(pair, tiny_models):
    spec = specgen("run", "the print of self", *pair, "-n", "30", "--raw", "-k", "3", "--json")
    plain = specgen(
        "run",
        "the print of self",
        "--target",
        str(tiny_models["target"]),
        "--no-draft",
        "-k",
        "0",
        "-n",
        "30",
        "--raw",
        "--json",
    )
    a, b = json.loads(spec.stdout), json.loads(plain.stdout)
    assert a["text"] == b["text"] and a["tokens"] == b["tokens"]
    assert a["mode"] == "speculative" and b["mode"] == "target-only" and b["drafted"] == 0
    copied = specgen(
        "run", "the print of self", "--target", str(tiny_models["target"]), "--no-draft", "-n", "30", "--raw", "--json"
    )
    c = json.loads(copied.stdout)
    assert c["text"] == b["text"] and c["mode"] == "prompt-lookup (auto)"  # no draft model: copies only


def test_k0_needs_no_draft_model(tiny_models):
    """-k 0 is plain decoding: --target alone runs it, without asking for --draft or --no-draft."""
    result = specgen(
        "run", "the print of self", "--target", str(tiny_models["target"]), "-k", "0", "-n", "12", "--raw", "--json"
    )
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["mode"] == "target-only" and record["drafted"] == 0 and record["tokens"] == 12


def test_json_holds_the_text_and_every_summary_field(pair):
    result = specgen("run", "hello there", *pair, "-n", "16", "-k", "3", "--json")  # a fixed K: it drafts
    assert result.returncode == 0 and result.stderr == ""
    record = json.loads(result.stdout)
    for field in (
        "text",
        "tokens",
        "rounds",
        "drafted",
        "accepted",
        "acceptance_rate",
        "tokens_per_round",
        "tokens_per_second",
        "prefill_s",
        "draft_s",
        "verify_s",
        "other_s",
        "stop_reason",
    ):
        assert field in record
    assert record["acceptance_rate"] == pytest.approx(record["accepted"] / record["drafted"])
    assert record["tokens_per_round"] == pytest.approx(record["tokens"] / record["rounds"])


def test_sampling_options_are_reproducible(pair):
    args = (
        "run",
        "def add(a, b):",
        *pair,
        "-n",
        "20",
        "--temp",
        "0.8",
        "--top-k",
        "20",
        "--top-p",
        "0.9",
        "--seed",
        "3",
        "-q",
    )
    assert specgen(*args).stdout == specgen(*args).stdout


def test_early_closed_pipe_ends_cleanly(pair):
    command = " ".join([*SPECGEN, "run", "'def add(a, b):'", *pair, "--raw", "-n", "2000", "--ctx", "2048"])
    result = subprocess.run(
        f"{command} | head -c 5", shell=True, stdin=subprocess.DEVNULL, capture_output=True, timeout=120
    )
    assert len(result.stdout) == 5
    assert b"Traceback" not in result.stderr and b"Exception" not in result.stderr


def test_an_early_closed_pipe_is_one_line_on_stderr_and_a_nonzero_exit(pair):
    command = " ".join([*SPECGEN, "run", "'def add(a, b):'", *pair, "--raw", "-n", "2000", "--ctx", "2048"])
    result = subprocess.run(
        ["bash", "-c", f"{command} | head -c 5; exit ${{PIPESTATUS[0]}}"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=120,
    )
    assert result.returncode == 1 and len(result.stdout) == 5
    said = [line for line in result.stderr.decode().splitlines() if line.startswith("specgen") and line != TIMING]
    assert said == [
        "specgen: error: stdout was closed before the output ended (its reader quit early); the output is cut short"
    ], result.stderr.decode()[-2000:]
    assert b"Traceback" not in result.stderr and b"Exception ignored" not in result.stderr


def test_ctrl_c_keeps_the_text_prints_the_summary_and_exits_130(tiny_models):
    endless = ["--target", str(tiny_models["target_endless"]), "--draft", str(tiny_models["draft"])]
    process = subprocess.Popen(
        [*SPECGEN, "run", "x = 1\nfor i in", *endless, "--raw", "-n", "100000", "--ctx", "32768"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout.read(1)
    process.send_signal(signal.SIGINT)
    _out, err = process.communicate(timeout=60)
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


def test_a_run_that_finds_the_cached_costs_too_slow_removes_them_and_says_so_on_stderr(tiny_models, tmp_path):
    args = ("run", "def add(a, b):", "--target", str(tiny_models["target"]), "--no-draft", "--raw", "-n", "40")
    env = {"SPECGEN_CACHE_DIR": str(tmp_path)}
    measured = specgen(*args, env=env)  # measures this machine's costs and caches them
    assert measured.returncode == 0 and "cached step costs" not in measured.stderr
    stored = plant_slow_costs(tmp_path)
    stale = specgen(*args, env=env)
    assert stale.returncode == 0
    assert not stored.exists()  # the next run measures again
    note = [line for line in stale.stderr.splitlines() if "cached step costs" in line]
    assert len(note) == 1 and note[0].startswith("specgen: note: ") and "measures them again" in note[0]
    assert "cached step costs" not in stale.stdout


def test_the_first_run_on_a_machine_says_it_times_the_passes_and_later_runs_do_not(tiny_models, tmp_path):
    args = ("run", "def add(a, b):", "--target", str(tiny_models["target"]), "--no-draft", "--raw", "-n", "8")
    env = {"SPECGEN_CACHE_DIR": str(tmp_path / "cache")}
    first, second = specgen(*args, env=env), specgen(*args, env=env)
    assert first.returncode == 0 and second.returncode == 0
    note = [line for line in first.stderr.splitlines() if "timing this machine's passes" in line]
    assert len(note) == 1 and note[0].startswith("specgen: note: ")
    assert list((tmp_path / "cache" / "step-costs").glob("*.json"))  # what it timed is cached
    assert "timing" not in second.stderr and "timing" not in first.stdout
    others = {"SPECGEN_CACHE_DIR": str(tmp_path / "other")}
    assert "timing" not in specgen(*args, "-k", "0", env=others).stderr  # plain decoding times nothing
    assert "timing" not in specgen(*args, "-q", env=others).stderr  # -q: nothing on stderr but errors


def test_an_empty_pair_name_is_an_error_not_the_default_pair():
    one_error_line(specgen("run", "--pair", "", "--raw", "hi"), "pair's name is empty", "specgen pairs")


def test_bad_option_value_and_unknown_option(pair):
    one_error_line(specgen("run", "hi", *pair, "-n", "0"), "--max-tokens")
    one_error_line(specgen("run", "hi", *pair, "--frobnicate"), "No such option")


def test_missing_chat_template_points_to_raw(tiny_models):
    result = specgen("run", "hi", "--target", str(tiny_models["target_no_template"]), "--no-draft")
    one_error_line(result, "--raw")


def test_debug_shows_the_traceback(tiny_models):
    result = specgen("run", "hi", "--target", "/nonexistent.gguf", "--no-draft", env={"SPECGEN_DEBUG": "1"})
    assert result.returncode != 0 and "Traceback" in result.stderr


def test_a_bare_specgen_prints_the_help_and_no_error():
    result = specgen()
    assert result.returncode == 0 and "Usage: specgen" in result.stdout and result.stderr == ""


def test_help_is_instant_and_does_not_import_llama_cpp():
    code = (
        "import sys; from specgen.cli import main\ntry: main(['--help'])\nexcept SystemExit: pass\n"
        "print('llama_cpp' in sys.modules, 'numpy' in sys.modules, 'huggingface_hub' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip().splitlines()[-1] == "False False False"


# Records, in a child running specgen, whether llama.cpp's library (ctypes.dlopen of libllama)
# or numpy came first: a CUDA build of llama.cpp dies at model load when numpy does.
LOAD_ORDER = """
import sys
order = []
def hook(event, args):
    if event == "ctypes.dlopen" and "llama" in str(args[0]) and "llama" not in order:
        order.append("llama")
    elif event == "import" and args[0] == "numpy" and "numpy" not in order:
        order.append("numpy")
sys.addaudithook(hook)
from specgen.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
sys.stderr.write("load order: " + " ".join(order) + "\\n")
"""


@pytest.mark.parametrize("command", ["run", "doctor"])
def test_commands_that_load_models_load_llama_cpp_before_numpy(command, tiny_models):
    args = {
        "run": ["run", "hi", "--target", str(tiny_models["target"]), "-k", "0", "--raw", "-n", "2"],
        "doctor": ["doctor"],
    }[command]
    result = subprocess.run([sys.executable, "-c", LOAD_ORDER, *args], capture_output=True, text=True)
    assert result.stderr.strip().splitlines()[-1] == "load order: llama numpy", result.stderr[-2000:]


@pytest.fixture(scope="module")
def plain(tiny_models) -> list[str]:
    """The target alone, greedy, raw: the same prompt tokens always give the same text."""
    return ["--target", str(tiny_models["target"]), "-k", "0", "--raw", "-n", "8", "--json"]


def record_for(plain: list[str], *args: str, stdin: str | None = None, cwd: Path | None = None) -> dict:
    result = specgen("run", *plain, *args, stdin=stdin, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def prompt_seen(record: dict) -> tuple[int, str]:
    return record["prompt_tokens"], record["text"]


def test_stdin_and_an_argument_make_one_prompt_piped_text_first(plain, target_model):
    code = "def add(a, b):\n    return a + b\n"
    expected = "def add(a, b):\n    return a + b\n\nadd type hints"  # the piped text, a blank line, the argument
    both = record_for(plain, "add type hints", stdin=code)
    assert prompt_seen(both) == prompt_seen(record_for(plain, expected))
    assert both["prompt_tokens"] == len(target_model.tokenize(expected, add_special=True, parse_special=False))
    assert both["prompt_tokens"] > record_for(plain, "add type hints")["prompt_tokens"]  # stdin was not dropped


def test_an_empty_stdin_with_an_argument_is_the_argument_alone(plain):
    alone = prompt_seen(record_for(plain, "the print of self"))
    assert prompt_seen(record_for(plain, "the print of self", stdin="")) == alone
    assert prompt_seen(record_for(plain, "the print of self", stdin=" \n\n")) == alone


def test_dash_is_stdin_alone(plain):
    assert prompt_seen(record_for(plain, "-", stdin="x = 1\nfor i in")) == prompt_seen(
        record_for(plain, "x = 1\nfor i in")
    )


def test_files_are_attached_named_and_fenced_before_stdin_and_the_argument(plain, tmp_path):
    (tmp_path / "app.py").write_text("def add(a, b):\n    return a + b\n")
    (tmp_path / "NOTES").write_text("use ```code``` spans")  # a run of 3 backticks inside, no final newline
    expected = (
        "app.py:\n```py\ndef add(a, b):\n    return a + b\n```\n\n"
        "NOTES:\n````\nuse ```code``` spans\n````\n\n"
        "the print of self\n\n"
        "add type hints"
    )
    attached = record_for(
        plain, "-f", "app.py", "--file", "NOTES", "add type hints", stdin="the print of self\n", cwd=tmp_path
    )
    assert prompt_seen(attached) == prompt_seen(record_for(plain, expected))
    only_files = record_for(plain, "-f", "app.py", cwd=tmp_path)  # no argument, stdin not piped: the file alone
    assert prompt_seen(only_files) == prompt_seen(
        record_for(plain, "app.py:\n```py\ndef add(a, b):\n    return a + b\n```")
    )


@pytest.mark.parametrize("case", ["missing", "folder", "not_utf8", "parent_is_a_file"])
def test_a_file_that_cannot_be_attached_is_one_line_and_exit_2(case, pair, tmp_path):
    (tmp_path / "latin1.txt").write_bytes("caf\u00e9 au lait".encode("latin-1"))
    (tmp_path / "plain.txt").write_text("text")
    path, fragment = {
        "missing": ("nope.py", "--file nope.py: no such file"),
        "folder": (".", "--file .: is a folder"),
        "not_utf8": ("latin1.txt", "--file latin1.txt: not UTF-8 text (invalid continuation byte at byte 3)"),
        "parent_is_a_file": ("plain.txt/x", "--file plain.txt/x: cannot be read (Not a directory)"),
    }[case]
    result = specgen("run", *pair, "-f", path, "hi", cwd=tmp_path)
    one_error_line(result, fragment)
    assert result.returncode == 2


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_is_one_line_and_exit_2(pair, tmp_path):
    secret = tmp_path / "secret.py"
    secret.write_text("x = 1")
    secret.chmod(0)
    result = specgen("run", *pair, "-f", str(secret), "hi")
    one_error_line(result, "cannot be read (Permission denied)")
    assert result.returncode == 2


def test_stdin_that_is_not_utf8_is_one_line_and_exit_2(pair):
    result = subprocess.run(
        [*SPECGEN, "run", *pair, "hi"], input="caf\u00e9".encode("latin-1"), capture_output=True, timeout=120
    )
    lines = result.stderr.decode().strip().splitlines()
    assert result.returncode == 2 and result.stdout == b"" and len(lines) == 1
    assert lines[0].startswith("specgen: error: stdin is not UTF-8 text")


def test_run_help_says_how_the_prompt_is_put_together():
    result = specgen("run", "--help", env={"COLUMNS": "200", "TERM": "dumb"})
    text = " ".join(result.stdout.split())
    assert "the piped text, a blank line, then this" in text
    assert "--file" in text and "files come first, then stdin, then PROMPT" in text
