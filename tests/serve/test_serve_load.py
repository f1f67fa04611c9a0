"""`specgen serve` under load (tests/serve/loadtest.py): concurrent streaming clients, hang-ups,
garbage and a burst past the queue, against a real server on loopback for about 20 seconds."""

from __future__ import annotations

import statistics

from loadtest import report, run
from servers import Server, tiny_pair


def test_the_server_keeps_every_promise_under_load(tiny_models):
    server = Server(
        *tiny_pair(tiny_models["target"], tiny_models["draft"]),
        "--queue",
        "2",
        "--cache-ram",
        "16",
    )
    try:
        tally, alone = run(server.url, server.process.pid, seconds=20, clients=5, max_tokens=48, burst_size=12)
        print(report(tally, alone, 20))
        assert server.process.poll() is None, "the server died"
        assert tally.problems == []  # no 5xx but 503-with-Retry-After, no broken stream, no transport error
        outcomes = tally.outcomes
        assert outcomes["stream: completed"] >= 20 and outcomes["hang-up: hung up mid-stream"] >= 5
        assert outcomes["garbage: 4xx"] >= 5
        assert sum(n for kind, n in outcomes.items() if kind.endswith("503 queue full")) >= 1
        assert alone and len(tally.greedy) >= 3 and all(text == alone for text in tally.greedy)
        rss = [mib for _, mib in tally.rss_mib]
        quarter = len(rss) // 4
        assert quarter >= 5
        # bounded growth: the saved caches (16 MiB here) and the copy memory (at most ~25 MB) may fill
        assert statistics.median(rss[-quarter:]) <= statistics.median(rss[:quarter]) + 48
    finally:
        server.stop()
    assert "Traceback" not in "\n".join(server.lines)


HOSTILE = (
    "tool-call arguments [*100000",
    "body nested [*100000",
    "tool parameters nested 400",
    "control tokens in content",
)


def test_normal_clients_are_not_held_up_by_hostile_ones_beside_them(tiny_models):
    """The same normal clients for 10 s alone, then 10 s beside issue 46's probes (those refused
    before any work; the rest need bounds in llama/: test_serve_abuse.py) and waves of 80
    connections trickling their headers from another address (64 held to the deadline, the rest
    refused at once): their median latency moves by under a second, /health answers within a
    second throughout, and every probe is refused within a second."""
    server = Server(
        *tiny_pair(tiny_models["target"], tiny_models["draft"]),
        "--queue",
        "4",
        "--receive-timeout",
        "2",
    )
    try:
        calm, alone = run(server.url, server.process.pid, seconds=10, clients=3, max_tokens=24, burst_size=0)
        rough, _ = run(
            server.url,
            server.process.pid,
            seconds=10,
            clients=3,
            max_tokens=24,
            burst_size=0,
            abuse=HOSTILE,
            trickling=80,
        )
        print(report(calm, alone, 10), report(rough, alone, 10), sep="\n")
        assert calm.problems == [] and rough.problems == []  # includes /health and the probes' times
        assert sum(n for kind, n in rough.outcomes.items() if kind.startswith("abuse:")) >= 8
        assert rough.outcomes["trickle: timed out"] >= 64 and rough.outcomes["trickle: refused at once"] >= 16
        assert len(calm.latencies) >= 5 and len(rough.latencies) >= 5
        assert statistics.median(rough.latencies) - statistics.median(calm.latencies) < 1.0
    finally:
        server.stop()
    assert "Traceback" not in "\n".join(server.lines)
