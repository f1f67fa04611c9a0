"""Tool calls through the official `openai` client against a real server whose tiny target
carries Qwen2.5's chat template: a call forced by tool_choice, its result sent back as a `tool`
message, and the final answer; streamed calls; the forced call is what the target alone writes
under the same grammar; requests the model cannot serve are 400s."""

from __future__ import annotations

import json

import openai
import pytest
from test_structured import client, tools_server

from specgen.decoding.loop import GenerationConfig, generate
from specgen.llama.grammar import Grammar
from specgen.llama.templates import HERMES, call_grammar, model_template
from specgen.serve.prompts import Prompts
from specgen.serve.tools import parse_calls
from specgen.serve.wire import ApiError, parse_request

MODEL = "tiny-target_tools"
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"enum": ["Paris", "London"]}, "unit": {"enum": ["C", "F"]}},
            "required": ["city", "unit"],
        },
    },
}
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "parameters": {"type": "object", "properties": {"zone": {"enum": ["UTC", "CET"]}}, "required": ["zone"]},
    },
}
QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]


@pytest.fixture(scope="module")
def server(tiny_models):
    running = tools_server(tiny_models, 200)
    yield running
    running.stop()


def test_a_tool_calling_round_trip_call_result_answer(server, tools_target):
    api = client(server)
    first = api.chat.completions.create(model=MODEL, messages=QUESTION, tools=[WEATHER, TIME], tool_choice="required")
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    call = choice.message.tool_calls[0]
    assert call.type == "function" and call.id.startswith("call_") and call.function.name in ("get_weather", "get_time")
    arguments = json.loads(call.function.arguments)
    assert arguments in ({"city": c, "unit": u} for c in ("Paris", "London") for u in "CF") or arguments in (
        {"zone": "UTC"},
        {"zone": "CET"},
    )

    messages = [
        *QUESTION,
        choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "18 C and sunny"},
    ]
    final = api.chat.completions.create(model=MODEL, messages=messages, tools=[WEATHER, TIME], max_tokens=16)
    assert isinstance(final.choices[0].message.content, str) and final.choices[0].message.content
    assert final.choices[0].finish_reason in ("stop", "length") and not final.choices[0].message.tool_calls
    sent = parse_request({"messages": messages, "tools": [WEATHER, TIME]}, "chat", (MODEL,))
    rendered = model_template(tools_target).render([dict(m) for m in sent.chat], [WEATHER, TIME])
    assert "<tool_response>\n18 C and sunny\n</tool_response>" in rendered.text and call.function.name in rendered.text
    assert final.usage.prompt_tokens == len(tools_target.encode_templated(rendered))


def test_a_forced_call_is_what_the_target_alone_writes_under_the_same_grammar(server, tools_target):
    reply = client(server).chat.completions.create(
        model=MODEL,
        messages=QUESTION,
        tools=[WEATHER, TIME],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
    )
    prompt = tools_target.encode_templated(model_template(tools_target).render(QUESTION, [WEATHER, TIME]))
    with Grammar(tools_target, *call_grammar(HERMES, [WEATHER], single=False)) as grammar:
        events = list(generate(tools_target, None, prompt, GenerationConfig(200, 0), grammar))
    _, calls = parse_calls("".join(e.text for e in events[:-1]), HERMES)
    got = reply.choices[0].message.tool_calls
    assert [(c.function.name, json.loads(c.function.arguments)) for c in got] == [
        (c.name, json.loads(c.arguments)) for c in calls
    ] and calls[0].name == "get_weather"
    assert reply.model_dump()["specgen"]["drafted"] > 0


def test_streamed_calls_come_in_delta_tool_calls(server):
    api = client(server)
    args = {"model": MODEL, "messages": QUESTION, "tools": [WEATHER], "tool_choice": "required"}
    whole = api.chat.completions.create(**args).choices[0].message.tool_calls
    chunks = list(api.chat.completions.create(**args, stream=True))
    deltas = [d for c in chunks if c.choices for d in (c.choices[0].delta.tool_calls or [])]
    assert [(d.index, d.type, d.function.name, d.function.arguments) for d in deltas] == [
        (i, "function", c.function.name, c.function.arguments) for i, c in enumerate(whole)
    ]
    assert all(d.id.startswith("call_") for d in deltas)
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == ""


def test_tool_choice_none_leaves_the_tools_out_of_the_prompt(server, tools_target):
    reply = client(server).chat.completions.create(
        model=MODEL, messages=QUESTION, tools=[WEATHER], tool_choice="none", max_tokens=4
    )
    assert reply.usage.prompt_tokens == len(tools_target.encode_chat([("user", QUESTION[0]["content"])]))
    assert not reply.choices[0].message.tool_calls


@pytest.mark.parametrize(
    "extra, param",
    [
        ({"tool_choice": "required"}, "tool_choice"),
        ({"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "get_time"}}}, "tool_choice"),
        ({"tools": [{"type": "code_interpreter"}]}, "tools[0]"),
        ({"tools": [{"type": "function", "function": {"name": "bad name"}}]}, "tools[0].function.name"),
        ({"tools": [WEATHER], "response_format": {"type": "json_object"}}, "response_format"),
        (
            {
                "messages": [
                    *QUESTION,
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{oops"}}
                        ],
                    },
                ]
            },
            "messages[1].tool_calls[0].function.arguments",
        ),
    ],
)
def test_tool_requests_that_cannot_be_served_are_400s_naming_the_field(server, extra, param):
    with pytest.raises(openai.BadRequestError) as error:
        client(server).chat.completions.create(**{"model": MODEL, "messages": QUESTION, **extra})
    assert error.value.body["param"] == param


def test_a_model_whose_template_has_no_tool_format_refuses_tools(target_model):
    request = parse_request({"messages": QUESTION, "tools": [WEATHER]}, "chat", ("m",))
    with pytest.raises(ApiError, match="no tool-call format") as error:
        Prompts(target_model, 1000).encode(request)
    assert error.value.param == "tools"
