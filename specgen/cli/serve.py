"""`specgen serve`: the pair behind an OpenAI-compatible HTTP API."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from specgen.cli.app import app, examples
from specgen.cli.options import (
    DraftTokensOpt,
    ModelChoice,
    Resources,
    Sampling,
    generation_config,
    load_options,
    option_groups,
    select_models,
)


@app.command(epilog=examples(
    "specgen serve --pair qwen2.5-coder-1.5b:0.5b",
    "specgen serve --target big.gguf --draft small.gguf --port 8081 --temp 0.7",
    "SPECGEN_API_KEY=secret specgen serve --host 0.0.0.0",
))
@option_groups
def serve(
    models: ModelChoice = ModelChoice(),
    host: Annotated[str, typer.Option(
        "--host", help="Address to listen on; anything but loopback needs --api-key.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port to listen on (0: any free port).")] = 8080,
    api_keys: Annotated[Optional[list[str]], typer.Option(
        "--api-key", envvar="SPECGEN_API_KEY", help="Key a request must send as 'Authorization: Bearer KEY' "
        "(repeatable, or comma-separated); each key is a separate user, whose cached prompts no other key's "
        "requests reuse.")] = None,
    queue: Annotated[int, typer.Option(
        "--queue", min=0, help="Requests that may wait while one generates; more get 503 (0: none wait).")] = 8,
    sampling: Sampling = Sampling(max_tokens=512),
    draft_tokens: DraftTokensOpt = "auto",
    max_prompt_tokens: Annotated[Optional[int], typer.Option(
        "--max-prompt-tokens", min=1, help="Longest prompt accepted, in tokens (default: what the context holds).")] = None,
    max_tokens_limit: Annotated[int, typer.Option(
        "--max-tokens-limit", min=1, help="Longest reply any request may ask for (max_tokens above it is lowered; "
        "a full context ends a reply earlier).")] = 4096,
    cache_ram: Annotated[int, typer.Option(
        "--cache-ram", min=0, metavar="MIB", help="RAM for the saved KV caches of other conversations, so clients "
        "taking turns each keep theirs (0: one cache, shared).")] = 512,
    allow_host: Annotated[Optional[list[str]], typer.Option(
        "--allow-host", metavar="NAME", help="Also answer requests whose Host is NAME (repeatable); on loopback only "
        "localhost names are served, so that web pages cannot reach the models.")] = None,
    resources: Resources = Resources(),
) -> None:
    """Serve the pair behind an OpenAI-compatible API: /v1/chat/completions, /v1/completions, /v1/models.

    The sampling options are defaults that each request may override.
    """
    from specgen.serve.http import ServeOptions
    from specgen.serve.server import check_binding, model_id
    from specgen.serve.server import serve as run_server

    keys = split_keys(api_keys or [])
    check_binding(host, keys)
    selection = select_models(models, draft_tokens)
    config, auto = generation_config(sampling, draft_tokens, selection.draft_tokens)
    options = ServeOptions(host, port, keys, queue, model_id=model_id(models.pair, models.target), max_prompt_tokens=max_prompt_tokens,
                           max_tokens_limit=max_tokens_limit,
                           allowed_hosts=tuple(name.lower() for name in allow_host or ()), cache_ram_mib=cache_ram)
    run_server(selection.paths, load_options(resources), config, auto, options)


def split_keys(values: list[str]) -> tuple[str, ...]:
    """The API keys, from repeated --api-key options or SPECGEN_API_KEY, each of which may list
    several separated by commas (blanks around them dropped; a key given twice is one user)."""
    keys = (key.strip() for value in values for key in value.split(","))
    return tuple(dict.fromkeys(key for key in keys if key))
