"""A load test for `specgen serve`: concurrent streaming clients, some hanging up mid-stream,
some sending garbage, some arriving while the queue is full; bounded in time, loopback only.

It checks what a server under load must keep: it stays up, every accepted request completes or
ends with a clean error, a full queue answers 503 with Retry-After, a greedy reply under load is
the same reply as alone, and resident memory stays flat. The CI test runs it for seconds on tiny
models; `python tests/serve/loadtest.py URL --pid PID --seconds 180` runs it against a real server and
prints the figures recorded in docs/serve.md.

With `abuse` (`--abuse NAME ...`), hostile clients run beside the normal ones: issue 46's probes
(tests/serve/abuse.py) one after another, each to be refused within a second, and connections
that trickle their headers from another loopback address; /health is asked every quarter second
throughout, and each answer must come within a second.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

import httpx
from abuse import ANSWERED, PROBES, health_while, probe, trickle

GARBAGE = [
    b"{not json",
    b'{"prompt": 5, "max_tokens": "many"}',
    b'{"messages": [{"role": 1}]}',
    b"[]",
    b'{"prompt": "x", "max_tokens": -3}',
    b'{"prompt": "x", "stop": [' + b'"ab",' * 40 + b'"c"]}',
]
CHECK = {"prompt": "def fibonacci(n):", "max_tokens": 24, "temperature": 0}


@dataclass
class Tally:
    """What the clients saw, shared between their threads."""

    outcomes: Counter = field(default_factory=Counter)  # kind of request -> how it ended
    latencies: list[float] = field(default_factory=list)  # seconds, for streams read to the end
    health: list[tuple[int | None, float]] = field(default_factory=list)  # /health's status and seconds
    rss_mib: list[tuple[float, float]] = field(default_factory=list)  # (seconds since start, VmRSS)
    problems: list[str] = field(default_factory=list)  # anything a healthy server must not do
    greedy: list[str] = field(default_factory=list)  # the check request's text, each time under load
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, outcome: str, times: int = 1, latency: float | None = None) -> None:
        with self.lock:
            self.outcomes[outcome] += times
            if latency is not None:
                self.latencies.append(latency)

    def problem(self, text: str) -> None:
        with self.lock:
            self.problems.append(text)


def stream(
    http: httpx.Client, url: str, body: dict, tally: Tally, kind: str, hang_up_after: int | None = None
) -> str | None:
    """One streamed completion; returns its text, or None where it was refused or broke off.
    Hangs up after `hang_up_after` chunks if set; waits out a 503's Retry-After (at most 2 s)."""
    start, text, chunks = time.perf_counter(), [], 0
    with http.stream("POST", url + "/v1/completions", json={**body, "stream": True}) as response:
        if response.status_code == 503:
            if "retry-after" not in response.headers:
                tally.problem("503 without Retry-After")
            tally.count(f"{kind}: 503 queue full")
            time.sleep(min(float(response.headers.get("retry-after", 1)), 2.0))  # as a client library would
            return None
        if response.status_code != 200:
            tally.problem(f"{kind}: status {response.status_code}: {response.read()[:200]!r}")
            return None
        for line in response.iter_lines():
            if line == "data: [DONE]":
                tally.count(f"{kind}: completed", latency=time.perf_counter() - start)
                return "".join(text)
            if not line.startswith("data: "):
                continue
            event = json.loads(line[6:])
            if "error" in event:
                tally.count(f"{kind}: ended with an error event")
                return None
            text.extend(choice["text"] for choice in event["choices"])
            chunks += 1
            if hang_up_after is not None and chunks >= hang_up_after:
                tally.count(f"{kind}: hung up mid-stream")
                return None
    tally.problem(f"{kind}: stream ended without [DONE]")
    return None


def client(url: str, deadline: float, tally: Tally, seed: int, max_tokens: int) -> None:
    """One client's loop until the deadline: mostly streams, some hang-ups, some garbage, the check."""
    rng = random.Random(seed)
    with httpx.Client(timeout=120) as http:
        while time.perf_counter() < deadline:
            roll = rng.random()
            try:
                if roll < 0.15:
                    status = http.post(
                        url + "/v1/completions",
                        content=rng.choice(GARBAGE),
                        headers={"Content-Type": "application/json"},
                    ).status_code
                    tally.count(f"garbage: {status // 100}xx")
                    if status >= 500:
                        tally.problem(f"garbage got {status}")
                elif roll < 0.35:
                    body = {"prompt": f"# task {rng.randrange(10**6)}\n", "max_tokens": max_tokens}
                    stream(http, url, body, tally, "hang-up", hang_up_after=rng.randint(1, 3))
                elif roll < 0.45:
                    text = stream(http, url, CHECK, tally, "greedy check")
                    if text is not None:
                        tally.greedy.append(text)
                else:
                    body = {"prompt": f"# note {rng.randrange(10**6)}\ndef ", "max_tokens": rng.randint(4, max_tokens)}
                    stream(http, url, body, tally, "stream")
            except httpx.HTTPError as error:
                tally.problem(f"transport error: {type(error).__name__}: {error}")


def sample_rss(pid: int, start: float, deadline: float, tally: Tally) -> None:
    while time.perf_counter() < deadline:
        try:
            with open(f"/proc/{pid}/status", encoding="ascii") as status:
                kib = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
        except (OSError, StopIteration):
            tally.problem("the server process is gone")
            return
        tally.rss_mib.append((time.perf_counter() - start, kib / 1024))
        time.sleep(0.5)


def burst(url: str, at: float, size: int, tally: Tally) -> None:
    """At time `at`, `size` streams at once: more than the queue holds, so some must get 503."""
    time.sleep(max(0.0, at - time.perf_counter()))
    body = {"prompt": "# burst\n", "max_tokens": 64}

    def one() -> None:
        with httpx.Client(timeout=120) as http:
            try:
                stream(http, url, body, tally, "burst")
            except httpx.HTTPError as error:
                tally.problem(f"transport error: {type(error).__name__}: {error}")

    threads = [threading.Thread(target=one) for _ in range(size)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def abuser(url: str, deadline: float, tally: Tally, names: list[str]) -> None:
    """Hostile requests one after another until the deadline: a probe must be refused (4xx or
    503), hostile text that is a fair request answered 200, each within a second."""
    turn = 0
    while time.perf_counter() < deadline:
        name = names[turn % len(names)]
        turn += 1
        answer = probe(url, name, timeout=30)
        fair = name in ANSWERED
        tally.count(f"abuse: {name}: {answer.status}")
        if answer.status is None or (
            answer.status != 200 if fair else not (400 <= answer.status < 500 or answer.status == 503)
        ):
            tally.problem(f"abuse: {name}: status {answer.status} {answer.note}")
        elif answer.seconds > 1.0:
            tally.problem(f"abuse: {name}: answered after {answer.seconds:.2f} s")


def trickler(url: str, deadline: float, tally: Tally, count: int) -> None:
    """Connections trickling their headers from 127.0.0.2, in waves until the deadline."""
    while (left := deadline - time.perf_counter()) > 1:
        result = trickle(url, count, left)
        tally.count("trickle: refused at once", result.refused_at_once)
        tally.count("trickle: timed out", result.timed_out)
        if result.open_at_end:
            tally.count("trickle: still open at the end", result.open_at_end)


def run(
    url: str,
    pid: int,
    seconds: float,
    clients: int = 6,
    max_tokens: int = 48,
    burst_size: int = 16,
    abuse: tuple[str, ...] = (),
    trickling: int = 0,
) -> tuple[Tally, str]:
    """Load the server for `seconds`, with a burst of `burst_size` streams halfway (none if 0), and
    the named `abuse` probes and `trickling` connections beside (tests/serve/abuse.py); returns
    what the clients saw and the check reply alone."""
    tally = Tally()
    with httpx.Client(timeout=120) as http:
        alone = stream(http, url, CHECK, tally, "greedy alone")
    start = time.perf_counter()
    deadline = start + seconds
    threads = [
        threading.Thread(target=client, args=(url, deadline, tally, seed, max_tokens)) for seed in range(clients)
    ]
    threads.append(threading.Thread(target=sample_rss, args=(pid, start, deadline, tally)))
    if burst_size:
        threads.append(threading.Thread(target=burst, args=(url, start + seconds / 2, burst_size, tally)))
    if abuse:
        threads.append(threading.Thread(target=abuser, args=(url, deadline, tally, list(abuse))))
    if trickling:
        threads.append(threading.Thread(target=trickler, args=(url, deadline, tally, trickling)))
    done = threading.Event()
    watcher = threading.Thread(target=lambda: tally.health.extend(health_while(url, done)))
    watcher.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done.set()
    watcher.join()
    slow = [(status, s) for status, s in tally.health if status != 200 or s > 1.0]
    if slow:
        tally.problem(f"/health: {len(slow)} of {len(tally.health)} answers not 200 within 1 s: {slow[:3]}")
    return tally, alone


def report(tally: Tally, alone: str, seconds: float) -> str:
    """The figures, as docs/serve.md shows them."""
    lines = [f"{sum(tally.outcomes.values())} requests in {seconds:.0f} s:"]
    lines += [f"  {count:5d}  {outcome}" for outcome, count in sorted(tally.outcomes.items())]
    if tally.latencies:
        ordered = sorted(tally.latencies)
        p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
        lines.append(f"latency of streams read to the end: p50 {statistics.median(ordered):.2f} s, p99 {p99:.2f} s")
    if tally.health:
        worst = max(seconds for _, seconds in tally.health)
        ok = sum(status == 200 for status, _ in tally.health)
        lines.append(f"/health: {ok}/{len(tally.health)} answered 200, slowest {worst:.2f} s")
    if tally.rss_mib:
        rss = [mib for _, mib in tally.rss_mib]
        quarter = max(1, len(rss) // 4)
        lines.append(
            f"server RSS: first quarter median {statistics.median(rss[:quarter]):.0f} MiB, last quarter "
            f"median {statistics.median(rss[-quarter:]):.0f} MiB, max {max(rss):.0f} MiB"
        )
    same = sum(text == alone for text in tally.greedy)
    lines.append(f"greedy check under load: {same}/{len(tally.greedy)} equal to the reply alone")
    for text in sorted(set(tally.greedy) - {alone}):
        at = next(i for i, (a, b) in enumerate(zip(text + "\0", alone + "\0", strict=False)) if a != b)
        lines.append(f"  differs at character {at}: alone {alone[at : at + 20]!r}, under load {text[at : at + 20]!r}")
    lines.append(f"problems: {len(tally.problems)}" + "".join(f"\n  {p}" for p in tally.problems[:10]))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="the server, e.g. http://127.0.0.1:8080")
    parser.add_argument("--pid", type=int, required=True, help="the server's process id (for its RSS)")
    parser.add_argument("--seconds", type=float, default=180)
    parser.add_argument("--clients", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument(
        "--abuse",
        nargs="*",
        default=[],
        choices=[*PROBES, *ANSWERED],
        metavar="PROBE",
        help="hostile requests to send beside the clients (tests/serve/abuse.py)",
    )
    parser.add_argument("--trickle", type=int, default=0, help="connections trickling their headers, per wave")
    args = parser.parse_args(argv)
    tally, alone = run(
        args.url, args.pid, args.seconds, args.clients, args.max_tokens, abuse=tuple(args.abuse), trickling=args.trickle
    )
    print(report(tally, alone, args.seconds))
    return 1 if tally.problems else 0


if __name__ == "__main__":
    sys.exit(main())
