"""`specgen bench` with tools per prompt (a JSONL "tools" list, and OpenAI's tool round trip in
"messages"): the prompt is rendered by the model's own chat template with its tool prompt, as
`serve` renders it; every configuration writes the same reply from it; and a prompt with tools
that cannot be timed or rendered is one line naming the problem."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from specgen.bench.plan import Plan, configurations
from specgen.bench.prompts import PromptFileError, read_prompt_files
from specgen.bench.runner import benchmark, encode_all
from specgen.decoding.sampling import SamplingParams
from specgen.errors import SpecgenError
from specgen.llama.model import LoadOptions, Model

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather of a city now",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
ROUND_TRIP = [
    {"role": "user", "content": "weather in Paris?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "22 C and sunny"},
]


@pytest.fixture(scope="module")
def tools_target(tiny_models):
    with Model(tiny_models["target_tools"], LoadOptions(n_ctx=2048, n_threads=1)) as model:
        yield model


def prompts_of(*records: dict):
    return read_prompt_files(["-"], io.StringIO("".join(json.dumps(r) + "\n" for r in records)))


def text_of(model, tokens: list[int]) -> str:
    return b"".join(map(model.piece, tokens)).decode()


def test_a_prompt_with_tools_is_rendered_with_the_templates_tool_prompt(tools_target):
    [asked, answered] = prompts_of(
        {"prompt": "weather in Paris?", "name": "asked", "tools": [WEATHER]},
        {"messages": ROUND_TRIP, "name": "answered", "tools": [WEATHER]},
    )
    assert asked.chat == ({"role": "user", "content": "weather in Paris?"},) and answered.text == "22 C and sunny"
    asked_text, answered_text = (text_of(tools_target, t) for t in encode_all(tools_target, [asked, answered], False))
    # Qwen2.5's tool prompt: the functions as JSON inside <tools>, the user's turn after it
    assert '<tools>\n{"type": "function", "function": {"name": "get_weather"' in asked_text
    assert asked_text.index("</tools>") < asked_text.index("user\nweather in Paris?") and asked_text.rstrip().endswith(
        "assistant"
    )
    # the earlier call is written with its arguments as an object, the result as the tool's response
    assert '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>' in answered_text
    assert "<tool_response>\n22 C and sunny\n</tool_response>" in answered_text
    [plain] = encode_all(tools_target, prompts_of({"prompt": "weather in Paris?"}), False)
    assert "get_weather" not in text_of(tools_target, plain)


def test_every_configuration_writes_the_same_reply_to_a_prompt_with_tools(tools_target, draft_model):
    prompts = prompts_of({"messages": ROUND_TRIP, "name": "answered", "tools": [WEATHER]})
    plan = Plan(configurations((3,), True, True), 40, 1, 0, SamplingParams())
    result = benchmark(tools_target, draft_model, prompts, plan, raw=False)
    assert result.prompt_tokens[0] == len(encode_all(tools_target, prompts, False)[0])
    outputs = {r.config: r.output for r in result.runs}
    assert len(outputs) == 3 and len(set(outputs.values())) == 1 and not [a for a in result.audits if a.diverged]


def test_a_model_without_a_tool_template_is_one_line(target_model):
    [prompt] = prompts_of({"prompt": "weather?", "tools": [WEATHER]})
    with pytest.raises(SpecgenError, match="has no chat template that teaches tool calls"):
        encode_all(target_model, [prompt], False)


@pytest.mark.parametrize(
    "record, problem",
    [
        ({"prompt": "a", "tools": {"get_weather": {}}}, '"tools" must be a list of function tools'),
        ({"prompt": "a", "tools": [{"type": "function", "function": {"parameters": {}}}]}, "must be a function tool"),
        ({"messages": ROUND_TRIP[:2], "tools": [WEATHER]}, "must end with the user's turn or a tool's result"),
        ({"messages": [ROUND_TRIP[0], {"role": "tool", "content": "22 C"}], "tools": [WEATHER]}, "each message needs"),
        ({"messages": ["weather?", ROUND_TRIP[0]], "tools": [WEATHER]}, "each message needs"),
        (
            {"messages": [{"role": "assistant", "content": None}, ROUND_TRIP[0]], "tools": [WEATHER]},
            "each message needs",
        ),
        (
            {
                "messages": [
                    ROUND_TRIP[0],
                    {
                        "role": "assistant",
                        "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": "{city"}}],
                    },
                    ROUND_TRIP[2],
                ],
                "tools": [WEATHER],
            },
            "each message needs",
        ),
    ],
)
def test_a_malformed_tool_prompt_is_one_line_naming_the_line(record, problem):
    with pytest.raises(PromptFileError, match=f"stdin line 1: .*{problem}"):
        prompts_of(record)


def test_tools_with_raw_or_an_endpoint_are_refused(tmp_path, target_model, tiny_models):
    [prompt] = prompts_of({"prompt": "weather?", "tools": [WEATHER]})
    with pytest.raises(SpecgenError, match="--raw sends text as is"):
        encode_all(target_model, [prompt], True)
    path = tmp_path / "tools.jsonl"
    path.write_text(json.dumps({"prompt": "weather?", "name": "w", "tools": [WEATHER]}) + "\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "specgen",
            "bench",
            str(path),
            "--target",
            str(tiny_models["target_tools"]),
            "--endpoint",
            "http://127.0.0.1:9/v1",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "prompt w carries tools, which only the local rows time" in done.stderr
