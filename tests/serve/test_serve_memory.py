"""`specgen serve` keeps a memory of the replies it served: the same request again copies from
the earlier reply (with `auto`, the default). A real server on loopback, a real HTTP client."""

from __future__ import annotations

import httpx
import pytest
from servers import Server, pinned_costs

PROMPT = "zq the print of self wx"


@pytest.fixture(scope="module")
def auto_server(tiny_models, tmp_path_factory):
    args = (
        "--target",
        str(tiny_models["target"]),
        "--draft",
        str(tiny_models["draft"]),
        "--ctx",
        "2048",
        "-t",
        "1",
        "-n",
        "40",
    )
    running = Server(*args, env=pinned_costs(tmp_path_factory.mktemp("costs"), *args))
    yield running
    running.stop()


def complete(server: Server) -> dict:
    reply = httpx.post(f"{server.url}/v1/completions", json={"prompt": PROMPT, "max_tokens": 40}, timeout=60)
    assert reply.status_code == 200, reply.text
    return reply.json()


def test_the_same_request_again_copies_from_the_served_reply(auto_server):
    first, second = complete(auto_server), complete(auto_server)
    assert second["choices"][0]["text"] == first["choices"][0]["text"]
    assert second["specgen"]["accepted"] > first["specgen"]["accepted"]
    assert second["specgen"]["rounds"] < first["specgen"]["rounds"]
