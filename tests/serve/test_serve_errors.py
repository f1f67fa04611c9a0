"""`specgen serve`'s errors over raw HTTP (httpx): keys, bad requests, NULs, oversized bodies, unknown
routes, and binding beyond loopback; after each, the server still answers."""

from __future__ import annotations

import os
import subprocess

import httpx
import openai
import pytest
from servers import KEY, OTHER_KEY, SPECGEN, client, post

# -- errors over raw HTTP ------------------------------------------------------------------------


def test_a_wrong_or_missing_key_is_401(server):
    for key in (None, "wrong", f"{KEY},{OTHER_KEY}", KEY[:-1]):
        reply = post(server, "/v1/completions", key=key, json={"prompt": "a", "max_tokens": 2})
        assert reply.status_code == 401 and reply.json()["error"]["code"] == "invalid_api_key"
    assert post(server, "/v1/completions", key=OTHER_KEY, json={"prompt": "a", "max_tokens": 2}).status_code == 200
    assert httpx.get(server.url + "/v1/models").status_code == 401
    with pytest.raises(openai.AuthenticationError):
        client(server, key="nope").models.list()


@pytest.mark.parametrize(
    "body, status, fragment",
    [
        (b"{not json", 400, "not valid JSON"),
        (b"[1, 2]", 400, "JSON object"),
        (b'{"model": "gpt-4", "prompt": "a"}', 404, "gpt-4"),
        (b'{"prompt": "a", "temperature": "hot"}', 400, "temperature must be a number"),
        (b'{"prompt": "a", "max_tokens": 0}', 400, "max_tokens must be at least 1"),
        (b'{"prompt": "a", "max_tokens": "5"}', 400, "max_tokens must be a whole number"),
        (b'{"prompt": "a", "stream": "yes"}', 400, "stream must be true or false"),
        (b'{"prompt": "a", "stop": [1]}', 400, "stop must be"),
        (b'{"prompt": "a", "n": 2}', 400, "n must be 1"),
        (b'{"prompt": {"x": 1}}', 400, "prompt must be"),
        (b'{"prompt": [999999]}', 400, "not in the vocabulary"),
        (b'{"prompt": []}', 400, "prompt must be"),
        (b'{"prompt": ["a", "b"]}', 400, "send one per request"),
        (b"[" * 100000, 400, "not valid JSON"),
        (b'{"prompt": "word ' + b"word " * 3000 + b'"}', 400, "context"),
    ],
)
def test_bad_completion_requests_get_openai_errors(server, body, status, fragment):
    reply = post(server, "/v1/completions", content=body)
    assert reply.status_code == status, reply.text
    error = reply.json()["error"]
    assert fragment in error["message"] and error["type"]


@pytest.mark.parametrize(
    "messages, fragment",
    [
        (None, "messages must be"),
        ([], "messages must be"),
        (["hi"], "messages[0] must be an object"),
        ([{"content": "hi"}], "messages[0].role"),
        ([{"role": "user", "content": 5}], "messages[0].content"),
        ([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}], "text only"),
    ],
)
def test_bad_chat_messages_get_400(server, messages, fragment):
    reply = post(server, "/v1/chat/completions", json={"model": "tiny-target", "messages": messages})
    assert reply.status_code == 400 and fragment in reply.json()["error"]["message"], reply.text


@pytest.mark.parametrize(
    "path, body, param",
    [
        (
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": "def add\u0000(a, b)"}]},
            "messages[0].content",
        ),
        (
            "/v1/chat/completions",
            {
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "text", "text": "x\u0000"}]},
                ]
            },
            "messages[1].content[1].text",
        ),
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "stop": ["a", "\u0000b"]}, "stop"),
        ("/v1/completions", {"prompt": "the print\u0000 of self"}, "prompt"),
        ("/v1/completions", {"prompt": ["\u0000"]}, "prompt"),
        ("/v1/completions", {"prompt": "a", "stop": "x\u0000"}, "stop"),
    ],
)
def test_a_nul_in_any_text_the_tokenizer_reads_is_a_400_naming_the_field(server, path, body, param):
    """ctypes would end the text at the NUL and the rest would go unread without a word."""
    reply = post(server, path, json={**body, "max_tokens": 2})
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["param"] == param and "NUL" in error["message"] and error["type"] == "invalid_request_error"


def test_oversized_body_unknown_route_and_method_then_the_server_still_answers(server):
    big = post(server, "/v1/completions", content=b'{"prompt": "' + b"a" * (3 * 1024 * 1024) + b'"}')
    assert big.status_code == 413 and "limit" in big.json()["error"]["message"]
    assert post(server, "/v1/nothing", json={}).status_code == 404
    wrong = httpx.get(server.url + "/v1/completions", headers={"Authorization": f"Bearer {KEY}"})
    assert wrong.status_code == 405 and wrong.json()["error"]["message"]
    ok = post(
        server,
        "/v1/chat/completions",
        json={
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            "max_tokens": 3,
            "logit_bias": {},
            "user": "u-1",
        },
    )
    assert ok.status_code == 200 and ok.json()["usage"]["completion_tokens"] == 3, "hints and no-op values pass"
    unknown = post(
        server, "/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}], "frobnicate": True}
    )
    assert unknown.status_code == 400 and unknown.json()["error"]["param"] == "frobnicate"
    assert "Traceback" not in "\n".join(server.lines)


def test_binding_beyond_loopback_needs_a_key(tiny_models):
    result = subprocess.run(
        [*SPECGEN, "serve", "--host", "0.0.0.0", "--target", str(tiny_models["target"]), "--no-draft"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "SPECGEN_API_KEY": ""},
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "--api-key" in result.stderr and "Traceback" not in result.stderr
