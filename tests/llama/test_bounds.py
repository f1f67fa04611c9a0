"""Bounds before work: a JSON schema (and each tool's parameters) is walked before llama.cpp's
converter writes a grammar of it, and refused naming the field past a documented limit; a long
conversation is fitted to the context in a few encodings; a chat template renders within a
budget. Each probe of issue 46 is answered in well under a second."""

from __future__ import annotations

import json
import time

import pytest

from specgen.llama.conversation import Conversation
from specgen.llama.grammar import MAX_COUNT, MAX_PATTERN, GrammarError, pattern_size, schema_grammar
from specgen.llama.model import MAX_MESSAGES, ContextFull, LoadOptions, Model
from specgen.llama.templates import HERMES, ChatTemplate, TemplateError, call_grammar

FAST_S = 1.0


def refused(schema, field: str) -> str:
    start = time.perf_counter()
    with pytest.raises(GrammarError) as caught:
        schema_grammar(schema)
    assert time.perf_counter() - start < FAST_S
    assert field in str(caught.value), str(caught.value)
    return str(caught.value)


@pytest.mark.parametrize(
    "schema, field",
    [
        ({"type": "string", "maxLength": 5_000_000}, "schema.maxLength is 5000000"),
        ({"type": "array", "items": {"type": "integer"}, "minItems": 2_000_000}, "schema.minItems is 2000000"),
        (
            {"type": "object", "properties": {"tags": {"type": "array", "maxItems": MAX_COUNT + 1}}},
            f"schema.properties.tags.maxItems is {MAX_COUNT + 1}",
        ),
        ({"type": "object", "minProperties": 10**9}, "schema.minProperties"),
        ({"type": "string", "pattern": "^(a{1000}){1000}$"}, "schema.pattern"),
        ({"type": "string", "pattern": "x{99999999999999999999}"}, "schema.pattern"),
        ({"enum": list(range(5000))}, "schema.enum lists 5000 values"),
        ({"$ref": "https://example.com/schema.json"}, "schema.$ref"),
        ({"type": "integer", "minimum": 10**40}, "schema.minimum"),
    ],
)
def test_a_schema_past_a_bound_is_refused_naming_the_field(schema, field):
    refused(schema, field)


def test_depth_and_node_count_are_bounded():
    deep = json.loads('{"type": "array", "items": ' * 100 + '{"type": "integer"}' + "}" * 100)
    assert "nests deeper" in refused(deep, "schema.items")
    wide = {
        "type": "object",
        "properties": {f"p{i}": {"type": "object", "properties": {"a": {"type": "string"}}} for i in range(3000)},
    }
    refused(wide, "more than 5000 schemas")


def test_schemas_within_the_bounds_still_become_grammars():
    assert "root" in schema_grammar({"type": "string", "maxLength": MAX_COUNT})
    assert "root" in schema_grammar({"type": "string", "pattern": "^[a-z]{2,8}-[0-9]{3}$"})
    assert "root" in schema_grammar({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 5})


def test_pattern_size_counts_nested_repetitions():
    assert pattern_size("^[a-z]{2,8}-[0-9]{3}$") == 12  # independent count: 8 + 1 + 3
    assert pattern_size("(ab{3}){10}") == 40
    assert pattern_size("^(a{1000}){1000}$") == 10**6 > MAX_PATTERN


def test_tool_parameters_take_the_same_bounds_named_by_tool():
    tools = [
        {"type": "function", "function": {"name": "ok", "parameters": {"type": "object"}}},
        {
            "type": "function",
            "function": {
                "name": "big",
                "parameters": {"type": "object", "properties": {"s": {"type": "string", "maxLength": 5_000_000}}},
            },
        },
    ]
    start = time.perf_counter()
    with pytest.raises(GrammarError, match=r"tools\[1\]\.function\.parameters\.properties\.s\.maxLength"):
        call_grammar(HERMES, tools, single=True)
    assert time.perf_counter() - start < FAST_S


def reference_fit(model, system: str, history, user: str, reserve: int):
    """The old way, one pair of messages dropped per pass: what stays, and how many turns went."""
    history, dropped = list(history), 0
    while len(model.encode_chat([("system", system), *history, ("user", user)])) + reserve > model.n_ctx and history:
        del history[:2]
        dropped += 1
    return history, dropped


@pytest.fixture(scope="module")
def small(tiny_models):
    with Model(tiny_models["target"], LoadOptions(n_ctx=256, n_threads=1)) as model:
        yield model


@pytest.mark.parametrize("count", [6, 40, 90])
def test_a_long_conversation_drops_the_turns_the_one_pass_way_would(small, count):
    history = [
        (("user", "the print of self " * (i % 3)) if i % 2 == 0 else ("assistant", "return a" * (i % 4)))
        for i in range(count)
    ]
    conversation = Conversation(small, system="be brief")
    conversation.restore([("system", "be brief"), *history])
    prompt = conversation.prompt("and then", reserve=16)
    kept, dropped = reference_fit(small, "be brief", history, "and then", 16)
    assert (list(prompt.history[1:]), prompt.dropped) == (kept, dropped)
    assert list(prompt.tokens) == small.encode_chat([("system", "be brief"), *kept, ("user", "and then")])


def test_a_thousand_messages_fit_in_well_under_a_second(small):
    conversation = Conversation(small)
    conversation.restore([("user", "a"), ("assistant", "b")] * 500)
    start = time.perf_counter()
    prompt = conversation.prompt("c", reserve=16)
    assert time.perf_counter() - start < FAST_S
    assert len(prompt.tokens) + 16 <= small.n_ctx and prompt.dropped > 450


def test_a_chat_longer_than_the_cap_keeps_its_newest_messages(small):
    conversation = Conversation(small)
    conversation.restore([("user", "a"), ("assistant", "b")] * MAX_MESSAGES)
    start = time.perf_counter()
    prompt = conversation.prompt("c", reserve=16)
    assert time.perf_counter() - start < FAST_S and len(prompt.history) < MAX_MESSAGES


def test_a_message_longer_than_the_context_is_refused_in_one_pass(small):
    conversation = Conversation(small)
    conversation.restore([("user", "a"), ("assistant", "b")] * 400)
    with pytest.raises(ContextFull, match="this message needs"):
        conversation.prompt("the print of self " * 200, reserve=16)


MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    "source, why",
    [
        ("{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}", "ran over"),
        ("{{ 2 ** 99999999 }}", "power"),
        ("{{ 'x' * 100000000 }}", "count or width"),
        ("{% set ns = namespace(s='x') %}{% for i in range(60) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", "text of"),
        (
            "{% set ns = namespace(s='xxxx') %}{% for i in range(20) %}{% set ns.s = ns.s.replace('x', ns.s) %}"
            "{% endfor %}",
            "text of",
        ),
        ("{{ '%999999999d' % 1 }}", "width"),
        ("{{ '{:999999999}'.format(1) }}", "width"),
        ("{{ 'x'|center(999999999) }}", "count or width"),
        ("{% for i in range(99999) %}{{ 'y' * 99999 }}{% endfor %}", "characters"),
    ],
)
def test_a_template_that_would_run_away_stops_within_its_budget(source, why):
    start = time.perf_counter()
    with pytest.raises(TemplateError, match=why):
        ChatTemplate(source).render(MESSAGES, None)
    assert time.perf_counter() - start < FAST_S * 1.5
