"""specgen's command line: thin commands that parse options, call the library, render results.

`main()` runs the Typer app and applies one table that maps exceptions to the single line a
user reads (no traceback unless SPECGEN_DEBUG=1). Heavy modules (llama_cpp, numpy,
huggingface_hub) are imported inside the commands so `specgen --help` stays instant.
"""

from __future__ import annotations

import errno
import os
import shlex
import sys
import traceback
from pathlib import Path
from typing import Annotated, Optional

import typer

from .errors import SpecgenError, UsageError

# Typer may use click or its own vendored copy; take the base class from its own exceptions.
ClickException = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")

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

    from . import __version__

    try:
        binding = f"llama-cpp-python {version('llama-cpp-python')}"
    except PackageNotFoundError:
        binding = "llama-cpp-python not installed"
    print(f"specgen {__version__} ({binding})")
    raise typer.Exit()


@app.callback()
def specgen(
    version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=print_version, help="Print the version and exit.")] = False,
) -> None:
    """Fast local text generation with exact speculative decoding (llama.cpp)."""


# -- options shared by run, chat and bench (and serve) ----------------------------------------
# Each option is declared once, as a typed alias; a command only sets its default. Model files
# and load settings are built from them in one place: select_models() and load_options().

MODEL, SAMPLING, RESOURCES = "Model", "Sampling", "Context and threads"

PairOpt = Annotated[Optional[str], typer.Option(
    "--pair", rich_help_panel=MODEL,
    help="A matched pair from 'specgen pairs', downloaded on first use (default pair without --target).")]
TargetOpt = Annotated[Optional[Path], typer.Option(
    "--target", dir_okay=False, rich_help_panel=MODEL,
    help="Target model (GGUF file), e.g. one listed by 'specgen pairs --local'.")]
DraftOpt = Annotated[Optional[Path], typer.Option(
    "--draft", dir_okay=False, rich_help_panel=MODEL,
    help="Draft model (GGUF file) sharing the target's vocabulary.")]
NoDraftOpt = Annotated[bool, typer.Option(
    "--no-draft", rich_help_panel=MODEL, help="Decode with the target alone (the baseline).")]
OfflineOpt = Annotated[bool, typer.Option(
    "--offline", rich_help_panel=MODEL, help="Never download; fail if the pair's files are not cached.")]
DraftTokensOpt = Annotated[str, typer.Option(
    "--draft-tokens", "-k", rich_help_panel=MODEL,
    help="Draft tokens per round: K (1-32), or auto: 0 to the pair's draft_tokens, chosen each round from measured costs.")]

MaxTokensOpt = Annotated[int, typer.Option(
    "--max-tokens", "-n", min=1, rich_help_panel=SAMPLING, help="Most tokens to generate (per reply, per run).")]
TempOpt = Annotated[float, typer.Option(
    "--temp", min=0.0, rich_help_panel=SAMPLING, help="Sampling temperature; 0 is greedy.")]
TopKOpt = Annotated[int, typer.Option(
    "--top-k", min=0, rich_help_panel=SAMPLING, help="Keep only the k most likely tokens (0: all).")]
TopPOpt = Annotated[float, typer.Option(
    "--top-p", min=0.0, max=1.0, rich_help_panel=SAMPLING, help="Nucleus sampling mass.")]
SeedOpt = Annotated[Optional[int], typer.Option("--seed", rich_help_panel=SAMPLING, help="Random seed for sampling.")]
RawOpt = Annotated[bool, typer.Option(
    "--raw", rich_help_panel=SAMPLING, help="Send the prompt as is, without the chat template.")]

CtxOpt = Annotated[int, typer.Option("--ctx", min=16, rich_help_panel=RESOURCES, help="Context size in tokens.")]
ThreadsOpt = Annotated[Optional[int], typer.Option(
    "--threads", "-t", min=1, rich_help_panel=RESOURCES, help="CPU threads (default: all cores).")]
GpuLayersOpt = Annotated[Optional[int], typer.Option(
    "--gpu-layers", min=0, rich_help_panel=RESOURCES, help="Layers to offload (default: all, on GPU builds).")]


def select_models(pair: str | None, target: Path | None, draft: Path | None, no_draft: bool, offline: bool):
    """--pair/--target/--draft/--no-draft/--offline -> the files to load (hub.Selection)."""
    from .hub import resolve_models

    return resolve_models(pair, target, draft, no_draft, offline)


def load_options(ctx: int, threads: int | None, gpu_layers: int | None):
    """--ctx/--threads/--gpu-layers -> engine.LoadOptions."""
    from .engine import LoadOptions

    return LoadOptions(n_ctx=ctx, n_threads=threads, n_gpu_layers=gpu_layers)


def generation_config(max_tokens: int, draft_tokens: str, cap: int, temp: float, top_k: int, top_p: float,
                      seed: int | None):
    """The sampling options and --draft-tokens -> speculative.GenerationConfig."""
    from .sampling import SamplingParams
    from .speculative import GenerationConfig

    k, adaptive = draft_length(draft_tokens, cap)
    return GenerationConfig(max_tokens, k, SamplingParams(temp, top_k, top_p, seed), adaptive)


def examples(*lines: str) -> str:
    """A --help epilog listing real invocations."""
    return "Examples:\n\n" + "\n".join(f"  $ {line}" for line in lines)


@app.command(epilog=examples(
    "specgen run --raw -n 64 'def fibonacci(n: int) -> int:'",
    "cat task.txt | specgen run --pair qwen2.5-coder-1.5b:0.5b > out.txt",
    "specgen run --target big.gguf --draft small.gguf --json 'Explain KV caches'",
))
def run(
    prompt: Annotated[Optional[str], typer.Argument(help="Prompt text; read from stdin when omitted or '-'.")] = None,
    pair: PairOpt = None,
    target: TargetOpt = None,
    draft: DraftOpt = None,
    offline: OfflineOpt = False,
    max_tokens: MaxTokensOpt = 256,
    temp: TempOpt = 0.0,
    top_k: TopKOpt = 0,
    top_p: TopPOpt = 1.0,
    seed: SeedOpt = None,
    draft_tokens: DraftTokensOpt = "auto",
    no_draft: NoDraftOpt = False,
    raw: RawOpt = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object with the text and all statistics.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No summary line on stderr.")] = False,
    ctx: CtxOpt = 4096,
    threads: ThreadsOpt = None,
    gpu_layers: GpuLayersOpt = None,
) -> None:
    """Generate text for one prompt; stdout gets only the text (shell pipelines welcome)."""
    from .drafters import ModelDrafter
    from .engine import backend_name
    from .render import consume, json_record, streamer, summary_line
    from .session import encode_prompt, open_models
    from .speculative import generate

    text = read_prompt(prompt)
    selection = select_models(pair, target, draft, no_draft, offline)
    paths = selection.paths
    config = generation_config(max_tokens, draft_tokens, selection.draft_tokens, temp, top_k, top_p, seed)
    with open_models(paths, load_options(ctx, threads, gpu_layers)) as (target_model, draft_model):
        tokens = encode_prompt(target_model, text, raw)
        drafter = ModelDrafter(draft_model) if draft_model else None
        events = generate(target_model, drafter, tokens, config)
        answer, summary = consume(events, streamer(None if json_out else sys.stdout))
        kernels = target_model.kernels
    if json_out:
        where = {"target": str(paths.target), "draft": str(paths.draft or ""), "backend": backend_name(),
                 "extra_bufts": kernels.on, "extra_bufts_reason": kernels.reason}
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


@pairs_app.callback(invoke_without_command=True, epilog=examples(
    "specgen pairs",
    "specgen pairs --local",
    "specgen pairs --local --dir ~/models --dir /mnt/gguf",
))
def pairs(
    ctx: typer.Context,
    local: Annotated[bool, typer.Option(
        "--local", help="Pair the GGUF files already on disk ($SPECGEN_MODELS, Hugging Face cache, LM Studio, "
        "Ollama) instead of listing the registry.")] = False,
    dirs: Annotated[Optional[list[Path]], typer.Option(
        "--dir", file_okay=False, help="Also look in this folder (repeatable; implies --local).")] = None,
) -> None:
    """List the matched target/draft pairs: sizes, draft length K, whether they are downloaded.

    Add or override pairs in a models.toml in specgen's config directory
    ($SPECGEN_CONFIG_DIR, else the platform's user config folder for 'specgen').
    """
    if ctx.invoked_subcommand is not None:
        return
    if local or dirs:
        local_pairs(dirs or [])
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


def local_pairs(dirs: list[Path]) -> None:
    """The table of pairs among the files on disk; what was scanned and skipped goes to stderr."""
    from .discover import scan
    from .doctor import human_size

    for folder in dirs:
        if not folder.expanduser().is_dir():
            raise UsageError(f"--dir {folder}: no such folder")
    found = scan(dirs)
    rows = [[pair.target.name, pair.draft.name, human_size(pair.target.size), human_size(pair.draft.size),
             f"{pair.ratio:.1f}x", str(pair.target.path), str(pair.draft.path)] for pair in found.pairs]
    if sys.stdout.isatty():  # paths are too long for table cells: one ready-to-run line per pair
        for target, draft, target_size, draft_size, ratio, target_path, draft_path in rows:
            print(f"{target} ({target_size})  <-  {draft} ({draft_size}), {ratio}")
            print(f"  specgen run --target {shlex.quote(target_path)} --draft {shlex.quote(draft_path)}")
    else:
        print_table(["target", "draft", "target size", "draft size", "ratio", "target path", "draft path"], rows)
    searched = sum(1 for _, folder in found.folders if folder.is_dir())
    print(f"{len(found.models)} models in {searched} folders, {len(found.pairs)} pairs; "
          "use one with 'specgen run --target PATH --draft PATH'", file=sys.stderr)
    if found.skipped:
        print(f"skipped {len(found.skipped)} files that are not usable GGUF models:", file=sys.stderr)
        for skipped in found.skipped[:5]:
            print(f"  {skipped.path}: {skipped.reason}", file=sys.stderr)
        if len(found.skipped) > 5:
            print(f"  ... and {len(found.skipped) - 5} more", file=sys.stderr)


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
    name: str = typer.Argument(..., help="Pair name, e.g. llama3-8b:1b."), offline: OfflineOpt = False
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


# -- doctor ---------------------------------------------------------------------------------


@app.command(epilog=examples("specgen doctor", "specgen doctor --json > doctor.json"))
def doctor(
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of text.")] = False,
) -> None:
    """What this build and machine can do: versions, backend, GPU offload, CPU features, kernels,
    threads, model folders, registry files, downloaded pairs, and how to rebuild for your GPU."""
    from .doctor import as_json, gather, render

    report = gather()
    print(as_json(report) if json_out else render(report))


# -- chat -----------------------------------------------------------------------------------


@app.command(epilog=examples(
    "specgen chat",
    "specgen chat --pair llama3-8b:1b --show-rejected",
    "specgen chat --target big.gguf --draft small.gguf --temp 0.7 --seed 1",
))
def chat(
    pair: PairOpt = None,
    target: TargetOpt = None,
    draft: DraftOpt = None,
    offline: OfflineOpt = False,
    system: Annotated[Optional[str], typer.Option("--system", help="System prompt for the whole chat.")] = None,
    max_tokens: MaxTokensOpt = 512,
    temp: TempOpt = 0.0,
    top_k: TopKOpt = 0,
    top_p: TopPOpt = 1.0,
    seed: SeedOpt = None,
    draft_tokens: DraftTokensOpt = "auto",
    no_draft: NoDraftOpt = False,
    show_rejected: Annotated[bool, typer.Option(
        "--show-rejected", help="Also show the rejected draft tokens, struck through.")] = False,
    plain: Annotated[bool, typer.Option(
        "--plain", help="Plain text: no colours, no live status (also with NO_COLOR or in a pipe).")] = False,
    ctx: CtxOpt = 4096,
    threads: ThreadsOpt = None,
    gpu_layers: GpuLayersOpt = None,
) -> None:
    """Chat in turns, and watch which tokens the draft model got right as each reply streams.

    --ctx holds the whole conversation; /temp changes the temperature during the chat.
    """
    from .chat import ChatOptions, run_chat

    selection = select_models(pair, target, draft, no_draft, offline)
    config = generation_config(max_tokens, draft_tokens, selection.draft_tokens, temp, top_k, top_p, seed)
    load = load_options(ctx, threads, gpu_layers)
    run_chat(selection.paths, load, ChatOptions(config, system, show_rejected, plain))


# -- bench ----------------------------------------------------------------------------------


@app.command(epilog=examples(
    "specgen bench docs/prompts/code.txt -k 2,4,auto",
    "specgen bench prompts.jsonl --pair llama3-8b:1b --json results.json",
    "specgen bench task.txt --target big.gguf -r 5 --csv results.csv",
))
def bench(
    prompt_files: Annotated[list[str], typer.Argument(
        metavar="PROMPT_FILE",
        help="One prompt, several split by '---' lines, or JSONL with a \"prompt\" field; '-' is stdin.")],
    pair: PairOpt = None,
    target: TargetOpt = None,
    draft: DraftOpt = None,
    offline: OfflineOpt = False,
    max_tokens: MaxTokensOpt = 128,
    draft_tokens: Annotated[str, typer.Option(
        "--draft-tokens", "-k", rich_help_panel=MODEL,
        help="Draft lengths K to compare; auto: adaptive K, as 'specgen run' decodes.")] = "2,4,8,auto",
    no_lookup: Annotated[bool, typer.Option("--no-lookup", help="Leave out the prompt-lookup drafter.")] = False,
    repeats: Annotated[int, typer.Option(
        "--repeats", "-r", min=1, help="Measured runs of each configuration per prompt.")] = 3,
    warmup: Annotated[int, typer.Option(
        "--warmup", min=0, help="Unmeasured runs of each configuration per prompt first.")] = 1,
    temp: TempOpt = 0.0,
    top_k: TopKOpt = 0,
    top_p: TopPOpt = 1.0,
    seed: SeedOpt = None,
    audit_seeds: Annotated[int, typer.Option(
        "--audit-seeds", min=0, rich_help_panel=SAMPLING,
        help="With --temp > 0: seeds per configuration and prompt for the distribution audit (0: none).")] = 200,
    audit_tokens: Annotated[int, typer.Option(
        "--audit-tokens", min=1, rich_help_panel=SAMPLING, help="Positions the distribution audit compares.")] = 6,
    raw: RawOpt = False,
    json_path: Annotated[Optional[str], typer.Option(
        "--json", metavar="PATH",
        help="Write every result as JSON (docs/bench-json.md); '-': stdout, table to stderr.")] = None,
    csv_path: Annotated[Optional[Path], typer.Option(
        "--csv", metavar="PATH", dir_okay=False, help="Write the results table as CSV.")] = None,
    ctx: CtxOpt = 4096,
    threads: ThreadsOpt = None,
    gpu_layers: GpuLayersOpt = None,
) -> None:
    """Benchmark speculative decoding against the target alone, interleaved, with an exactness audit.

    Without --draft (with --target), prompt lookup is the only drafter; temperature 0 audits exactness.
    """
    from .bench import Plan, benchmark, configurations, parse_draft_tokens
    from .bench_prompts import read_prompt_files
    from .bench_view import check_output, progress, render, write_csv, write_json
    from .sampling import SamplingParams
    from .session import open_models

    prompts = read_prompt_files(prompt_files, sys.stdin)
    ks = parse_draft_tokens(draft_tokens)
    check_output(json_path)
    check_output(csv_path)
    selection = select_models(pair, target, draft, target is not None and draft is None, offline)
    configs = configurations(ks, selection.paths.draft is not None, not no_lookup, selection.draft_tokens)
    plan = Plan(configs, max_tokens, repeats, warmup, SamplingParams(temp, top_k, top_p, seed), audit_seeds, audit_tokens)
    settings = {"pair": pair, "target": str(selection.paths.target),
                "draft": str(selection.paths.draft) if selection.paths.draft else None, "raw": raw, "ctx": ctx}
    with open_models(selection.paths, load_options(ctx, threads, gpu_layers)) as models:
        total = len(prompts) * (repeats + warmup) * len(plan.configs)
        total += len(prompts) * len(plan.configs) * audit_seeds if temp > 0 else 0
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


# -- serve ----------------------------------------------------------------------------------


@app.command(epilog=examples(
    "specgen serve --pair qwen2.5-coder-1.5b:0.5b",
    "specgen serve --target big.gguf --draft small.gguf --port 8081 --temp 0.7",
    "SPECGEN_API_KEY=secret specgen serve --host 0.0.0.0",
))
def serve(
    pair: PairOpt = None,
    target: TargetOpt = None,
    draft: DraftOpt = None,
    offline: OfflineOpt = False,
    host: Annotated[str, typer.Option(
        "--host", help="Address to listen on; anything but loopback needs --api-key.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port to listen on (0: any free port).")] = 8080,
    api_key: Annotated[Optional[str], typer.Option(
        "--api-key", envvar="SPECGEN_API_KEY", help="Key every request must send as 'Authorization: Bearer KEY'.")] = None,
    queue: Annotated[int, typer.Option(
        "--queue", min=0, help="Requests that may wait while one generates; more get 503.")] = 8,
    max_tokens: MaxTokensOpt = 512,
    temp: TempOpt = 0.0,
    top_k: TopKOpt = 0,
    top_p: TopPOpt = 1.0,
    seed: SeedOpt = None,
    draft_tokens: DraftTokensOpt = "auto",
    no_draft: NoDraftOpt = False,
    ctx: CtxOpt = 4096,
    max_prompt_tokens: Annotated[Optional[int], typer.Option(
        "--max-prompt-tokens", min=1, help="Longest prompt accepted, in tokens (default: what the context holds).")] = None,
    threads: ThreadsOpt = None,
    gpu_layers: GpuLayersOpt = None,
) -> None:
    """Serve the pair behind an OpenAI-compatible API: /v1/chat/completions, /v1/completions, /v1/models.

    The sampling options are defaults that each request may override.
    """
    from .server import ServeOptions, check_binding, model_id
    from .server import serve as run_server

    check_binding(host, api_key)
    selection = select_models(pair, target, draft, no_draft, offline)
    config = generation_config(max_tokens, draft_tokens, selection.draft_tokens, temp, top_k, top_p, seed)
    options = ServeOptions(host, port, api_key, queue, model_id=model_id(pair, target), max_prompt_tokens=max_prompt_tokens)
    run_server(selection.paths, load_options(ctx, threads, gpu_layers), config, options)
