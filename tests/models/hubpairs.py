"""What the hub test modules share: the shipped default pair's real repo and file names, the user
pairs file, the in-process CLI runner, and huggingface_hub's log handler pointed at the current stderr
(moved out of test_hub.py so that each module imports it from a module that is not itself a test)."""

from __future__ import annotations

import logging
import sys

import huggingface_hub  # imported before any test changes HF_* variables (constants are read at import)
import pytest

from specgen import cli


class _CurrentStderr:
    """huggingface_hub's log handler keeps the stderr of import time; pytest swaps stderr per test."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


import huggingface_hub.utils.logging  # noqa: E402, F401 - creates the handler now, not inside some test

for _handler in logging.getLogger("huggingface_hub").handlers:
    if isinstance(_handler, logging.StreamHandler):
        _handler.setStream(_CurrentStderr())

DEFAULT = "qwen2.5-coder-1.5b:0.5b"
TARGET = ("Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
DRAFT = ("Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
TOKEN = "hf_test_secret_token"

USER_PAIRS = """
[pairs."tinybad-2b:1b"]
description = "a draft whose token 139 was renamed"
[pairs."tinybad-2b:1b".target]
repo = "{target_repo}"
file = "{target_file}"
[pairs."tinybad-2b:1b".draft]
repo = "specgen-test/Tiny-Renamed-GGUF"
file = "tiny-renamed.gguf"

[pairs."tinygated-2b:1b"]
[pairs."tinygated-2b:1b".target]
repo = "specgen-test/Tiny-Gated-GGUF"
file = "tiny-gated.gguf"
gated = true
[pairs."tinygated-2b:1b".draft]
repo = "{draft_repo}"
file = "{draft_file}"

[pairs."tinymissing-2b:1b"]
[pairs."tinymissing-2b:1b".target]
repo = "specgen-test/No-Such-Repo-GGUF"
file = "nothing.gguf"
[pairs."tinymissing-2b:1b".draft]
repo = "{draft_repo}"
file = "{draft_file}"

[pairs."tinytypo-2b:1b"]
[pairs."tinytypo-2b:1b".target]
repo = "{target_repo}"
file = "qwen2.5-coder-1.5b-instruct-q4_k_x.gguf"
[pairs."tinytypo-2b:1b".draft]
repo = "{draft_repo}"
file = "{draft_file}"
"""


def _config_dir() -> str:
    import os

    return os.environ["SPECGEN_CONFIG_DIR"]


def specgen(capsys, *args: str) -> tuple[int, str, str]:
    """Run the real entry point; return (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as done:
        cli.main(list(args))
    out, err = capsys.readouterr()
    return done.value.code, out, err


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("specgen: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]
