"""Running `specgen serve`: refuse an unguarded bind, take the port, load the pair, run uvicorn on
its own thread, and keep the signals on the main thread (Ctrl-C drains, a second stops at once)."""

from __future__ import annotations

import asyncio
import logging
import math
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path

import uvicorn

from specgen.decoding.loop import GenerationConfig
from specgen.errors import SpecgenError, UsageError
from specgen.llama.model import LoadOptions
from specgen.models.paths import ModelPaths
from specgen.serve.connections import guarded_protocol
from specgen.serve.front import is_loopback
from specgen.serve.http import ServeOptions, build_app
from specgen.serve.scheduler import Limits, Scheduler

# seconds the replies a second Ctrl-C stopped get to send their last chunk and close before open
# connections are cut (a third Ctrl-C cuts them at once)
CUT_AFTER = 3.0


def check_binding(host: str, api_keys: tuple[str, ...]) -> None:
    """Refuse to listen beyond this machine without an API key."""
    if not is_loopback(host) and not api_keys:
        raise UsageError(
            f"--host {host} lets other machines reach the models; pass --api-key KEY (or set SPECGEN_API_KEY) "
            "so that only clients with the key are served, or keep the default --host 127.0.0.1"
        )


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound now so that a taken port is one clear error (port 0: any free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1" if host == "localhost" else host, port))
    except OSError as error:
        sock.close()
        reason = error.strerror or error
        raise SpecgenError(f"cannot listen on {host}:{port}: {reason}; pick another --port or --host") from None
    sock.listen(128)
    return sock


def url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def serve(paths: ModelPaths, load: LoadOptions, config: GenerationConfig, auto: bool, options: ServeOptions) -> None:
    """Bind, load the pair once, and serve until Ctrl-C (or SIGTERM); one scheduler thread generates,
    with the auto policy choosing each round where `auto`."""
    from specgen.engine.drafting import base_drafter, loaded_draft
    from specgen.engine.generation import MEASURING_NOTE
    from specgen.llama.calibrate import will_measure
    from specgen.llama.pair import open_models
    from specgen.llama.rpc import placement

    check_binding(options.host, options.api_keys)
    sock = bind(options.host, options.port)
    with open_models(paths, load) as (target, draft):
        drafter = base_drafter(draft)
        limits = Limits(
            options.queue,
            options.max_prompt_tokens or target.n_ctx,
            options.max_tokens_limit,
            options.cache_ram_mib * 2**20,
            max(len(options.api_keys), 1),
        )
        if auto and will_measure(target, loaded_draft(drafter)):  # the scheduler measures them before serving
            print("specgen: " + MEASURING_NOTE, file=sys.stderr, flush=True)
        scheduler = Scheduler(target, drafter, config, auto, limits)
        app = build_app(scheduler, options, paths.draft.name if paths.draft else None)
        settings = uvicorn.Config(
            app,
            http=guarded_protocol(options.connections),
            log_level="warning",
            access_log=False,
            lifespan="off",
            server_header=False,
        )
        if os.environ.get("SPECGEN_DEBUG") != "1":
            logging.getLogger("uvicorn.error").addFilter(_not_cut)
        server = uvicorn.Server(settings)
        if load.rpc:
            print(f"specgen: {placement(target.layers, draft.layers if draft else None)}", file=sys.stderr)
        print(
            f"specgen: serving {options.model_id} at {url(sock)}/v1 (OpenAI API; Ctrl-C stops)",
            file=sys.stderr,
            flush=True,
        )
        with scheduler:
            _run_until_stopped(server, sock, scheduler)
    print("specgen: stopped", file=sys.stderr, flush=True)


def _run_until_stopped(server: uvicorn.Server, sock: socket.socket, scheduler: Scheduler) -> None:
    """Run uvicorn on a thread and keep signals here: the first Ctrl-C (or SIGTERM) stops accepting
    and lets running and waiting requests finish; the second stops the running one after its round
    and skips the waiting ones, which end as interrupted replies; connections still open
    `CUT_AFTER` seconds later (or at a third) are cut.

    The handler only counts signals, and the loop acts on them between waits: a signal that raised
    wherever the main thread happened to be could cut the first stop short and hang the exit."""
    done = threading.Event()
    received: list[int] = []

    def run() -> None:
        try:
            server.run(sockets=[sock])
        finally:
            done.set()

    thread = threading.Thread(target=run, name="specgen-http", daemon=True)  # never outlives an error here
    previous = {
        sig: signal.signal(sig, lambda number, frame: received.append(number))
        for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        thread.start()
        handled, cut_at = 0, math.inf
        while not done.wait(0.1):
            for _ in range(handled, len(received)):
                if _stop(server, scheduler):
                    cut_at = time.monotonic() + (CUT_AFTER if math.isinf(cut_at) else 0.0)
                handled += 1
            if time.monotonic() >= cut_at:
                server.force_exit = True
        thread.join()
    finally:
        server.should_exit = True
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _not_cut(record: logging.LogRecord) -> bool:
    """Drop uvicorn's report of a request cancelled because its connection was cut on the way
    out (`CUT_AFTER`): the cut is deliberate, and its traceback would read as a crash."""
    return not (record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError))


def _stop(server: uvicorn.Server, scheduler: Scheduler) -> bool:
    """Act on one Ctrl-C: the first drains, a later one stops every job (True). Connections are
    not cut here: a stopped reply still sends its last chunk and its access-log line."""
    if server.should_exit:
        scheduler.cancel_all()
        print("specgen: stopping now", file=sys.stderr, flush=True)
        return True
    server.should_exit = True
    busy = scheduler.busy + scheduler.waiting
    print(
        f"specgen: finishing {busy} request(s), then exiting (Ctrl-C again stops at once)"
        if busy
        else "specgen: exiting",
        file=sys.stderr,
        flush=True,
    )
    return False


def model_id(pair: str | None, target: Path | None) -> str:
    """The name clients ask for: the pair's, or the target file's stem."""
    if target is not None:
        return target.stem
    from specgen.models.registry import load_registry

    return pair or load_registry().default
