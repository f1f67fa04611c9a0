"""Any body a client sends to any endpoint gets a 4xx or a 2xx, never a 500: Hypothesis against a
real server on loopback (short replies, so valid bodies cost little).

Every field of every endpoint is drawn: the OpenAI fields, `prediction`, `suffix`, tool messages
and earlier tool calls (arguments of any shape, nested too deep among them), and llama-server's
/infill body (against a second server whose target has fill-in-the-middle tokens). CI sends a few
hundred requests; `SPECGEN_FUZZ_SCALE=25 pytest -s tests/serve/test_serve_fuzz.py` sends 25 times
as many (over 10,000) and prints the count.
"""

from __future__ import annotations

import json
import os
from collections import Counter

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from servers import Server

from specgen.serve.wire import infill as wire_infill

SCALE = int(os.environ.get("SPECGEN_FUZZ_SCALE", "1"))
SENT: Counter = Counter()  # status class -> requests, over the module


def fuzz(examples: int):
    return settings(
        max_examples=examples * SCALE,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


SCALARS = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=20)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
DEEP = st.sampled_from(["[" * 100_000, "{" * 5000, '{"a": ' * 150 + "1" + "}" * 150, "[" * 99 + "]" * 99])
NESTED = st.integers(1, 300).map(
    lambda levels: json.loads(
        '{"type": "object", "properties": {"a": ' * levels + '{"type": "integer"}' + "}}" * levels
    )
)
FIELDS = [
    "model",
    "prompt",
    "messages",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "top_k",
    "seed",
    "stop",
    "stream",
    "stream_options",
    "n",
    "response_format",
    "tools",
    "tool_choice",
    "logprobs",
    "top_logprobs",
    "parallel_tool_calls",
    "user",
    "frobnicate",
    "prediction",
    "suffix",
    "echo",
]
BODIES = st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=6)
TEXT_PARTS = st.lists(
    st.fixed_dictionaries({"type": st.sampled_from(["text", "image_url"]), "text": VALUES}), max_size=3
)
PREDICTIONS = st.one_of(
    VALUES,
    st.fixed_dictionaries(
        {"type": st.sampled_from(["content", "other"]), "content": st.one_of(VALUES, st.text(max_size=40), TEXT_PARTS)},
        optional={"extra": VALUES},
    ),
)
ARGUMENTS = st.one_of(VALUES, DEEP, VALUES.map(json.dumps), st.text(max_size=20))
CALLS = st.one_of(
    VALUES,
    st.lists(
        st.fixed_dictionaries(
            {
                "id": st.one_of(st.text(max_size=6), VALUES),
                "type": st.sampled_from(["function", "tool"]),
                "function": st.one_of(
                    VALUES, st.fixed_dictionaries({"name": st.sampled_from(["f", "get-x", ""]), "arguments": ARGUMENTS})
                ),
            }
        ),
        max_size=2,
    ),
)
MESSAGES = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "system", "assistant", "tool", 3]), "content": st.one_of(VALUES, TEXT_PARTS)},
        optional={"tool_calls": CALLS, "tool_call_id": VALUES, "name": VALUES},
    ),
    max_size=4,
)
FORMATS = st.one_of(
    VALUES,
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["json_object", "json_schema", "text"]),
            "json_schema": st.fixed_dictionaries({"schema": VALUES}),
        }
    ),
)
INFILL_FIELDS = [*sorted(wire_infill.INFILL_FIELDS), "frobnicate"]  # every field /infill reads, and one it does not
CHUNKS = st.lists(
    st.one_of(
        VALUES,
        st.fixed_dictionaries(
            {"text": st.one_of(st.text(max_size=20), VALUES)}, optional={"filename": VALUES, "time": VALUES}
        ),
    ),
    max_size=3,
)
INFILLS = st.fixed_dictionaries(
    {"input_prefix": st.one_of(st.text(max_size=30), VALUES), "input_suffix": st.one_of(st.text(max_size=30), VALUES)},
    optional={
        "input_extra": CHUNKS,
        "n_indent": VALUES,
        "t_max_predict_ms": VALUES,
        "n_predict": st.integers(-2, 3),
        "response_fields": VALUES,
        "stream": st.booleans(),
        "stop": VALUES,
    },
)


def _server(model: str, tiny_models):
    running = Server(
        "--target",
        str(tiny_models[model]),
        "--draft",
        str(tiny_models["draft"]),
        "-k",
        "2",
        "--ctx",
        "256",
        "-t",
        "1",
        "-n",
        "2",
        "--max-tokens-limit",
        "3",
    )
    yield running
    running.stop()
    assert "Traceback" not in "\n".join(running.lines)


@pytest.fixture(scope="module")
def server(tiny_models):
    """The target with Qwen2.5's template: tools, structured output, chat."""
    yield from _server("target_tools", tiny_models)


@pytest.fixture(scope="module")
def fim_server(tiny_models):
    """The target with fill-in-the-middle tokens: /infill and `suffix`."""
    yield from _server("target_fim", tiny_models)


@pytest.fixture(scope="module")
def http():
    with httpx.Client(timeout=60) as client:
        yield client
    print(f"\nfuzz requests sent: {sum(SENT.values())} ({dict(SENT)})")


def status(http, server, path: str, content: bytes) -> int:
    reply = http.post(f"{server.url}{path}", content=content, headers={"Content-Type": "application/json"})
    SENT[f"{reply.status_code // 100}xx"] += 1
    if reply.status_code >= 400:
        assert "error" in reply.json()
    return reply.status_code


@fuzz(150)
@given(body=BODIES, path=st.sampled_from(["/v1/completions", "/v1/chat/completions"]))
def test_json_bodies_of_any_shape_never_get_a_500(server, http, body, path):
    assert status(http, server, path, json.dumps(body).encode()) < 500


@fuzz(80)
@given(messages=MESSAGES, extra=BODIES)
def test_chat_messages_of_any_shape_never_get_a_500(server, http, messages, extra):
    """Tool messages and earlier tool calls among them."""
    body = {**extra, "messages": messages}
    assert status(http, server, "/v1/chat/completions", json.dumps(body).encode()) < 500


FUNCTIONS = st.fixed_dictionaries(
    {"name": st.sampled_from(["f", "get-x", "bad name"]), "parameters": st.one_of(VALUES, NESTED)}
)


@fuzz(60)
@given(
    arguments=ARGUMENTS,
    name=st.sampled_from(["f", "get-x", "other"]),
    result=st.one_of(st.text(max_size=20), VALUES),
    offered=st.booleans(),
)
def test_tool_turns_with_arguments_of_any_shape_never_get_a_500(server, http, arguments, name, result, offered):
    """A well-formed call-and-result exchange whose call's arguments and result are drawn."""
    messages = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": name, "arguments": arguments}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": result},
    ]
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}] if offered else None
    body = {"messages": messages, "tools": tools, "max_tokens": 2}
    assert status(http, server, "/v1/chat/completions", json.dumps(body).encode()) < 500


TOOLS = st.lists(
    st.one_of(VALUES, st.fixed_dictionaries({"type": st.just("function"), "function": FUNCTIONS})), max_size=2
)


@fuzz(80)
@given(
    fmt=FORMATS,
    tools=TOOLS,
    choice=st.one_of(
        VALUES, st.sampled_from(["auto", "none", "required"]), st.just({"type": "function", "function": {"name": "f"}})
    ),
)
def test_formats_and_tools_of_any_shape_never_get_a_500(server, http, fmt, tools, choice):
    body = {
        "messages": [{"role": "user", "content": "hi"}],
        "response_format": fmt,
        "tools": tools,
        "tool_choice": choice,
    }
    assert status(http, server, "/v1/chat/completions", json.dumps(body).encode()) < 500


@fuzz(60)
@given(prediction=PREDICTIONS, path=st.sampled_from(["/v1/completions", "/v1/chat/completions"]), stream=st.booleans())
def test_predictions_of_any_shape_never_get_a_500(server, http, prediction, path, stream):
    body = {
        "prediction": prediction,
        "max_tokens": 2,
        "stream": stream,
        **({"prompt": "x = "} if path == "/v1/completions" else {"messages": [{"role": "user", "content": "x"}]}),
    }
    assert status(http, server, path, json.dumps(body).encode()) < 500


@fuzz(60)
@given(body=INFILLS, extra=st.dictionaries(st.sampled_from(INFILL_FIELDS), VALUES, max_size=3))
def test_infill_bodies_of_any_shape_never_get_a_500(fim_server, http, body, extra):
    assert status(http, fim_server, "/infill", json.dumps({**body, **extra}).encode()) < 500


@fuzz(60)
@given(prompt=st.one_of(st.text(max_size=30), VALUES), suffix=st.one_of(st.text(max_size=30), VALUES), extra=BODIES)
def test_completions_with_a_suffix_of_any_shape_never_get_a_500(fim_server, http, prompt, suffix, extra):
    body = {**extra, "prompt": prompt, "suffix": suffix}
    assert status(http, fim_server, "/v1/completions", json.dumps(body).encode()) < 500


@fuzz(60)
@given(
    raw=st.one_of(st.binary(max_size=64), DEEP.map(str.encode)),
    path=st.sampled_from(["/v1/completions", "/v1/chat/completions", "/v1/models", "/infill"]),
)
def test_raw_bytes_never_get_a_500(server, http, raw, path):
    assert status(http, server, path, raw) < 500
