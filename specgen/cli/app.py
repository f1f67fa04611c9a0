"""The Typer app every command registers on, with --version and the helpers all commands share."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

# Typer may use click or its own vendored copy; take the base class from its own exceptions.
ClickException = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")
# what a bare `specgen` raises once the help is printed (click 8.2 on; () before: nothing to catch)
NoArgsIsHelp = getattr(sys.modules[ClickException.__module__], "NoArgsIsHelpError", ())

app = typer.Typer(
    name="specgen",
    help="Fast local text generation with exact speculative decoding (llama.cpp).",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
)


def print_version(wanted: bool) -> None:
    """--version: specgen's version and the llama-cpp-python it runs on (no llama.cpp import)."""
    if not wanted:
        return
    from importlib.metadata import PackageNotFoundError, version

    from specgen import __version__

    try:
        binding = f"llama-cpp-python {version('llama-cpp-python')}"
    except PackageNotFoundError:
        binding = "llama-cpp-python not installed"
    print(f"specgen {__version__} ({binding})")
    raise typer.Exit()


@app.callback()
def specgen(
    version: Annotated[
        bool, typer.Option("--version", is_eager=True, callback=print_version, help="Print the version and exit.")
    ] = False,
) -> None:
    """Fast local text generation with exact speculative decoding (llama.cpp)."""


def examples(*lines: str) -> str:
    """A --help epilog listing real invocations."""
    return "Examples:\n\n" + "\n".join(f"  $ {line}" for line in lines)


def print_table(headers: list[str], rows: list[list[str]]) -> None:
    """A Rich table on a terminal; tab-separated plain text when stdout is a pipe or file."""
    if not sys.stdout.isatty():
        for row in [headers, *rows]:
            print("\t".join(row))
        return
    from rich import box
    from rich.console import Console
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD)
    for header in headers:
        table.add_column(header, no_wrap=True)
    for row in rows:
        table.add_row(*row)
    Console().print(table)
