"""`specgen bench`: speculative decoding against the target alone, interleaved, with an audit."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Annotated

import typer

from specgen.cli.app import app, examples
from specgen.cli.options import (
    MODEL,
    SAMPLING,
    ModelChoice,
    RawOpt,
    Resources,
    Sampling,
    load_options,
    option_groups,
    sampling_params,
    select_models,
)
from specgen.errors import UsageError


@app.command(
    epilog=examples(
        "specgen bench benchmarks/prompts/dev/general/code.txt -k 2,4,auto",
        "specgen bench prompts.jsonl --pair llama3-8b:1b --json results.json",
        "specgen bench task.txt --target big.gguf -r 5 --csv results.csv",
    )
)
@option_groups
def bench(
    prompt_files: Annotated[
        list[str],
        typer.Argument(
            metavar="PROMPT_FILE",
            help="One prompt, several split by '---' lines, or JSONL with a \"prompt\" field; '-' is stdin.",
        ),
    ],
    models: ModelChoice = ModelChoice(),
    draft_tokens: Annotated[
        str,
        typer.Option(
            "--draft-tokens",
            "-k",
            rich_help_panel=MODEL,
            help="Draft lengths K to compare; auto: adaptive K, as 'specgen run' decodes.",
        ),
    ] = "2,4,8,auto",
    no_lookup: Annotated[bool, typer.Option("--no-lookup", help="Leave out the prompt-lookup drafter.")] = False,
    repeats: Annotated[
        int,
        typer.Option(
            "--repeats",
            "-r",
            min=1,
            help="Measured runs of each configuration per prompt (one prompt needs 4 to show a difference at 5%).",
        ),
    ] = 4,
    warmup: Annotated[
        int, typer.Option("--warmup", min=0, help="Unmeasured runs of each configuration per prompt first.")
    ] = 1,
    sampling: Sampling = Sampling(max_tokens=128),
    audit_seeds: Annotated[
        int,
        typer.Option(
            "--audit-seeds",
            min=0,
            rich_help_panel=SAMPLING,
            help="With --temp > 0: seeds per configuration and prompt for the distribution audit (0: none).",
        ),
    ] = 200,
    audit_tokens: Annotated[
        int,
        typer.Option(
            "--audit-tokens", min=1, rich_help_panel=SAMPLING, help="Positions the distribution audit compares."
        ),
    ] = 6,
    raw: RawOpt = False,
    json_path: Annotated[
        str | None,
        typer.Option(
            "--json",
            metavar="PATH",
            help="Write every result as JSON (docs/bench-json.md); '-': stdout, table to stderr.",
        ),
    ] = None,
    csv_path: Annotated[
        Path | None, typer.Option("--csv", metavar="PATH", dir_okay=False, help="Write the results table as CSV.")
    ] = None,
    endpoints: Annotated[
        list[str] | None,
        typer.Option(
            "--endpoint",
            metavar="URL",
            help="Also run the prompts on this OpenAI-compatible server (llama-server, "
            "vLLM, Ollama, LM Studio, specgen serve), as one more row (repeatable).",
        ),
    ] = None,
    endpoint_model: Annotated[
        str | None,
        typer.Option(
            "--endpoint-model",
            metavar="NAME",
            help="The model to ask the endpoints for (default: the first they list).",
        ),
    ] = None,
    endpoint_key: Annotated[
        str | None,
        typer.Option("--endpoint-key", metavar="KEY", envvar="SPECGEN_ENDPOINT_KEY", help="API key for the endpoints."),
    ] = None,
    resources: Resources = Resources(),
) -> None:
    """Benchmark speculative decoding against the target alone, interleaved, with an exactness audit.

    Without a draft model (--no-draft, or --target alone), copying is the only drafter; temperature 0
    audits exactness.
    """
    from specgen.bench.endpoint import resolve
    from specgen.bench.plan import Plan, configurations, endpoint_configs, parse_draft_tokens
    from specgen.bench.prompts import read_prompt_files
    from specgen.bench.runner import benchmark
    from specgen.bench.view import check_output, progress, render, write_csv, write_json
    from specgen.llama.pair import open_models

    prompts = read_prompt_files(prompt_files, sys.stdin)
    with_tools = next((p.name for p in prompts if p.tools), None)
    if endpoints and with_tools:
        raise UsageError(
            f"prompt {with_tools} carries tools, which only the local rows time (a call comes back as "
            "tool_calls, not as streamed text); bench it without --endpoint"
        )
    ks = parse_draft_tokens(draft_tokens)
    check_output(json_path)
    check_output(csv_path)
    alone = models.no_draft or (models.target is not None and models.draft is None)
    selection = select_models(dataclasses.replace(models, no_draft=alone))
    servers = endpoint_configs([resolve(url, endpoint_model, endpoint_key) for url in endpoints or ()])
    configs = configurations(ks, selection.paths.draft is not None, not no_lookup, selection.draft_tokens, servers)
    plan = Plan(
        configs,
        sampling.max_tokens,
        repeats,
        warmup,
        sampling_params(sampling),
        audit_seeds,
        audit_tokens,
        endpoint_key,
    )
    settings = {
        "pair": models.pair,
        "target": str(selection.paths.target),
        "draft": str(selection.paths.draft) if selection.paths.draft else None,
        "raw": raw,
        "ctx": resources.ctx,
        "rpc": resources.rpc,
    }
    with open_models(selection.paths, load_options(resources)) as (target, draft):
        total = len(prompts) * (repeats + warmup) * len(plan.configs)
        total += len(prompts) * len(plan.local.configs) * audit_seeds if sampling.temp > 0 else 0
        with progress(total, [p.name for p in prompts], repeats) as started:
            result = benchmark(target, draft, prompts, plan, raw, started, settings)
    render(result, sys.stderr if json_path == "-" else sys.stdout)
    if json_path:
        write_json(result, json_path)
    if csv_path:
        write_csv(result, csv_path)
