"""specgen's command line: thin commands that parse options, call the library, render results.

`main()` runs the Typer app and applies one table that maps exceptions to the single line a
user reads (no traceback unless SPECGEN_DEBUG=1). Heavy modules (llama_cpp, numpy,
huggingface_hub) are imported inside the commands so `specgen --help` stays instant.
"""

from __future__ import annotations

import errno
import os
import sys
import traceback
from typing import Any, NoReturn, TextIO

import typer

from specgen.cli import bench, generate, models, worker, export, serve  # noqa: F401 - registers commands in this order  # isort: skip
from specgen.cli.app import ClickException, NoArgsIsHelp, app
from specgen.errors import SpecgenError, error_line


def _usage(error) -> tuple[str, int]:
    hint = ""
    ctx = getattr(error, "ctx", None)
    if ctx is not None:
        hint = f" (see '{ctx.command_path} --help')"
    return error.format_message().replace("\n", " ") + hint, error.exit_code


def _os_error(error: OSError) -> tuple[str, int]:
    if error.errno == errno.ENOSPC:
        return f"the disk is full ({error.filename or 'writing'}); free some space and try again", 1
    return f"{error.strerror or error} ({error.filename})" if error.filename else str(error), 1


# exception type -> (message, exit code); the first matching row wins
ERRORS = [
    (SpecgenError, lambda e: (str(e), e.exit_code)),
    (ClickException, _usage),
    (typer.Abort, lambda e: ("interrupted", 130)),
    (KeyboardInterrupt, lambda e: ("interrupted", 130)),
    (MemoryError, lambda e: ("out of memory; try a smaller model, a smaller --ctx or fewer GPU layers", 1)),
    (OSError, _os_error),
]


class OutputClosed(SpecgenError):
    """stdout's reader quit before the output ended (`specgen run ... | head`)."""


class _GuardedStdout:
    """sys.stdout, except that a reader that quit ends the command with `OutputClosed` (one line
    on stderr) where Click would exit silently; later writes go nowhere."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except BrokenPipeError:
            self._closed()

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            self._closed()

    def _closed(self) -> NoReturn:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, self.stream.fileno())  # what is still buffered goes nowhere
        os.close(null)
        raise OutputClosed("stdout was closed before the output ended (its reader quit early); the output is cut short")


# The commands that load models. They load llama.cpp's library before anything imports numpy:
# with numpy first, a CUDA build of llama.cpp dies by SIGSEGV inside its first model load (seen on
# an H100, 2026-11-26: benchmarks/results/2026-11-26-h100-2), as llama-cpp-python's users have
# reported since 2024 ("import llama_cpp first", abetlen/llama-cpp-python#1581).
LOADS_MODELS = frozenset({"run", "chat", "bench", "serve", "doctor", "worker"})


def _load_llama_first(args: list[str]) -> None:
    """Load llama.cpp now if the command given loads models (not for its --help)."""
    if LOADS_MODELS & set(args) and "--help" not in args:
        from specgen.llama.library import llama

        llama()


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app; turn any exception into one line on stderr and an exit code."""
    command = typer.main.get_command(app)
    stdout = sys.stdout
    sys.stdout = _GuardedStdout(stdout) if not isinstance(stdout, _GuardedStdout) else stdout
    try:
        _load_llama_first(sys.argv[1:] if argv is None else argv)
        result = command.main(args=argv, prog_name="specgen", standalone_mode=False)
    except NoArgsIsHelp:
        result = 0  # a bare `specgen` asks for the help, which is printed
    except Exception as error:  # noqa: BLE001 - every error becomes one line
        sys.exit(_report(error))
    except KeyboardInterrupt as error:
        sys.exit(_report(error))
    finally:
        sys.stdout = stdout
    sys.exit(result if isinstance(result, int) else 0)


def _report(error: BaseException) -> int:
    if os.environ.get("SPECGEN_DEBUG") == "1":
        traceback.print_exception(error)
    for kind, explain in ERRORS:
        if isinstance(error, kind):
            message, code = explain(error)
            break
    else:
        message = f"internal error: {type(error).__name__}: {error}; rerun with SPECGEN_DEBUG=1 and report it"
        code = 1
    print(error_line(message), file=sys.stderr)
    return code
