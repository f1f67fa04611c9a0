"""JSON nested too deep for Python's parser never reaches it: a body, the arguments of an earlier
tool call (a 400 naming the field) and a call the model wrote (text, not a call). The depth is
read without parsing; it is checked against the nesting of the value itself, walked here."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specgen.llama.templates import HERMES, LLAMA3
from specgen.serve.json_depth import MAX_DEPTH, depth
from specgen.serve.tools import CallStream, parse_calls
from specgen.serve.wire import ApiError, parse_request

TEXT = st.text(alphabet=st.sampled_from('ab[]{}"\\:,\n'), max_size=6)
VALUES = st.recursive(
    st.none() | st.integers() | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=20,
)


def nesting(value) -> int:
    """Levels of arrays and objects, walked on the parsed value."""
    if isinstance(value, list):
        return 1 + max(map(nesting, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(nesting, value.values()), default=0)
    return 0


@given(VALUES)
def test_the_depth_read_from_the_text_is_the_nesting_of_the_value(value):
    text = json.dumps(value)
    assert depth(text) == nesting(value) == depth(text.encode())


def test_brackets_inside_strings_and_escaped_quotes_do_not_count():
    assert depth(json.dumps({"a": "[[[{{{", "b": ['\\"]]', "\\"]})) == 2


DEEP_CALL = [
    {"role": "user", "content": "hi"},
    {
        "role": "assistant",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "[" * 100_000}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "ok"},
]


def test_earlier_call_arguments_nested_too_deep_are_a_400_naming_them():
    with pytest.raises(ApiError) as caught:
        parse_request({"messages": DEEP_CALL}, "chat", ("m",))
    assert caught.value.status == 400
    assert caught.value.param == "messages[1].tool_calls[0].function.arguments"


def test_earlier_call_arguments_as_deep_as_allowed_are_read():
    arguments = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    messages = [
        DEEP_CALL[0],
        {
            **DEEP_CALL[1],
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}],
        },
    ]
    spec = parse_request({"messages": messages}, "chat", ("m",))
    assert nesting(spec.chat[1]["tool_calls"][0]["function"]["arguments"]) == MAX_DEPTH


@pytest.mark.parametrize(
    "fmt, text",
    [
        (HERMES, '<tool_call>\n{"name": "f", "arguments": ' + "[" * 100_000 + "}\n</tool_call>"),
        (HERMES, '<tool_call>\n{"name": "f", "arguments": "' + "[" * 100_000 + '"}\n</tool_call>'),
        (LLAMA3, '{"name": "f", "parameters": ' + "{" * 100_000),
    ],
)
def test_a_call_the_model_nested_too_deep_stays_text(fmt, text):
    assert parse_calls(text, fmt) == (text, [])
    stream = CallStream(fmt)
    sent = stream.feed(text)
    content, calls = stream.finish()
    assert sent + content == text and calls == []
