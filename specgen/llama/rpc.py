"""llama.cpp's RPC backend: a target's layers on other machines' devices, and a worker that
offers this machine's.

A user whose target does not fit one machine runs a worker on each other machine and names
them with `--rpc host:port,...`; llama.cpp then places the target's layers on the workers (by
their free memory) and on this machine's GPU, and each target pass makes network round trips.
Speculative decoding pays those round trips once for K + 1 tokens. The draft model never gets
a worker: RPC devices are handed to the target's load alone, never registered for the process.

llama.cpp aborts the whole process when a worker cannot be reached or stops answering, so a
worker is greeted here first (the protocol's HELLO, over a plain socket, with a timeout): a
wrong address, a busy worker or another protocol version is one line. A worker that stops
answering later is reported from ggml's abort hook, naming the workers that no longer listen.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from specgen.errors import SpecgenError, UsageError, exit_now
from specgen.llama import library

DEFAULT_PORT = 50052  # llama.cpp's rpc-server default
HELLO = 14  # RPC_CMD_HELLO, fixed across protocol versions
CAPS = 24  # RPC_CONN_CAPS_SIZE: the transport capabilities in HELLO
PROBE_TIMEOUT = 5.0
HOST = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$")
FORMAT = "--rpc takes HOST:PORT[,HOST:PORT...] (e.g. 192.168.1.20:50052)"
NO_RPC = (
    "this llama-cpp-python was built without llama.cpp's RPC backend; "
    "'specgen doctor' prints the command that rebuilds it with -DGGML_RPC=ON"
)


class RpcError(SpecgenError):
    """A worker that cannot be reached, does not answer, or speaks another protocol."""


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def parse_endpoints(text: str) -> tuple[Endpoint, ...]:
    """'a:50052,b:50052' -> Endpoints; a malformed or repeated one is a UsageError."""
    found: list[Endpoint] = []
    for item in (part.strip() for part in text.split(",")):
        host, _, port = item.rpartition(":")
        if not HOST.match(host) or not port.isdigit() or not 1 <= int(port) <= 65535:
            hint = " (IPv6 addresses are not supported by llama.cpp's RPC client)" if item.count(":") > 1 else ""
            raise UsageError(f"{FORMAT}; {item!r} is not one{hint}")
        endpoint = Endpoint(host, int(port))
        if endpoint in found:
            raise UsageError(f"--rpc names {endpoint} twice")
        found.append(endpoint)
    return tuple(found)


# -- the client side ----------------------------------------------------------------------------


def probe(endpoint: Endpoint, timeout: float = PROBE_TIMEOUT) -> str:
    """Greet the worker as llama.cpp's client does; its protocol version ("7.0.0"), or RpcError."""
    try:
        sock = socket.create_connection((endpoint.host, endpoint.port), timeout=timeout)
    except socket.gaierror:
        raise RpcError(f"--rpc {endpoint}: cannot resolve the name {endpoint.host}") from None
    except ConnectionRefusedError:
        raise RpcError(
            f"nothing is listening at {endpoint}; start a worker there with 'specgen worker --port {endpoint.port}'"
        ) from None
    except TimeoutError:
        raise RpcError(f"no answer from {endpoint} within {timeout:g} s: a wrong address, or a firewall") from None
    except OSError as error:
        raise RpcError(f"cannot reach {endpoint}: {error.strerror or error}") from None
    with sock:
        try:
            sock.sendall(bytes([HELLO]) + struct.pack("<Q", CAPS) + bytes(CAPS))
            size = struct.unpack("<Q", _receive(sock, 8))[0]
            reply = _receive(sock, size) if size == 4 + CAPS else b""
        except TimeoutError:
            raise RpcError(
                f"{endpoint} took the connection but did not answer within {timeout:g} s: a worker "
                "serves one client at a time (is another using it?), or it is not an RPC worker"
            ) from None
        except OSError:
            reply = b""
    if not reply:
        raise RpcError(
            f"{endpoint} is not an RPC worker of this protocol version: run 'specgen worker' "
            "there from the same llama-cpp-python version"
        )
    return ".".join(map(str, reply[:3]))


def _receive(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            return b""
        data += chunk
    return data


@contextmanager
def signals_for_main_thread_only(active: bool = True) -> Iterator[None]:
    """Block Ctrl-C and SIGTERM in this thread while the block starts threads that talk RPC
    (ggml's dispatcher threads while a model loads, the worker's server thread): they inherit the
    mask, so these signals always reach the main thread, where Python acts on them. Otherwise the
    kernel may hand one to such a thread, its socket call fails with EINTR, and llama.cpp takes
    that for a lost worker. A signal that comes meanwhile waits for the block's end (a load does
    not stop halfway either way)."""
    if not active or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


_connected: dict[Endpoint, list[library.Device]] = {}


def connect(endpoints: tuple[Endpoint, ...]) -> list[library.Device]:
    """The devices of every worker, in order, connecting on first use (each greeted first)."""
    if not endpoints:
        return []
    if not library.has_rpc():
        raise RpcError(NO_RPC)
    for endpoint in endpoints:
        if endpoint not in _connected:
            probe(endpoint)
            _report_aborts((*_connected, endpoint))
            with signals_for_main_thread_only():
                _connected[endpoint] = library.rpc_devices(str(endpoint))
            if not _connected[endpoint]:
                raise RpcError(f"the worker at {endpoint} offers no device")
    return [device for endpoint in endpoints for device in _connected[endpoint]]


def _report_aborts(endpoints: tuple[Endpoint, ...]) -> None:
    """When ggml aborts (a worker stopped answering), one line naming the workers gone, and exit 1."""

    def handler(message: str) -> None:
        if os.environ.get("SPECGEN_DEBUG") == "1":
            sys.stderr.write(f"ggml: {message}\n")
        names = ", ".join(map(str, _gone(endpoints)))
        if "handshake" in message:
            exit_now(
                RpcError(
                    f"the RPC worker at {names} refused this client's protocol version: run the same "
                    "llama-cpp-python version on both machines"
                )
            )
        if "RPC" in message:
            exit_now(
                RpcError(
                    f"the RPC worker at {names} stopped answering (stopped, crashed, or the network "
                    "dropped); start it again and rerun"
                )
            )
        exit_now(SpecgenError(f"llama.cpp stopped: {message}"))

    library.on_abort(handler)


def _gone(endpoints: tuple[Endpoint, ...], within_s: float = 2.0) -> list[Endpoint]:
    """The workers that refuse connections now, asking again for a moment: a worker process that
    just died may close its connection to us a little before its listening port. All of them
    when none refuses (a machine gone from the network does not answer at all)."""
    deadline = time.monotonic() + within_s
    while True:
        gone = [endpoint for endpoint in endpoints if _refuses(endpoint)]
        if gone or time.monotonic() > deadline:
            return gone or list(endpoints)
        time.sleep(0.1)


def _refuses(endpoint: Endpoint) -> bool:
    """Whether nothing listens there any more. A live worker busy with this client may leave a new
    connection waiting, or drop it when its one-deep queue is full: a timeout is not proof."""
    try:
        socket.create_connection((endpoint.host, endpoint.port), timeout=0.5).close()
    except TimeoutError:
        return False
    except OSError:
        return True
    return False


def placement(target_layers: dict[str, int], draft_layers: dict[str, int] | None) -> str:
    """ "target on 10.0.0.2:50052 (20 layers), CPU (9 layers); draft on CPU (25 layers)"."""

    def spread(layers: dict[str, int]) -> str:
        return (
            ", ".join(f"{where} ({count} layer{'' if count == 1 else 's'})" for where, count in layers.items()) or "?"
        )

    return f"target on {spread(target_layers)}" + (f"; draft on {spread(draft_layers)}" if draft_layers else "")


# -- the worker side ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Serving:
    """A running worker: its server thread, the devices it offers and its protocol version."""

    thread: threading.Thread
    devices: tuple[library.Device, ...]
    version: str


def serve(host: str, port: int, threads: int, cache: Path | None, stopped: Callable[[], bool]) -> Serving:
    """Serve this machine's devices on host:port from a daemon thread (llama.cpp's server blocks in C
    for good); return once it answers a HELLO, or raise. `stopped()` ends the wait early."""
    if not library.has_rpc():
        raise RpcError(NO_RPC)
    _check_port(host, port)
    offered = library.serving_devices()
    thread = threading.Thread(
        target=library.run_rpc_server,
        name="rpc-server",
        daemon=True,
        args=(f"{host}:{port}", str(cache) if cache else None, threads, offered),
    )
    with signals_for_main_thread_only():
        thread.start()
    local = Endpoint("127.0.0.1" if host == "0.0.0.0" else host, port)
    deadline = time.monotonic() + 30
    while True:
        try:
            return Serving(thread, tuple(offered), probe(local, timeout=2.0))
        except RpcError:
            if not thread.is_alive():
                raise RpcError(f"llama.cpp's RPC server could not start on {host}:{port}") from None
            if stopped() or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _check_port(host: str, port: int) -> None:
    """Bind and release host:port, so that a taken port or a foreign address is one clear line."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        raise RpcError(
            f"cannot listen on {host}:{port}: {error.strerror or error}; pick another --port or --host"
        ) from error
    finally:
        sock.close()
