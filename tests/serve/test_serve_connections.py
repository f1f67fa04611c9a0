"""Connections that hold the server without asking anything of it: ones that trickle their
headers or body are answered 408 at the receive deadline, and past the cap on open connections
(a quarter of it per client address) a connection is answered 503 at once, while a client from
another address is still served. Real server on loopback; the other client addresses are other
loopback addresses (127.0.0.2, ...)."""

from __future__ import annotations

import socket
import time

import httpx
import pytest
from servers import Server

DEADLINE = 1.0  # --receive-timeout
CAP = 8  # --max-connections: 2 per client address


@pytest.fixture(scope="module")
def server(tiny_models):
    running = Server(
        "--target",
        str(tiny_models["target"]),
        "--no-draft",
        "--ctx",
        "256",
        "-t",
        "1",
        "-n",
        "2",
        "--max-connections",
        str(CAP),
        "--receive-timeout",
        str(DEADLINE),
    )
    yield running
    running.stop()


def connect(server: Server, source: str = "127.0.0.1") -> socket.socket:
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10, source_address=(source, 0))
    return sock


def answer(sock: socket.socket) -> tuple[bytes, float]:
    """What the server sends until it closes the connection, and when it closed it."""
    data = b""
    while chunk := sock.recv(4096):
        data += chunk
    return data, time.perf_counter()


def test_headers_sent_a_byte_at_a_time_are_answered_408_at_the_deadline(server):
    sock = connect(server)
    start = time.perf_counter()
    sock.settimeout(0.2)
    request = b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    data = b""
    for byte in request:  # 0.2 s a byte: 16 s for the whole header, were it let
        try:
            sock.send(bytes([byte]))
            data += sock.recv(4096)
        except TimeoutError:
            continue
        except OSError:
            break
        if data:
            break
    sock.settimeout(5)
    rest, closed = answer(sock)
    assert (data + rest).startswith(b"HTTP/1.1 408") and b"did not arrive" in data + rest
    assert DEADLINE <= closed - start < DEADLINE + 1.0


def test_a_client_that_sends_more_after_its_408_gets_the_end_of_the_stream_not_a_reset(server):
    """Bytes that reach a closed socket are answered with a reset, which a client reading the
    answer sees as an error (and, where it comes first, instead of the answer): the refusal ends
    the stream and then reads and drops what still comes (a lingering close)."""
    sock = connect(server)
    sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # the headers never end
    sock.settimeout(DEADLINE + 2.0)
    data = b""
    while not data.endswith(b"}"):
        data += sock.recv(4096)
    sock.sendall(b"x-late: 1\r\n")  # a client that has not read the answer yet goes on sending
    time.sleep(0.1)
    rest = sock.recv(4096)  # ConnectionResetError where the server's socket was closed at once
    sock.close()
    assert data.startswith(b"HTTP/1.1 408") and rest == b""


def test_a_body_that_trickles_is_answered_408_at_the_deadline(server):
    sock = connect(server)
    sock.sendall(
        b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b'Content-Length: 100\r\n\r\n{"prompt":'
    )
    start = time.perf_counter()
    data, closed = answer(sock)
    assert data.startswith(b"HTTP/1.1 408") and b"body did not arrive" in data
    assert DEADLINE <= closed - start < DEADLINE + 1.0
    sock.close()


def test_past_a_clients_share_of_connections_it_gets_503_and_others_are_still_served(server):
    held = [connect(server, "127.0.0.2") for _ in range(CAP // 4)]
    extra = connect(server, "127.0.0.2")
    start = time.perf_counter()
    data, closed = answer(extra)
    assert data.startswith(b"HTTP/1.1 503") and b"this client's limit" in data and closed - start < 0.5
    assert httpx.get(server.url + "/health", timeout=5).status_code == 200  # another address: served
    for sock in held:
        sock.close()


def test_past_the_servers_cap_a_connection_gets_503_at_once(server):
    held = [connect(server, f"127.0.0.{2 + i // 2}") for i in range(CAP)]  # two from each of four addresses
    time.sleep(0.1)
    extra = connect(server, "127.0.0.9")
    data, _ = answer(extra)
    assert data.startswith(b"HTTP/1.1 503") and b"the server's limit" in data
    for sock in held:
        sock.close()
    time.sleep(0.2)
    assert httpx.get(server.url + "/health", timeout=5).status_code == 200  # freed: served again
