"""Any body a client sends to any endpoint gets a 4xx or a 2xx, never a 500: Hypothesis against a
real server on loopback (short replies, so valid bodies cost little)."""

from __future__ import annotations

import json

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_serve import Server

SCALARS = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=20)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                       max_size=4), max_leaves=12)
FIELDS = ["model", "prompt", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k",
          "seed", "stop", "stream", "stream_options", "n", "response_format", "tools", "tool_choice", "logprobs",
          "top_logprobs", "parallel_tool_calls", "user", "frobnicate"]
BODIES = st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=6)
MESSAGES = st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "system", "assistant", "tool", 3]),
                                           "content": VALUES},
                                          optional={"tool_calls": VALUES, "tool_call_id": VALUES}), max_size=3)
FORMATS = st.one_of(VALUES, st.fixed_dictionaries({"type": st.sampled_from(["json_object", "json_schema", "text"]),
                                                   "json_schema": st.fixed_dictionaries({"schema": VALUES})}))


@pytest.fixture(scope="module")
def server(tiny_models):
    running = Server("--target", str(tiny_models["target_tools"]), "--draft", str(tiny_models["draft"]), "-k", "2",
                     "--ctx", "256", "-t", "1", "-n", "2", "--max-tokens-limit", "3")
    yield running
    running.stop()


@pytest.fixture(scope="module")
def http():
    with httpx.Client(timeout=60) as client:
        yield client


def status(http, server, path: str, content: bytes) -> int:
    reply = http.post(f"{server.url}{path}", content=content, headers={"Content-Type": "application/json"})
    if reply.status_code >= 400:
        assert "error" in reply.json()
    return reply.status_code


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=BODIES, path=st.sampled_from(["/v1/completions", "/v1/chat/completions"]))
def test_json_bodies_of_any_shape_never_get_a_500(server, http, body, path):
    assert status(http, server, path, json.dumps(body).encode()) < 500


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(messages=MESSAGES, extra=BODIES)
def test_chat_messages_of_any_shape_never_get_a_500(server, http, messages, extra):
    body = {**extra, "messages": messages}
    assert status(http, server, "/v1/chat/completions", json.dumps(body).encode()) < 500


TOOLS = st.lists(st.one_of(VALUES, st.fixed_dictionaries({"type": st.just("function"), "function": st.fixed_dictionaries(
    {"name": st.sampled_from(["f", "get-x", "bad name"]), "parameters": VALUES})})), max_size=2)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fmt=FORMATS, tools=TOOLS, choice=st.one_of(VALUES, st.sampled_from(["auto", "none", "required"]),
                                                  st.just({"type": "function", "function": {"name": "f"}})))
def test_formats_and_tools_of_any_shape_never_get_a_500(server, http, fmt, tools, choice):
    body = {"messages": [{"role": "user", "content": "hi"}], "response_format": fmt, "tools": tools,
            "tool_choice": choice}
    assert status(http, server, "/v1/chat/completions", json.dumps(body).encode()) < 500


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=64), path=st.sampled_from(["/v1/completions", "/v1/chat/completions", "/v1/models"]))
def test_raw_bytes_never_get_a_500(server, http, raw, path):
    assert status(http, server, path, raw) < 500
