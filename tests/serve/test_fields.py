"""Nothing a client sends is ignored without a word: every request field OpenAI documents is
either read, a hint, sent at its value that asks for nothing, or a 400 naming it."""

from __future__ import annotations

import pytest

from specgen.serve.wire import ApiError, parse_request

MODELS = ("tiny",)
CHAT = {"messages": [{"role": "user", "content": "hi"}]}
COMPLETION = {"prompt": "hi"}

# OpenAI's documented request fields that change the reply and that specgen does not honour
CHAT_REFUSED = {
    "audio": {"voice": "alloy", "format": "wav"},
    "frequency_penalty": 0.5,
    "presence_penalty": -1,
    "logit_bias": {"50256": -100},
    "functions": [{"name": "f"}],
    "function_call": "auto",
    "modalities": ["text", "audio"],
    "reasoning_effort": "low",
    "verbosity": "low",
    "web_search_options": {},
}
COMPLETION_REFUSED = {
    "echo": True,
    "best_of": 3,
    "frequency_penalty": 1,
    "presence_penalty": 0.1,
    "logit_bias": {"1": 5},
}
HINTS = {
    "user": "u-1",
    "metadata": {"a": "b"},
    "store": False,
    "service_tier": "auto",
    "prompt_cache_key": "k",
    "safety_identifier": "s",
}


def parse(body: dict, kind: str):
    return parse_request(body, kind, MODELS)


@pytest.mark.parametrize(
    "kind, base, refused",
    [
        *[("chat", CHAT, item) for item in CHAT_REFUSED.items()],
        *[("completion", COMPLETION, item) for item in COMPLETION_REFUSED.items()],
        ("chat", CHAT, ("frobnicate", 1)),
        ("completion", COMPLETION, ("min_p", 0.05)),
        ("completion", COMPLETION, ("messages", CHAT["messages"])),
        ("chat", CHAT, ("prompt", "x")),
        ("chat", CHAT, ("n", 2)),
        ("completion", COMPLETION, ("n", 3)),
    ],
    ids=lambda value: value[0] if isinstance(value, tuple) else None,
)
def test_a_field_the_server_does_not_honour_is_a_400_naming_it(kind, base, refused):
    name, value = refused
    with pytest.raises(ApiError) as error:
        parse({**base, name: value}, kind)
    assert error.value.status == 400 and error.value.param == name and name in error.value.message
    assert error.value.code == "unsupported_parameter" and error.value.kind == "invalid_request_error"


@pytest.mark.parametrize("kind, base", [("chat", CHAT), ("completion", COMPLETION)])
def test_hints_null_fields_and_values_that_ask_for_nothing_are_accepted(kind, base):
    quiet = {"frequency_penalty": 0, "presence_penalty": 0.0, "logit_bias": {}, "n": 1}
    quiet |= {"modalities": ["text"]} if kind == "chat" else {"echo": False, "best_of": 1}
    nulls = dict.fromkeys(CHAT_REFUSED if kind == "chat" else COMPLETION_REFUSED)
    parse({**base, **HINTS, **quiet, **nulls, "frobnicate": None}, kind)


def test_a_message_field_or_stream_option_the_server_does_not_read_is_a_400():
    with pytest.raises(ApiError) as error:
        parse({"messages": [{"role": "user", "content": "hi", "audio": {"id": "a"}}]}, "chat")
    assert error.value.param == "messages[0].audio"
    with pytest.raises(ApiError) as error:
        parse({**CHAT, "stream": True, "stream_options": {"include_usage": True, "chunk_size": 5}}, "chat")
    assert error.value.param == "stream_options.chunk_size"
    parse(
        {
            "messages": [{"role": "user", "content": "hi", "name": "ann"}],
            "stream_options": {"include_usage": True, "include_obfuscation": False},
        },
        "chat",
    )


@pytest.mark.parametrize(
    "messages, param, says",
    [
        ([{"role": "wizard", "content": "hi"}], "messages[0].role", "'wizard'"),
        ([{"role": "function", "content": "hi"}], "messages[0].role", "'function'"),
        ([{"role": "us\u0000er", "content": "hi"}], "messages[0].role", "must be one of system, developer, user"),
        ([{"role": "user", "content": None}], "messages[0].content", "needs content"),
        ([{"role": "user"}], "messages[0].content", "needs content"),
        (
            [{"role": "user", "content": "w?"}, {"role": "assistant", "content": None}],
            "messages[1].content",
            "needs content or tool_calls",
        ),
        (
            [{"role": "user", "content": "w?"}, {"role": "tool", "content": "18C"}],
            "messages[1].tool_call_id",
            "tool_call_id",
        ),
    ],
)
def test_a_message_openai_would_refuse_is_a_400_naming_its_field(messages, param, says):
    with pytest.raises(ApiError) as error:
        parse({"messages": messages}, "chat")
    assert error.value.status == 400 and error.value.param == param and says in error.value.message


def test_every_role_openai_documents_is_read_and_an_assistant_may_send_tool_calls_alone():
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    request = parse(
        {
            "messages": [
                {"role": "developer", "content": "be brief"},
                {"role": "system", "content": "s"},
                {"role": "user", "content": "w?"},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "content": "18C", "tool_call_id": "c1"},
            ]
        },
        "chat",
    )
    assert [role for role, _ in request.messages] == ["system", "system", "user", "assistant", "tool"]
