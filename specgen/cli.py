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
PairOpt = typer.Option(
    None, "--pair", help="A matched pair from 'specgen pairs', downloaded on first use (default pair without --target)."
)
OfflineOpt = typer.Option(False, "--offline", help="Never download; fail if the pair's files are not cached.")
DraftTokensOpt = typer.Option(
    "auto", "--draft-tokens", "-k", help="Draft tokens per round: K (1-32), or auto: 0 to the pair's draft_tokens, chosen each round from measured costs."
)


@app.command()
def run(
    prompt: Optional[str] = typer.Argument(None, help="Prompt text; read from stdin when omitted or '-'."),
    pair: Optional[str] = PairOpt,
    target: Optional[Path] = TargetOpt,
    draft: Optional[Path] = DraftOpt,
    offline: bool = OfflineOpt,
    max_tokens: int = typer.Option(256, "--max-tokens", "-n", min=1, help="Most tokens to generate."),
    temp: float = typer.Option(0.0, "--temp", min=0.0, help="Sampling temperature; 0 is greedy."),
    top_k: int = typer.Option(0, "--top-k", min=0, help="Keep only the k most likely tokens (0: all)."),
    top_p: float = typer.Option(1.0, "--top-p", min=0.0, max=1.0, help="Nucleus sampling mass."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Random seed for sampling."),
    draft_tokens: str = DraftTokensOpt,
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
    from .engine import LoadOptions, backend_name
    from .hub import resolve_models
    from .render import consume, json_record, streamer, summary_line
    from .sampling import SamplingParams
    from .session import encode_prompt, open_models
    from .speculative import GenerationConfig, generate

    text = read_prompt(prompt)
    selection = resolve_models(pair, target, draft, no_draft, offline)
    paths = selection.paths
    options = LoadOptions(n_ctx=ctx, n_threads=threads, n_gpu_layers=gpu_layers)
    k, adaptive = draft_length(draft_tokens, selection.draft_tokens)
    config = GenerationConfig(max_tokens, k, SamplingParams(temp, top_k, top_p, seed), adaptive)
    with open_models(paths, options) as (target_model, draft_model):
        tokens = encode_prompt(target_model, text, raw)
        drafter = ModelDrafter(draft_model) if draft_model else None
        events = generate(target_model, drafter, tokens, config)
        answer, summary = consume(events, streamer(None if json_out else sys.stdout))
    if json_out:
        where = {"target": str(paths.target), "draft": str(paths.draft or ""), "backend": backend_name()}
        print(json_record(answer, summary, where))
    elif sys.stdout.isatty() and answer and not answer.endswith("\n"):
        print()
    if not quiet and not json_out:
        print(summary_line(summary), file=sys.stderr)
    if summary.stop_reason == "interrupted":
        raise typer.Exit(130)


def draft_length(text: str, cap: int) -> tuple[int, bool]:
    """--draft-tokens: (K, adaptive); `auto` lets each round choose 0..cap (the pair's draft_tokens)."""
    if text.strip().lower() == "auto":
        return cap, True
    if text.strip().isdigit() and 1 <= int(text) <= 32:
        return int(text), False
    raise UsageError(f"--draft-tokens takes a number from 1 to 32 or 'auto', not {text!r}")


def read_prompt(prompt: str | None) -> str:
    """The prompt argument, or all of stdin for none or '-'."""
    if prompt is not None and prompt != "-":
        return prompt
    if sys.stdin is None or sys.stdin.isatty():
        raise UsageError("no prompt: pass it as an argument or pipe it on stdin")
    return sys.stdin.read()


# -- pairs, pull, check --------------------------------------------------------------------

pairs_app = typer.Typer(no_args_is_help=False)
app.add_typer(pairs_app, name="pairs")


@pairs_app.callback(invoke_without_command=True)
def pairs(ctx: typer.Context) -> None:
    """List the matched target/draft pairs: sizes, draft length K, whether they are downloaded.

    Add or override pairs in a models.toml in specgen's config directory
    ($SPECGEN_CONFIG_DIR, else the platform's user config folder for 'specgen').
    """
    if ctx.invoked_subcommand is not None:
        return
    from .hub import cached_path
    from .registry import load_registry

    registry = load_registry()
    rows = []
    for pair in registry.pairs.values():
        have = [cached_path(pair.target) is not None, cached_path(pair.draft) is not None]
        state = "yes" if all(have) else ("target" if have[0] else "draft" if have[1] else "no")
        mark = "*" if pair.name == registry.default else ""
        models = [f"{model.quant} {_size(model.size_gb)}" for model in (pair.target, pair.draft)]
        rows.append([pair.name + mark, *models, str(pair.draft_tokens), state])
    print_table(["pair", "target", "draft", "K", "downloaded"], rows)
    print("* the default pair; 'specgen pairs show NAME' for repos and files, 'specgen pull NAME' to download", file=sys.stderr)


def _size(gigabytes: float) -> str:
    return f"{gigabytes:.1f} GB" if gigabytes >= 1 else f"{gigabytes * 1000:.0f} MB"


@pairs_app.command("show")
def pairs_show(name: str = typer.Argument(..., help="Pair name, e.g. llama3-8b:1b.")) -> None:
    """Everything about one pair: repos, files, quantization, size, license, cache paths."""
    from .hub import cached_path
    from .registry import load_registry

    pair = load_registry().get(name)
    print(f"pair: {pair.name}\ndescription: {pair.description}\ndraft tokens: {pair.draft_tokens}\nfrom: {pair.source}")
    for role, model in (("target", pair.target), ("draft", pair.draft)):
        gated = "gated (set HF_TOKEN)" if model.gated else "not gated"
        print(f"{role}: {model.repo} / {model.file}")
        print(f"  {model.quant}, {_size(model.size_gb)}, license {model.license or '?'}, {gated}")
        print(f"  cached: {cached_path(model) or 'no'}")


@pairs_app.command("check")
def pairs_check(
    name: str = typer.Argument(..., help="Pair name, e.g. llama3-8b:1b."), offline: bool = OfflineOpt
) -> None:
    """Check from the GGUF headers that the pair's draft can speak for its target (downloads if needed)."""
    from .hub import fetch_pair
    from .registry import load_registry

    paths = fetch_pair(load_registry().get(name), offline=offline)
    report_verdict(paths["target"], paths["draft"])


@app.command()
def pull(name: str = typer.Argument(..., help="Pair name from 'specgen pairs'.")) -> None:
    """Download both files of a pair into the Hugging Face cache; print their paths."""
    from .hub import fetch_pair
    from .registry import load_registry
    from .session import ModelPaths, preflight

    paths = fetch_pair(load_registry().get(name))
    print(f"{paths['target']}\n{paths['draft']}")
    preflight(ModelPaths(paths["target"], paths["draft"]))


@app.command()
def check(
    target: Path = typer.Option(..., "--target", help="Target model (GGUF file).", dir_okay=False),
    draft: Path = typer.Option(..., "--draft", help="Draft model (GGUF file).", dir_okay=False),
) -> None:
    """Can this draft speak for this target? Compares the GGUF headers; loads no weights."""
    report_verdict(target, draft)


def report_verdict(target: Path, draft: Path) -> None:
    """Print the compatibility verdict on stdout; exit 1 when the pair is incompatible."""
    from .compat import check_vocabularies
    from .header import read_info

    verdict = check_vocabularies(read_info(target), read_info(draft))
    print(f"{'compatible' if verdict.compatible else 'incompatible'}: {verdict.reason}")
    if not verdict.compatible:
        raise typer.Exit(1)


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


# -- chat -----------------------------------------------------------------------------------


@app.command()
def chat(
    pair: Optional[str] = PairOpt,
    target: Optional[Path] = TargetOpt,
    draft: Optional[Path] = DraftOpt,
    offline: bool = OfflineOpt,
    system: Optional[str] = typer.Option(None, "--system", help="System prompt for the whole chat."),
    max_tokens: int = typer.Option(512, "--max-tokens", "-n", min=1, help="Most tokens per reply."),
    temp: float = typer.Option(0.0, "--temp", min=0.0, help="Sampling temperature; 0 is greedy (/temp changes it)."),
    top_k: int = typer.Option(0, "--top-k", min=0, help="Keep only the k most likely tokens (0: all)."),
    top_p: float = typer.Option(1.0, "--top-p", min=0.0, max=1.0, help="Nucleus sampling mass."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Random seed for sampling."),
    draft_tokens: str = DraftTokensOpt,
    no_draft: bool = typer.Option(False, "--no-draft", help="Decode with the target alone (the baseline)."),
    show_rejected: bool = typer.Option(False, "--show-rejected", help="Also show the rejected draft tokens, struck through."),
    plain: bool = typer.Option(False, "--plain", help="Plain text: no colours, no live status (also with NO_COLOR or in a pipe)."),
    ctx: int = typer.Option(4096, "--ctx", min=16, help="Context size in tokens (the whole conversation)."),
    threads: Optional[int] = typer.Option(None, "--threads", "-t", min=1, help="CPU threads (default: all cores)."),
    gpu_layers: Optional[int] = typer.Option(None, "--gpu-layers", min=0, help="Layers to offload (default: all, on GPU builds)."),
) -> None:
    """Chat in turns, and watch which tokens the draft model got right as each reply streams."""
    from .chat import ChatOptions, run_chat
    from .engine import LoadOptions
    from .hub import resolve_models
    from .sampling import SamplingParams
    from .speculative import GenerationConfig

    selection = resolve_models(pair, target, draft, no_draft, offline)
    k, adaptive = draft_length(draft_tokens, selection.draft_tokens)
    config = GenerationConfig(max_tokens, k, SamplingParams(temp, top_k, top_p, seed), adaptive)
    load = LoadOptions(n_ctx=ctx, n_threads=threads, n_gpu_layers=gpu_layers)
    run_chat(selection.paths, load, ChatOptions(config, system, show_rejected, plain))


# -- bench ----------------------------------------------------------------------------------


@app.command()
def bench(
    prompt_files: list[str] = typer.Argument(
        ..., metavar="PROMPT_FILE", help="One prompt, several split by '---' lines, or JSONL with a \"prompt\" field; '-' is stdin."
    ),
    pair: Optional[str] = PairOpt,
    target: Optional[Path] = TargetOpt,
    draft: Optional[Path] = typer.Option(
        None, "--draft", dir_okay=False, help="Draft model (GGUF file); without it, prompt lookup is the only drafter."
    ),
    offline: bool = OfflineOpt,
    max_tokens: int = typer.Option(128, "--max-tokens", "-n", min=1, help="Most tokens to generate per run."),
    draft_tokens: str = typer.Option(
        "2,4,8,auto", "--draft-tokens", "-k", help="Draft lengths K to compare; auto: adaptive K, as 'specgen run' decodes."
    ),
    no_lookup: bool = typer.Option(False, "--no-lookup", help="Leave out the prompt-lookup drafter."),
    repeats: int = typer.Option(3, "--repeats", "-r", min=1, help="Measured runs of each configuration per prompt."),
    warmup: int = typer.Option(1, "--warmup", min=0, help="Unmeasured runs of each configuration per prompt first."),
    temp: float = typer.Option(0.0, "--temp", min=0.0, help="Sampling temperature; 0 is greedy and audits exactness."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Random seed for sampling."),
    raw: bool = typer.Option(False, "--raw", help="Send the prompts as is, without the chat template."),
    json_path: Optional[str] = typer.Option(
        None, "--json", metavar="PATH", help="Write every result as JSON (docs/bench-json.md); '-': stdout, table to stderr."
    ),
    csv_path: Optional[Path] = typer.Option(None, "--csv", metavar="PATH", dir_okay=False, help="Write the results table as CSV."),
    ctx: int = typer.Option(4096, "--ctx", min=16, help="Context size in tokens."),
    threads: Optional[int] = typer.Option(None, "--threads", "-t", min=1, help="CPU threads (default: all cores)."),
    gpu_layers: Optional[int] = typer.Option(None, "--gpu-layers", min=0, help="Layers to offload (default: all, on GPU builds)."),
) -> None:
    """Benchmark speculative decoding against the target alone, interleaved, with an exactness audit."""
    from .bench import Plan, benchmark, configurations, parse_draft_tokens
    from .bench_prompts import read_prompt_files
    from .bench_view import check_output, progress, render, write_csv, write_json
    from .engine import LoadOptions
    from .hub import resolve_models
    from .sampling import SamplingParams
    from .session import open_models

    prompts = read_prompt_files(prompt_files, sys.stdin)
    ks = parse_draft_tokens(draft_tokens)
    check_output(json_path)
    check_output(csv_path)
    selection = resolve_models(pair, target, draft, target is not None and draft is None, offline)
    configs = configurations(ks, selection.paths.draft is not None, not no_lookup, selection.draft_tokens)
    plan = Plan(configs, max_tokens, repeats, warmup, SamplingParams(temp, seed=seed))
    settings = {"pair": pair, "target": str(selection.paths.target),
                "draft": str(selection.paths.draft) if selection.paths.draft else None, "raw": raw, "ctx": ctx}
    with open_models(selection.paths, LoadOptions(n_ctx=ctx, n_threads=threads, n_gpu_layers=gpu_layers)) as models:
        total = len(prompts) * (repeats + warmup) * len(plan.configs)
        with progress(total, [p.name for p in prompts], repeats) as started:
            result = benchmark(*models, prompts, plan, raw, started, settings)
    if json_path:
        write_json(result, json_path)
    if csv_path:
        write_csv(result, csv_path)
    render(result, sys.stderr if json_path == "-" else sys.stdout)


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
