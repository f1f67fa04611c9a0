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
from pathlib import Path
from typing import Optional

import typer

from .errors import SpecgenError, UsageError

# Typer may use click or its own vendored copy; take the base class from its own exceptions.
ClickException = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")

app = typer.Typer(
    name="specgen",
    help="Fast local text generation with exact speculative decoding (llama.cpp).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)



@app.callback()
def specgen() -> None:
    """Fast local text generation with exact speculative decoding (llama.cpp)."""


TargetOpt = typer.Option(None, "--target", help="Target model (GGUF file).", dir_okay=False)
DraftOpt = typer.Option(None, "--draft", help="Draft model (GGUF file) sharing the target's vocabulary.", dir_okay=False)


@app.command()
def run(
    prompt: Optional[str] = typer.Argument(None, help="Prompt text; read from stdin when omitted or '-'."),
    target: Optional[Path] = TargetOpt,
    draft: Optional[Path] = DraftOpt,
    max_tokens: int = typer.Option(256, "--max-tokens", "-n", min=1, help="Most tokens to generate."),
    temp: float = typer.Option(0.0, "--temp", min=0.0, help="Sampling temperature; 0 is greedy."),
    top_k: int = typer.Option(0, "--top-k", min=0, help="Keep only the k most likely tokens (0: all)."),
    top_p: float = typer.Option(1.0, "--top-p", min=0.0, max=1.0, help="Nucleus sampling mass."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Random seed for sampling."),
    draft_tokens: int = typer.Option(4, "--draft-tokens", "-k", min=1, max=32, help="Draft tokens per round (K)."),
    no_draft: bool = typer.Option(False, "--no-draft", help="Decode with the target alone (the baseline)."),
    raw: bool = typer.Option(False, "--raw", help="Send the prompt as is, without the chat template."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object with the text and all statistics."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No summary line on stderr."),
    ctx: int = typer.Option(4096, "--ctx", min=16, help="Context size in tokens."),
    threads: Optional[int] = typer.Option(None, "--threads", "-t", min=1, help="CPU threads (default: all cores)."),
    gpu_layers: Optional[int] = typer.Option(None, "--gpu-layers", min=0, help="Layers to offload (default: all, on GPU builds)."),
) -> None:
    """Generate text for one prompt; stdout gets only the text (shell pipelines welcome)."""
    from .drafters import ModelDrafter
    from .engine import LoadOptions
    from .render import consume, json_record, summary_line
    from .sampling import SamplingParams
    from .session import encode_prompt, open_models
    from .speculative import GenerationConfig, generate

    text = read_prompt(prompt)
    paths = model_paths(target, draft, no_draft)
    options = LoadOptions(n_ctx=ctx, n_threads=threads, n_gpu_layers=gpu_layers)
    config = GenerationConfig(max_tokens, draft_tokens, SamplingParams(temp, top_k, top_p, seed))
    with open_models(paths, options) as (target_model, draft_model):
        tokens = encode_prompt(target_model, text, raw)
        drafter = ModelDrafter(draft_model) if draft_model else None
        events = generate(target_model, drafter, tokens, config)
        answer, summary = consume(events, None if json_out else sys.stdout)
    if json_out:
        print(json_record(answer, summary, {"target": str(paths.target), "draft": str(paths.draft or "")}))
    elif sys.stdout.isatty() and answer and not answer.endswith("\n"):
        print()
    if not quiet and not json_out:
        print(summary_line(summary), file=sys.stderr)
    if summary.stop_reason == "interrupted":
        raise typer.Exit(130)


def read_prompt(prompt: str | None) -> str:
    """The prompt argument, or all of stdin for none or '-'."""
    if prompt is not None and prompt != "-":
        return prompt
    if sys.stdin is None or sys.stdin.isatty():
        raise UsageError("no prompt: pass it as an argument or pipe it on stdin")
    return sys.stdin.read()


def model_paths(target: Path | None, draft: Path | None, no_draft: bool):
    from .session import ModelPaths

    if target is None:
        raise UsageError("no target model: pass --target PATH (a GGUF file)")
    if draft is None and not no_draft:
        raise UsageError("no draft model: pass --draft PATH, or --no-draft to decode with the target alone")
    return ModelPaths(target, None if no_draft else draft)


# -- errors -----------------------------------------------------------------------------------


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


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app; turn any exception into one line on stderr and an exit code."""
    command = typer.main.get_command(app)
    try:
        result = command.main(args=argv, prog_name="specgen", standalone_mode=False)
    except Exception as error:  # noqa: BLE001 - every error becomes one line
        sys.exit(_report(error))
    except KeyboardInterrupt as error:
        sys.exit(_report(error))
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
    print(f"specgen: error: {message}", file=sys.stderr)
    return code
