"""The options run, chat, bench and serve share: declared once, parsed alike, examples that parse, completion."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from specgen import cli
from specgen.cli.options import ModelChoice, Resources, Sampling, option_groups

SHARED = [
    "--pair",
    "--target",
    "--draft",
    "--offline",
    "--max-tokens",
    "--temp",
    "--seed",
    "--ctx",
    "--threads",
    "--gpu-layers",
    "--rpc",
]
COMMANDS = ["run", "chat", "bench", "serve"]


def command(name: str):
    return typer.main.get_command(cli.app).commands[name]


def option(name: str, flag: str):
    return next(p for p in command(name).params if flag in p.opts)


@pytest.mark.parametrize("flag", SHARED)
def test_shared_options_are_one_declaration(flag):
    declared = [option(name, flag) for name in COMMANDS]
    assert len({(tuple(p.opts), p.help, p.bare_type(), p.min, p.max) for p in declared}) == 1


def test_run_and_chat_share_the_decoding_options():
    for flag in ("--top-k", "--top-p", "--draft-tokens", "--no-draft"):
        assert option("run", flag).help == option("chat", flag).help


def test_defaults_stay_per_command():
    assert [option(name, "--max-tokens").default for name in COMMANDS] == [256, 512, 128, 512]
    assert option("bench", "--draft-tokens").default == "2,4,8,auto"
    assert option("run", "--draft-tokens").default == "auto"


def test_option_groups_hand_the_command_its_groups_filled_from_the_command_line():
    received = {}
    probe = typer.Typer()

    @probe.command()
    @option_groups
    def command(
        word: str,
        models: ModelChoice = ModelChoice(),
        sampling: Sampling = Sampling(max_tokens=7),
        resources: Resources = Resources(),
    ) -> None:
        received.update(word=word, models=models, sampling=sampling, resources=resources)

    result = CliRunner().invoke(
        probe, ["hello", "--pair", "a:b", "--no-draft", "--temp", "0.5", "--seed", "3", "--ctx", "64", "-t", "1"]
    )
    assert result.exit_code == 0, result.output
    assert received == {
        "word": "hello",
        "models": ModelChoice(pair="a:b", no_draft=True),
        "sampling": Sampling(max_tokens=7, temp=0.5, seed=3),
        "resources": Resources(ctx=64, threads=1),
    }


def example_lines(name: str) -> list[str]:
    epilog = command(name).epilog
    assert epilog.startswith("Examples:")
    return [line.strip()[2:] for line in epilog.splitlines() if line.strip().startswith("$ ")]


@pytest.mark.parametrize("name", COMMANDS)
def test_help_ends_with_examples_that_parse(name):
    lines = example_lines(name)
    assert 2 <= len(lines) <= 3
    for line in lines:
        words = shlex.split(line)  # pipes and redirections stand apart, as words of their own
        words = words[words.index("specgen") :]
        words = words[: next((i for i, w in enumerate(words) if w in {"|", ">"}), len(words))]
        assert words[1] == name
        command(name).make_context(name, words[2:])  # raises on an unknown option or a bad value
    shown = subprocess.run(
        [sys.executable, "-m", "specgen", name, "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert shown.returncode == 0
    assert shown.stdout.rstrip().splitlines()[-1].strip() == f"$ {lines[-1]}"


def test_shell_completion_completes_commands_and_options():
    env = {**os.environ, "_SPECGEN_COMPLETE": "complete_bash", "COMP_WORDS": "specgen run --dr", "COMP_CWORD": "2"}
    done = subprocess.run([sys.executable, "-m", "specgen"], capture_output=True, text=True, env=env)
    assert done.returncode == 0 and set(done.stdout.split()) == {"--draft", "--draft-tokens"}
    help_text = subprocess.run([sys.executable, "-m", "specgen", "--help"], capture_output=True, text=True).stdout
    assert "--install-completion" in help_text


def test_version_names_the_release_of_the_installed_distribution():
    from importlib.metadata import version

    from specgen import __version__

    done = subprocess.run([sys.executable, "-m", "specgen", "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith(f"specgen {__version__} (llama-cpp-python ")
    assert version("specgen-llama") == __version__
