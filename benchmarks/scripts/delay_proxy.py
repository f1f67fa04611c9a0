"""A TCP proxy that delays every byte by a fixed time in each direction: a slower network between
`specgen run --rpc` and a worker, where `tc qdisc ... netem` is not available (docs/benchmarks.md).

    python benchmarks/scripts/delay_proxy.py LISTEN_PORT WORKER_HOST:WORKER_PORT ONE_WAY_MS

A round trip through it takes 2 x ONE_WAY_MS more than without it. Each direction has a reader
thread that stamps what it receives and a writer thread that sends it on once its time has come,
so delays do not add up over a stream and bandwidth is not limited. Standard library only.
"""

from __future__ import annotations

import queue
import socket
import sys
import threading
import time


def pump(source: socket.socket, target: socket.socket, delay_s: float) -> None:
    """Forward source -> target, each chunk `delay_s` after it arrived; close both at the end."""
    held: queue.Queue = queue.Queue()

    def read() -> None:
        while chunk := source.recv(1 << 20):
            held.put((time.perf_counter() + delay_s, chunk))
        held.put((0.0, b""))

    threading.Thread(target=read, daemon=True).start()
    while True:
        due, chunk = held.get()
        if not chunk:
            break
        time.sleep(max(0.0, due - time.perf_counter()))
        target.sendall(chunk)
    target.shutdown(socket.SHUT_WR)


def main(port: int, upstream: str, one_way_ms: float) -> None:
    host, upstream_port = upstream.rsplit(":", 1)
    server = socket.create_server(("127.0.0.1", port))
    while True:
        client, _ = server.accept()
        worker = socket.create_connection((host, int(upstream_port)))
        for sock in (client, worker):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for a, b in ((client, worker), (worker, client)):
            threading.Thread(target=pump, args=(a, b, one_way_ms / 1000), daemon=True).start()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], float(sys.argv[3]))
