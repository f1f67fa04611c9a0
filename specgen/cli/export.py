"""`specgen export`: print how to run a pair in llama-server or vLLM, with the same speculation."""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from specgen.cli.app import app, examples
from specgen.cli.options import CtxOpt
from specgen.errors import UsageError


@app.command(
    epilog=examples(
        "specgen export qwen2.5-coder-7b:0.5b --to llama-server",
        "specgen export qwen2.5-7b:0.5b --to vllm -k 5",
        "specgen export qwen2.5-coder-1.5b:0.5b --to llama-server --bench results.json --local",
    )
)
def export(
    name: Annotated[str, typer.Argument(metavar="PAIR", help="Pair name from 'specgen pairs'.")],
    to: Annotated[str, typer.Option("--to", metavar="ENGINE", help="llama-server or vllm.")],
    method: Annotated[
        str | None,
        typer.Option(
            "--method",
            help="draft (the pair's draft model), ngram or suffix (copying, no draft model; suffix: vLLM "
            "only). Default: what --bench found fastest, else draft.",
        ),
    ] = None,
    k: Annotated[
        int | None,
        typer.Option(
            "--draft-tokens",
            "-k",
            min=1,
            max=64,
            help="Tokens drafted per round (default: from --bench, else the pair's K).",
        ),
    ] = None,
    bench: Annotated[
        Path | None,
        typer.Option(
            "--bench",
            dir_okay=False,
            metavar="FILE",
            help="A 'specgen bench --json FILE' result: export the method and K that were fastest there.",
        ),
    ] = None,
    ctx: CtxOpt = 4096,
    local: Annotated[
        bool,
        typer.Option("--local", help="llama-server: the files downloaded here (-m/-md) instead of the hub (-hf/-hfd)."),
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object: argv, speculative_config, notes.")] = False,
) -> None:
    """Print the command that serves a pair in llama-server or vLLM, with the same speculation.

    stdout gets the command line (or --json); why this method and K, and caveats, go to stderr.
    """
    from specgen.models import export as engines
    from specgen.models.registry import load_registry

    if to not in ("llama-server", "vllm"):
        raise UsageError(f"--to takes llama-server or vllm, not {to!r}")
    pair = load_registry().get(name)
    spec = engines.choose(pair, method, k, _read_bench(bench) if bench else None)
    if to == "vllm":
        result = engines.vllm(pair, spec, ctx)
    else:
        result = engines.llama_server(pair, spec, ctx, _local_files(pair) if local else None)
    print(json.dumps(asdict(result)) if json_out else shlex.join(result.argv))
    for note in (f"{spec.method}, K={spec.k}: {spec.reason}", *result.notes):
        print(f"specgen: {note}", file=sys.stderr)


def _read_bench(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UsageError(f"cannot read --bench {path}: {error}") from None


def _local_files(pair) -> tuple[Path, Path]:
    from specgen.models.hub import cached_path

    target, draft = cached_path(pair.target), cached_path(pair.draft)
    if target is None or draft is None:
        raise UsageError(f"--local: {pair.name} is not downloaded here; 'specgen pull {pair.name}' fetches it")
    return target, draft
