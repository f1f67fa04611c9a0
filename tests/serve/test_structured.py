"""Structured output through the official `openai` client: `response_format` json_object and
json_schema replies are what the constrained target alone writes, and JSON that fits; a schema
that cannot be a grammar is a 400 naming it; auto is given the schema's example document (for
the structure source) for a json_schema reply only.

A real server on the tiny models whose target carries Qwen2.5's chat template (the tool tests
use it too)."""

from __future__ import annotations

import json

import openai
import pytest
from servers import Server, tiny_pair

from specgen.decoding.loop import GenerationConfig, generate
from specgen.llama.grammar import Grammar, json_grammar, schema_example, schema_grammar
from specgen.serve.scheduler import reply_example
from specgen.serve.wire import parse_request

MODEL = "tiny-target_tools"
RECORD = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "ok": {"type": "boolean"}, "tag": {"enum": ["red", "blue"]}},
    "required": ["id", "ok", "tag"],
}


def tools_server(tiny_models, max_tokens: int) -> Server:
    """A server on the tiny target with Qwen2.5's template (tools, structured output), K = 3."""
    return Server(
        *tiny_pair(tiny_models["target_tools"], tiny_models["draft"]),
        "-n",
        str(max_tokens),
    )


@pytest.fixture(scope="module")
def server(tiny_models):
    running = tools_server(tiny_models, 64)
    yield running
    running.stop()


def client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=60)


def alone(target, messages: list[tuple[str, str]], gbnf: str, max_tokens: int = 64) -> str:
    """What the target alone writes under the grammar."""
    with Grammar(target, gbnf) as grammar:
        events = list(generate(target, None, target.encode_chat(messages), GenerationConfig(max_tokens, 0), grammar))
    return "".join(e.text for e in events[:-1])


def test_a_json_schema_reply_is_the_constrained_targets_and_fits(server, tools_target):
    fmt = {"type": "json_schema", "json_schema": {"name": "record", "schema": RECORD, "strict": True}}
    reply = client(server).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "the print"}], response_format=fmt
    )
    text = reply.choices[0].message.content
    assert text == alone(tools_target, [("user", "the print")], schema_grammar(RECORD))
    record = json.loads(text)
    assert set(record) == {"id", "ok", "tag"} and record["tag"] in ("red", "blue")
    assert reply.model_dump()["specgen"]["drafted"] > 0
    streamed = client(server).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "the print"}], response_format=fmt, stream=True
    )
    assert "".join(c.choices[0].delta.content or "" for c in streamed) == text


def test_a_json_object_reply_is_the_constrained_targets(server, tools_target):
    reply = client(server).chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "for i in"}],
        response_format={"type": "json_object"},
        max_tokens=40,
    )
    text = reply.choices[0].message.content
    assert text.startswith("{") and text == alone(tools_target, [("user", "for i in")], json_grammar(), 40)


@pytest.mark.parametrize(
    "fmt, param",
    [
        ({"type": "xml"}, "response_format.type"),
        ("json", "response_format"),
        ({"type": "json_schema", "json_schema": {"name": "x", "schema": [1]}}, "response_format.json_schema.schema"),
        (
            {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "properties": 5}}},
            "response_format.json_schema.schema",
        ),
        # nested 30,000 deep: llama.cpp's grammar parser would overflow its stack and take the server down
        (
            {
                "type": "json_schema",
                "json_schema": {"name": "x", "schema": {"type": "string", "pattern": "^a{0,30000}$"}},
            },
            "response_format.json_schema.schema",
        ),
    ],
)
def test_a_response_format_that_cannot_be_followed_is_a_400_naming_it(server, fmt, param):
    with pytest.raises(openai.BadRequestError) as error:
        client(server).chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "x"}], response_format=fmt
        )
    assert error.value.body["param"] == param
    assert "'xml'" in error.value.body["message"] if fmt == {"type": "xml"} else True  # what was wrong, not "an object"
    assert client(server).models.list().data, "the server still answers"


@pytest.mark.parametrize(
    "extra, example",
    [
        ({"response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": RECORD}}}, True),
        ({"response_format": {"type": "json_object"}}, False),  # no keys known
        (
            {
                "response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": RECORD}},
                "tools": [{"type": "function", "function": {"name": "f", "parameters": RECORD}}],
                "tool_choice": "required",
            },
            False,
        ),
    ],
)
def test_auto_is_given_the_schemas_example_only_for_a_json_schema_reply(extra, example):
    request = parse_request({"messages": [{"role": "user", "content": "a record"}], **extra}, "chat", (MODEL,))
    assert reply_example(request) == (schema_example(RECORD) if example else "")
