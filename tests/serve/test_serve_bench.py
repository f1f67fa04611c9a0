"""`specgen bench --endpoint` against a live `specgen serve` on loopback: the same prompts as one
more row, interleaved with the local configurations, timed from the client's side and checked
against the server's own access log, with what the server's drafters did."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys

import pytest
from servers import Server, tiny_pair

SPECGEN = [sys.executable, "-m", "specgen"]


@pytest.fixture(scope="module")
def server(tiny_models):
    running = Server(
        *tiny_pair(tiny_models["target"], tiny_models["draft"]),
    )
    yield running
    running.stop()


@pytest.mark.parametrize("raw, route", [(False, "/v1/chat/completions"), (True, "/v1/completions")])
def test_bench_runs_the_prompts_on_a_live_server_as_one_more_row(server, tiny_models, tmp_path, raw, route):
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("def add(a, b):\n---\nthe print of self\n")
    results = tmp_path / "results.json"
    already = len([line for line in server.lines if f"POST {route}" in line])
    done = subprocess.run(
        [
            *SPECGEN,
            "bench",
            str(prompts),
            "--target",
            str(tiny_models["target"]),
            "--draft",
            str(tiny_models["draft"]),
            "-k",
            "3",
            "--no-lookup",
            "-n",
            "24",
            "-r",
            "2",
            "--warmup",
            "0",
            "--ctx",
            "2048",
            "-t",
            "1",
            *(["--raw"] if raw else []),
            "--endpoint",
            server.url,
            "--json",
            str(results),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(results.read_text())
    name = f"endpoint:{server.url.removeprefix('http://')}"
    assert {
        "name": name,
        "drafter": "endpoint",
        "k": 0,
        "adaptive": False,
        "url": server.url + "/v1",
        "model": "tiny-target",
    } in report["configs"]
    order = [run["config"] for run in report["runs"]]
    # interleaved per prompt, every other repeat in reverse: A B C C B A, for each of the two prompts
    assert order == ["target", "draft-k3", name, name, "draft-k3", "target"] * 2

    mine = [run for run in report["runs"] if run["config"] == name]
    alone = [run for run in report["runs"] if run["config"] == "target"]
    assert [run["tokens"] for run in mine] == [run["tokens"] for run in alone]  # the same model, greedy
    assert report["endpoints"] == [
        {"config": name, "url": server.url + "/v1", "model": "tiny-target", "same_text": 4, "runs": 4}
    ]
    logged = [line for line in server.lines if f"POST {route} 200" in line][already:]
    assert len(logged) == 4
    for run, line in zip(mine, logged, strict=True):  # the client's clock against the server's own
        tokens, first = re.search(r"(\d+) tokens at .* first token ([\d.]+)s", line).groups()
        whole = re.search(r" 200 ([\d.]+)s", line).group(1)
        assert run["tokens"] == int(tokens)
        assert run["prefill_s"] >= float(first)  # time to the first token, as the client saw it
        between = run["decode_s"] * (run["tokens"] - 1) / run["tokens"]  # first to last streamed token
        assert 0 < between <= float(whole) + 0.05
        assert run["tokens_per_second"] == pytest.approx(run["tokens"] / run["decode_s"])
        accepted, drafted = map(int, re.search(r"accepted (\d+)/(\d+)", line).groups())  # what its drafters did
        assert (run["accepted"], run["drafted"]) == (accepted, drafted) and drafted > 0, line
        assert sum(count["drafted"] for count in run["by_source"].values()) == drafted
        assert run["by_source"]["model"]["kept"] == accepted  # a draft model drafts alone at a fixed K
    assert name in done.stdout and "its text is the target alone's in 4/4 runs" in done.stdout


def test_an_endpoint_that_does_not_answer_is_one_line(tiny_models, tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("def add(a, b):\n")
    done = subprocess.run(
        [
            *SPECGEN,
            "bench",
            str(prompts),
            "--target",
            str(tiny_models["target"]),
            "--no-draft",
            "--endpoint",
            f"http://127.0.0.1:{port}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"specgen: error: cannot reach http://127.0.0.1:{port}/v1/models")


def test_a_chat_prompt_reaches_the_endpoint_as_its_whole_conversation(server, tiny_models, tmp_path):
    """A "messages" prompt is sent as the conversation it is, so the server sees the prompt the
    local runs decode (the same prompt tokens), not only its last user turn."""
    conversation = [
        {"role": "user", "content": "def add(a, b):"},
        {"role": "assistant", "content": "return a + b"},
        {"role": "user", "content": "now subtract"},
    ]
    prompts = tmp_path / "chat.jsonl"
    prompts.write_text(json.dumps({"messages": conversation}) + "\n")
    results = tmp_path / "results.json"
    done = subprocess.run(
        [
            *SPECGEN,
            "bench",
            str(prompts),
            "--target",
            str(tiny_models["target"]),
            "--no-draft",
            "-k",
            "2",
            "-n",
            "8",
            "-r",
            "1",
            "--warmup",
            "0",
            "--ctx",
            "2048",
            "-t",
            "1",
            "--endpoint",
            server.url,
            "--json",
            str(results),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    runs = {run["config"]: run for run in json.loads(results.read_text())["runs"]}
    endpoint = runs[f"endpoint:{server.url.removeprefix('http://')}"]
    assert endpoint["prompt_tokens"] == runs["target"]["prompt_tokens"] > 10
