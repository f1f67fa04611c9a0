"""`specgen serve`: the pair behind an OpenAI-compatible HTTP API."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

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
from specgen.errors import UsageError

# the option groups' defaults (serve's own: a reply of 512 tokens unless a request asks otherwise)
ANY_MODELS, SERVE_SAMPLING, DEFAULT_RESOURCES = ModelChoice(), Sampling(max_tokens=512), Resources()


@app.command(
    epilog=examples(
        "specgen serve --pair qwen2.5-coder-1.5b:0.5b",
        "specgen serve --target big.gguf --draft small.gguf --port 8081 --temp 0.7",
        "SPECGEN_API_KEY=secret specgen serve --host 0.0.0.0",
    )
)
@option_groups
def serve(
    models: ModelChoice = ANY_MODELS,
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on; anything but loopback needs --api-key.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port to listen on (0: any free port).")] = 8080,
    api_keys: Annotated[
        list[str] | None,
        typer.Option(
            "--api-key",
            envvar="SPECGEN_API_KEY",
            help="Key a request must send as 'Authorization: Bearer KEY' "
            "(repeatable, or comma-separated); each key is a separate user, whose cached prompts no other key's "
            "requests reuse. Prefer SPECGEN_API_KEY or --api-key-file: other users of the machine see the command "
            "line.",
        ),
    ] = None,
    api_key_file: Annotated[
        Path | None,
        typer.Option(
            "--api-key-file",
            dir_okay=False,
            metavar="FILE",
            help="Read the API keys from FILE, one per line (blank "
            "lines and lines starting with # skipped), besides any from --api-key or SPECGEN_API_KEY.",
        ),
    ] = None,
    queue: Annotated[
        int,
        typer.Option("--queue", min=0, help="Requests that may wait while one generates; more get 503 (0: none wait)."),
    ] = 8,
    sampling: Sampling = SERVE_SAMPLING,
    draft_tokens: DraftTokensOpt = "auto",
    max_prompt_tokens: Annotated[
        int | None,
        typer.Option(
            "--max-prompt-tokens", min=1, help="Longest prompt accepted, in tokens (default: what the context holds)."
        ),
    ] = None,
    max_tokens_limit: Annotated[
        int,
        typer.Option(
            "--max-tokens-limit",
            min=1,
            help="Longest reply any request may ask for (max_tokens above it is lowered; "
            "a full context ends a reply earlier).",
        ),
    ] = 4096,
    cache_ram: Annotated[
        int,
        typer.Option(
            "--cache-ram",
            min=0,
            metavar="MIB",
            help="RAM for the saved KV caches of other conversations, so clients "
            "taking turns each keep theirs (0: one cache, shared).",
        ),
    ] = 512,
    max_connections: Annotated[
        int,
        typer.Option(
            "--max-connections",
            min=1,
            help="Connections open at once (a quarter of them per client address); more are answered 503 at once.",
        ),
    ] = 256,
    receive_timeout: Annotated[
        float,
        typer.Option(
            "--receive-timeout",
            min=0.1,
            metavar="SECONDS",
            help="Time a client has to send a request's headers, and again its body; slower ones are answered 408.",
        ),
    ] = 20.0,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-host",
            metavar="NAME",
            help="Also answer requests whose Host is NAME (repeatable); on loopback only "
            "localhost names are served, so that web pages cannot reach the models.",
        ),
    ] = None,
    resources: Resources = DEFAULT_RESOURCES,
) -> None:
    """Serve the pair behind an OpenAI-compatible API: /v1/chat/completions, /v1/completions, /v1/models.

    The sampling options are defaults that each request may override.
    """
    from specgen.serve.connections import ConnectionLimits
    from specgen.serve.http import ServeOptions
    from specgen.serve.server import check_binding, model_id
    from specgen.serve.server import serve as run_server

    if any(arg == "--api-key" or arg.startswith("--api-key=") for arg in sys.argv):
        print(
            "specgen: note: --api-key shows the key to every user of this machine (ps); SPECGEN_API_KEY or "
            "--api-key-file keeps it private",
            file=sys.stderr,
        )
    keys = split_keys([*(api_keys or []), *read_key_file(api_key_file)])
    check_binding(host, keys)
    selection = select_models(models, draft_tokens)
    config, auto = generation_config(sampling, draft_tokens, selection.draft_tokens)
    options = ServeOptions(
        host,
        port,
        keys,
        queue,
        model_id=model_id(models.pair, models.target),
        max_prompt_tokens=max_prompt_tokens,
        max_tokens_limit=max_tokens_limit,
        allowed_hosts=tuple(name.lower() for name in allow_host or ()),
        cache_ram_mib=cache_ram,
        connections=ConnectionLimits(max_connections, receive_timeout),
    )
    run_server(selection.paths, load_options(resources), config, auto, options)


def read_key_file(path: Path | None) -> list[str]:
    """The keys in an --api-key-file: one per line, blank lines and # comments skipped."""
    if path is None:
        return []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"cannot read --api-key-file {path}: {getattr(error, 'strerror', None) or error}") from None
    keys = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if not keys:
        raise UsageError(f"--api-key-file {path} holds no key; write one key per line")
    return keys


def split_keys(values: list[str]) -> tuple[str, ...]:
    """The API keys, from repeated --api-key options or SPECGEN_API_KEY, each of which may list
    several separated by commas (blanks around them dropped; a key given twice is one user)."""
    keys = (key.strip() for value in values for key in value.split(","))
    return tuple(dict.fromkeys(key for key in keys if key))
