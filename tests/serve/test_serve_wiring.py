"""What serve asks of the engine: a reply written in JSON (a `response_format`, a forced tool call,
tools the model may call) is `quoted`, so auto copies also from the prompt's text as JSON
escapes it; a plain chat is not. Each request goes through the real scheduler thread on the tiny
model with Qwen2.5's template; `builds.recorded` keeps the generation the engine built for it."""

from __future__ import annotations

import asyncio

import pytest
from builds import recorded

from specgen.decoding.auto import AutoDrafter
from specgen.decoding.loop import GenerationConfig
from specgen.engine.drafting import base_drafter
from specgen.serve.scheduler import Failed, Finished, Gone, Job, Limits, Scheduler
from specgen.serve.wire import parse_request

QUESTION = [{"role": "user", "content": 'What is the weather in "Paris"?\nSay it in JSON.'}]
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
RECORD = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "warm": {"type": "boolean"}},
    "required": ["city", "warm"],
}


async def _served(scheduler: Scheduler, body: dict):
    job = Job(parse_request(body, "chat", ("tiny",)))
    scheduler.submit(job)
    while not isinstance(event := await job.next(), (Finished, Failed, Gone)):
        pass
    return event


def built_for(target, body: dict, monkeypatch, tmp_path):
    """The generation the engine built for one chat request served by a scheduler with K auto."""
    monkeypatch.setenv("SPECGEN_CACHE_DIR", str(tmp_path))
    made = recorded(monkeypatch)
    with Scheduler(target, base_drafter(None), GenerationConfig(12, 3), True, Limits(1, 1024)) as scheduler:
        event = asyncio.run(_served(scheduler, {"messages": QUESTION, "max_tokens": 12, "temperature": 0, **body}))
    assert isinstance(event, Finished), event
    [generation] = made
    assert isinstance(generation.drafter, AutoDrafter)
    return generation


@pytest.mark.parametrize(
    "body",
    [
        {"response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": RECORD}}},
        {"response_format": {"type": "json_object"}},
    ],
    ids=["json_schema", "json_object"],
)
def test_a_response_format_is_quoted(tools_target, monkeypatch, tmp_path, body):
    generation = built_for(tools_target, body, monkeypatch, tmp_path)
    assert generation.request.grammar is not None
    assert generation.request.quoted and generation.drafter.quoted


@pytest.mark.parametrize("choice", ["required", "auto"])
def test_tool_calls_are_quoted(tools_target, monkeypatch, tmp_path, choice):
    """A forced call follows the tools' grammar; with tool_choice auto the reply may be a call,
    written in JSON too, without a grammar."""
    generation = built_for(tools_target, {"tools": [WEATHER], "tool_choice": choice}, monkeypatch, tmp_path)
    assert (generation.request.grammar is not None) == (choice == "required")
    assert generation.request.quoted and generation.drafter.quoted


def test_a_plain_chat_is_not_quoted(tools_target, monkeypatch, tmp_path):
    generation = built_for(tools_target, {}, monkeypatch, tmp_path)
    assert generation.request.grammar is None and not generation.request.quoted and not generation.drafter.quoted
