"""`specgen serve` under load (tests/serve/loadtest.py): concurrent streaming clients, hang-ups,
garbage and a burst past the queue, against a real server on loopback for about 20 seconds."""

from __future__ import annotations

import statistics

from loadtest import report, run
from test_serve import Server


def test_the_server_keeps_every_promise_under_load(tiny_models):
    server = Server("--target", str(tiny_models["target"]), "--draft", str(tiny_models["draft"]), "-k", "3",
                    "--ctx", "2048", "-t", "1", "--queue", "2", "--cache-ram", "16")
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
