"""What a loopback `specgen serve` refuses so that no web page, foreign Host name or greedy
request can use it: a real server on loopback and raw HTTP requests."""

from __future__ import annotations

import httpx
import pytest
from servers import Server, tiny_pair


@pytest.fixture(scope="module")
def guarded(tiny_models):
    """A target that never ends a reply, so only a limit can end one."""
    running = Server(
        *tiny_pair(tiny_models["target_endless"], tiny_models["draft"]),
        "--allow-host",
        "Editor.Local",
        "--max-tokens-limit",
        "5",
    )
    yield running
    running.stop()


def post(server: Server, headers: dict, body: bytes = b'{"prompt": "def add", "max_tokens": 3}') -> httpx.Response:
    return httpx.post(f"{server.url}/v1/completions", content=body, headers=headers, timeout=60)


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8080", "127.0.0.1.evil.example", "[::2]:80"])
def test_a_foreign_host_name_is_refused_as_dns_rebinding_would_send_it(guarded, host):
    reply = post(guarded, {"Host": host, "Content-Type": "application/json"})
    assert reply.status_code == 403 and reply.json()["error"]["code"] == "host_not_allowed"


@pytest.mark.parametrize("host", ["localhost:1234", "127.0.0.1", "127.3.4.5:80", "[::1]:8080", "editor.local"])
def test_loopback_names_and_allowed_names_are_served(guarded, host):
    reply = post(guarded, {"Host": host, "Content-Type": "application/json"})
    assert reply.status_code == 200, reply.text


@pytest.mark.parametrize("kind", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", ""])
def test_a_body_a_browser_may_send_without_asking_is_refused(guarded, kind):
    headers = {"Content-Type": kind} if kind else {}
    reply = post(guarded, headers)
    assert reply.status_code == 415 and "application/json" in reply.json()["error"]["message"]


def test_json_with_a_charset_is_json(guarded):
    assert post(guarded, {"Content-Type": "application/json; charset=utf-8"}).status_code == 200


def test_max_tokens_beyond_the_server_limit_is_lowered_to_it(guarded):
    reply = post(guarded, {"Content-Type": "application/json"}, b'{"prompt": "the print of", "max_tokens": 2000000000}')
    assert reply.status_code == 200
    body = reply.json()
    assert body["usage"]["completion_tokens"] == 5 and body["choices"][0]["finish_reason"] == "length"
