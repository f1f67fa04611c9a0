"""The in-process `specgen` CLI runner and the prompt texts that the bench test modules share (moved
out of test_bench.py so that each of them imports it from a module that is not itself a test)."""

from __future__ import annotations

import contextlib
import io

import pytest

from specgen.cli import main

CODE = "def add(a, b):\n---\n\nx = 1\nfor i in\n\n"
PROSE = '{"prompt": "the print of self", "name": "self"}\n\n{"prompt": "a b c d e f a b c d e f a b c"}\n'


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
