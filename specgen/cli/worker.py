"""`specgen worker`: lend this machine's GPU (or CPU) to another machine's `--rpc`, through
llama.cpp's RPC server in this same install."""

from __future__ import annotations

import ipaddress
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Annotated

import typer

from specgen.cli.app import app, examples
from specgen.cli.options import ThreadsOpt
from specgen.errors import UsageError

NO_AUTH = (
    "llama.cpp's RPC protocol has no authentication and is not hardened: anyone who can reach "
    "{where} can use this machine's memory and compute, and read or overwrite what it holds. "
    "Use it only on a network you trust, never one open to the internet"
)


@app.command(
    epilog=examples(
        "specgen worker",
        "specgen worker --port 50053 --threads 4 --cache",
        "specgen worker --host 192.168.1.20 --allow-network",
    )
)
def worker(
    host: Annotated[
        str, typer.Option("--host", help="IPv4 address to listen on; anything but loopback needs --allow-network.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port to listen on.")] = 50052,
    threads: ThreadsOpt = None,
    cache: Annotated[
        bool,
        typer.Option(
            "--cache",
            help="Keep large tensors clients send in specgen's cache folder, so that loading the same "
            "model again sends only their hashes.",
        ),
    ] = False,
    allow_network: Annotated[
        bool,
        typer.Option(
            "--allow-network",
            help="Listen on an address other machines reach. The RPC protocol has no "
            "authentication: only on a network you trust.",
        ),
    ] = False,
) -> None:
    """Lend this machine's GPU (or CPU) to 'specgen run --rpc HOST:PORT' on another machine.

    Runs llama.cpp's RPC server from this install until Ctrl-C. On the main machine, list every
    worker in --rpc; the target's layers are spread over them, and the draft model stays there.
    """
    from specgen.llama.library import default_threads
    from specgen.llama.rpc import RpcError, serve
    from specgen.storage import cache_dir

    host = _worker_host(host, allow_network, port)
    threads = threads or default_threads()
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda number, frame: stop.set())
    _quiet_native_stdout()
    folder = _tensor_cache(cache_dir() / "rpc") if cache else None
    try:
        serving = serve(host, port, threads, folder, stop.is_set)
    except RpcError:
        if not stop.is_set():
            raise
        _stopped()
    offered = ", ".join(f"{device.name} ({device.description})" for device in serving.devices)
    print(
        f"specgen worker: serving {offered} on {host}:{port} with {threads} threads (RPC protocol "
        f"{serving.version}{f'; tensor cache {folder}' if folder else ''}); use it with --rpc "
        f"{'THIS_MACHINE' if host == '0.0.0.0' else host}:{port}; Ctrl-C stops",
        file=sys.stderr,
        flush=True,
    )
    while not stop.wait(0.2):
        if not serving.thread.is_alive():
            raise RpcError("llama.cpp's RPC server stopped (see the lines above)")
    _stopped()


def _worker_host(host: str, allow_network: bool, port: int) -> str:
    """The address to bind: IPv4 (llama.cpp's server binds an address, not a name), loopback unless allowed."""
    host = "127.0.0.1" if host == "localhost" else host
    try:
        address = ipaddress.IPv4Address(host)
    except ValueError:
        raise UsageError(f"--host takes an IPv4 address of this machine (or 0.0.0.0 for all), not {host!r}") from None
    if not address.is_loopback and not allow_network:
        raise UsageError(
            f"--host {host} lets other machines reach this worker, and llama.cpp's RPC protocol has "
            "no authentication; pass --allow-network on a network you trust, or keep --host 127.0.0.1"
        )
    if not address.is_loopback:
        print("specgen worker: WARNING: " + NO_AUTH.format(where=f"{host}:{port}"), file=sys.stderr, flush=True)
    return host


def _tensor_cache(folder: Path) -> Path:
    """The folder llama.cpp's server keeps tensors in, made now: it writes nothing where the folder is missing."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(
            f"--cache cannot make {folder} ({error.strerror}); set SPECGEN_CACHE_DIR to a folder "
            "you can write, or drop --cache"
        ) from None
    return folder


def _quiet_native_stdout() -> None:
    """llama.cpp's server prints a banner and a line per connection on C's stdout (its client
    reconnects for each query at load, so those lines mislead). stdout carries nothing here:
    they are dropped, or shown on stderr with SPECGEN_DEBUG=1; its errors go to stderr anyway."""
    target = sys.stderr.fileno() if os.environ.get("SPECGEN_DEBUG") == "1" else os.open(os.devnull, os.O_WRONLY)
    os.dup2(target, sys.stdout.fileno())


def _stopped() -> None:
    """End the worker now. llama.cpp's server cannot be stopped from outside and its thread holds
    its backends, so the process exits at once rather than run C++ teardown under a live server."""
    print("specgen worker: stopped", file=sys.stderr, flush=True)
    os._exit(0)
