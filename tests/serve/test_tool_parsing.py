"""Reading tool calls back from a reply's text: Qwen2.5's `<tool_call>` blocks and Llama 3.1's
bare JSON, with content around them kept; text that only looks like a call stays content; and
a reply fed to the stream splitter in any pieces comes out as the whole reply parsed."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specgen.llama.templates import HERMES, LLAMA3
from specgen.serve.tools import CallStream, ToolCall, parse_calls

PARIS = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
TWO = (
    f"Let me check.\n<tool_call>\n{PARIS}\n</tool_call>\n"
    '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>'
)

CASES = [
    (HERMES, f"<tool_call>\n{PARIS}\n</tool_call>", "", [("get_weather", {"city": "Paris"})]),
    (HERMES, TWO, "Let me check.", [("get_weather", {"city": "Paris"}), ("get_time", {})]),
    (HERMES, f"<tool_call>\n{PARIS}", "", [("get_weather", {"city": "Paris"})]),  # ended at the end of turn
    (HERMES, "No call: <tool_call> is a tag I know.", "No call: <tool_call> is a tag I know.", []),
    (HERMES, '<tool_call>\n{"name": "f", "arguments": {"a": 1', '<tool_call>\n{"name": "f", "arguments": {"a": 1', []),
    (HERMES, "plain answer", "plain answer", []),
    (LLAMA3, '{"name": "get_weather", "parameters": {"city": "Paris"}}', "", [("get_weather", {"city": "Paris"})]),
    (LLAMA3, '<|python_tag|>{"name": "f", "parameters": {}}', "", [("f", {})]),
    (LLAMA3, '{"answer": 42}', '{"answer": 42}', []),
    (LLAMA3, "It is sunny.", "It is sunny.", []),
]


@pytest.mark.parametrize("fmt, text, content, calls", CASES)
def test_calls_and_content_are_read_from_the_text(fmt, text, content, calls):
    got_content, got_calls = parse_calls(text, fmt)
    assert got_content == content
    assert [(c.name, json.loads(c.arguments)) for c in got_calls] == calls


def test_arguments_written_as_a_json_string_are_read_too():
    _, calls = parse_calls('<tool_call>\n{"name": "f", "arguments": "{\\"a\\": 1}"}\n</tool_call>', HERMES)
    assert calls == [ToolCall("f", '{"a": 1}')]


def streamed(fmt, pieces: list[str]) -> tuple[str, list[ToolCall]]:
    stream = CallStream(fmt)
    sent = "".join(stream.feed(piece) for piece in pieces)
    rest, calls = stream.finish()
    return sent + rest, calls


@given(case=st.sampled_from(CASES), cuts=st.lists(st.integers(0, 200), max_size=8))
def test_a_reply_streamed_in_any_pieces_gives_what_the_whole_gives(case, cuts):
    fmt, text, _, _ = case
    bounds = sorted({0, len(text), *[c % (len(text) + 1) for c in cuts]})
    pieces = [text[a:b] for a, b in itertools.pairwise(bounds)]
    content, calls = streamed(fmt, pieces)
    whole_content, whole_calls = parse_calls(text, fmt)
    assert calls == whole_calls
    assert content.strip() == whole_content.strip()


def test_content_before_a_call_is_sent_before_the_reply_ends():
    stream = CallStream(HERMES)
    assert stream.feed("Let me check.\n<tool") == "Let me check.\n"
    assert stream.feed("_call>\n" + PARIS) == ""
    assert stream.finish()[1] == [ToolCall("get_weather", '{"city": "Paris"}')]
    plain = CallStream(LLAMA3)
    assert plain.feed("  ") == "" and plain.feed("It is") == "  It is" and plain.feed(" {sunny}") == " {sunny}"
