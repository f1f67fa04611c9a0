"""`specgen serve` runs one generation at a time: hang-ups stop a generation, a full queue answers
503, and Ctrl-C finishes (or, twice, stops) the running reply."""

from __future__ import annotations

import re
import signal
import socket
import threading
import time

import httpx
from servers import Server, client, post

# -- one generation at a time: hang-ups, the queue, Ctrl-C ---------------------------------------


def _open_stream(server: Server, http: httpx.Client, max_tokens: int = 100000):
    """Start a long streamed completion and read its first chunk; returns the open response."""
    request = http.build_request(
        "POST", server.url + "/v1/completions", json={"prompt": "x = 1", "max_tokens": max_tokens, "stream": True}
    )
    response = http.send(request, stream=True)
    lines = response.iter_lines()
    assert next(line for line in lines if line.startswith("data: "))
    return response, lines


def test_a_client_hanging_up_stops_its_generation_and_the_next_is_served_at_once(endless):
    with httpx.Client(timeout=60) as http:
        response, _ = _open_stream(endless, http)
        response.close()
    line = endless.wait_for("client gone")
    assert int(re.search(r"(\d+) tokens at", line).group(1)) < 5000, "stopped long before the 32768-token context"
    start = time.perf_counter()
    reply = client(endless).completions.create(model="tiny-target_endless", prompt="a", max_tokens=8)
    assert reply.usage.completion_tokens == 8 and time.perf_counter() - start < 5
    assert reply.model_dump()["specgen"]["queued_s"] < 1


def test_a_full_queue_answers_503_with_retry_after(endless):
    results = {}
    with httpx.Client(timeout=60) as http:
        running, _ = _open_stream(endless, http)
        waiting = threading.Thread(
            target=lambda: results.update(
                waited=post(endless, "/v1/completions", key=None, json={"prompt": "a", "max_tokens": 4})
            )
        )
        waiting.start()
        deadline = time.time() + 20
        while httpx.get(endless.url + "/health").json()["waiting"] < 1 and time.time() < deadline:
            time.sleep(0.05)
        full = post(endless, "/v1/completions", key=None, json={"prompt": "a", "max_tokens": 4})
        assert full.status_code == 503 and int(full.headers["Retry-After"]) >= 1
        assert full.json()["error"]["code"] == "queue_full"
        running.close()
    waiting.join(30)
    assert results["waited"].status_code == 200 and results["waited"].json()["usage"]["completion_tokens"] == 4


def test_a_queue_of_0_serves_a_request_on_an_idle_server_and_refuses_one_that_would_wait(tiny_models):
    lone = Server(
        "--target",
        str(tiny_models["target_endless"]),
        "--no-draft",
        "-k",
        "0",
        "--ctx",
        "32768",
        "-t",
        "1",
        "--queue",
        "0",
    )
    try:
        idle = post(lone, "/v1/completions", key=None, json={"prompt": "a", "max_tokens": 4})
        assert idle.status_code == 200 and idle.json()["usage"]["completion_tokens"] == 4
        with httpx.Client(timeout=60) as http:
            running, _ = _open_stream(lone, http)
            busy = post(lone, "/v1/completions", key=None, json={"prompt": "a", "max_tokens": 4})
            assert busy.status_code == 503 and busy.json()["error"]["code"] == "queue_full"
            running.close()
        lone.wait_for("client gone")
        after = post(lone, "/v1/completions", key=None, json={"prompt": "b", "max_tokens": 2})
        assert after.status_code == 200
    finally:
        lone.stop()


def test_ctrl_c_finishes_the_running_reply_then_exits(tiny_models):
    # 4000 tokens take the tiny model most of a second: the signal lands while the reply runs
    draining = Server(
        "--target", str(tiny_models["target_endless"]), "--no-draft", "-k", "0", "--ctx", "8192", "-t", "1"
    )
    with httpx.Client(timeout=60) as http:
        _response, lines = _open_stream(draining, http, max_tokens=4000)
        draining.process.send_signal(signal.SIGINT)
        rest = [line for line in lines if line]
    assert rest[-1] == "data: [DONE]" and '"finish_reason":"length"' in rest[-2]
    assert '"completion_tokens":4000' in rest[-2]
    assert draining.process.wait(timeout=30) == 0
    draining.wait_for("stopped")
    assert "finishing 1 request" in "\n".join(draining.lines) and "Traceback" not in "\n".join(draining.lines)


def test_a_second_ctrl_c_stops_the_running_reply_at_once(tiny_models):
    stopping = Server(
        "--target", str(tiny_models["target_endless"]), "--no-draft", "-k", "0", "--ctx", "32768", "-t", "1"
    )
    with httpx.Client(timeout=60) as http:
        _, _lines = _open_stream(stopping, http)
        stopping.process.send_signal(signal.SIGINT)
        stopping.wait_for("finishing 1 request")
        stopping.process.send_signal(signal.SIGINT)
        assert stopping.process.wait(timeout=15) == 0
    line = stopping.wait_for("POST /v1/completions")
    assert "(interrupted)" in line and int(re.search(r"(\d+) tokens at", line).group(1)) < 30000
    stopping.wait_for("stopped")
    assert "Traceback" not in "\n".join(stopping.lines)


def _stalled_request(server: Server) -> socket.socket:
    """A connection whose request stops halfway through its body: the server waits on it for its
    receive deadline (20 s) before it answers 408 and closes it."""
    host, port = re.search(r"http://([^:/]+):(\d+)", server.url).groups()
    stalled = socket.create_connection((host, int(port)))
    stalled.sendall(
        f"POST /v1/completions HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        'Content-Length: 1000\r\n\r\n{"prompt": '.encode()
    )
    return stalled


def _exit_seconds_after(server: Server, notices: list[tuple[str, int]]) -> float:
    """Send a Ctrl-C for each (notice, count) and wait for the notice; the seconds from the last
    to the process's exit (which must be clean)."""
    for notice, count in notices:
        server.process.send_signal(signal.SIGINT)
        server.wait_for(notice, count)
    start = time.perf_counter()
    assert server.process.wait(timeout=30) == 0
    return time.perf_counter() - start


def test_a_connection_still_open_after_a_second_ctrl_c_is_cut_3_s_later(tiny_models):
    cutting = Server("--target", str(tiny_models["target"]), "--no-draft", "-k", "0", "-t", "1")
    with _stalled_request(cutting):
        time.sleep(0.5)  # the request is in, waiting for the rest of its body
        waited = _exit_seconds_after(cutting, [("exiting", 1), ("stopping now", 1)])
    # the cut comes at 3 s; without it, at the body's own deadline of 20 s
    assert 2.5 < waited < 10, f"exited {waited:.1f} s after the second Ctrl-C"
    assert "Traceback" not in "\n".join(cutting.lines)


def test_a_third_ctrl_c_cuts_open_connections_at_once(tiny_models):
    cutting = Server("--target", str(tiny_models["target"]), "--no-draft", "-k", "0", "-t", "1")
    with _stalled_request(cutting):
        time.sleep(0.5)
        waited = _exit_seconds_after(cutting, [("exiting", 1), ("stopping now", 1), ("stopping now", 2)])
    assert waited < 2.5, f"exited {waited:.1f} s after the third Ctrl-C"
