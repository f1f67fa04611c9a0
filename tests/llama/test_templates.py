"""Chat templates rendered with Jinja in the sandbox: the same tokens as llama.cpp's own template
code where that is the same prompt (the tiny models' ChatML), Qwen2.5's and Llama 3.1's tool
prompts as their authors wrote them, the tool-call format each teaches, and a hostile template
refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specgen.llama.model import LoadOptions, Model
from specgen.llama.templates import HERMES, LLAMA3, ChatTemplate, TemplateError, model_template

TEMPLATES = Path(__file__).parent.parent / "templates"
QWEN = (TEMPLATES / "qwen2.5-instruct.jinja").read_text()
LLAMA31 = (TEMPLATES / "llama3.1-instruct.jinja").read_text()
QWEN_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
CONVERSATIONS = [
    [("user", "def add")],
    [("system", "be brief"), ("user", "def add"), ("assistant", "return a + b"), ("user", "and self?")],
    [("user", "caf\u00e9 \u2192 \u00fcber"), ("assistant", ""), ("user", "<|im_start|> is text here")],
]


def as_dicts(conversation):
    return [{"role": role, "content": content} for role, content in conversation]


@pytest.fixture(scope="module")
def tools_model(tiny_models):
    with Model(tiny_models["target_tools"], LoadOptions(n_ctx=512, n_threads=1)) as model:
        yield model


@pytest.mark.parametrize("conversation", CONVERSATIONS)
def test_jinja_writes_the_tokens_llama_cpp_writes_for_chatml(target_model, conversation):
    template = model_template(target_model)
    rendered = target_model.encode_templated(template.render(as_dicts(conversation), None))
    assert rendered == target_model.encode_chat(conversation)


@pytest.mark.parametrize("conversation", CONVERSATIONS)
def test_qwen_jinja_adds_only_the_default_system_turn_llama_cpp_leaves_out(tools_model, conversation):
    """llama.cpp's ChatML code writes no system turn where the messages have none; Qwen2.5's own
    template writes its default one. So requests without tools keep llama.cpp's encoding."""
    template = model_template(tools_model)
    rendered = tools_model.encode_templated(template.render(as_dicts(conversation), None))
    with_system = conversation if conversation[0][0] == "system" else [("system", QWEN_SYSTEM), *conversation]
    assert rendered == tools_model.encode_chat(with_system)
    assert (rendered == tools_model.encode_chat(conversation)) == (conversation[0][0] == "system")


def test_qwen_tool_prompt_call_and_result_as_qwen_writes_them():
    template = ChatTemplate(QWEN)
    messages = [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "18 C, sunny"},
    ]
    text = template.render(messages, [WEATHER]).text
    assert template.format == HERMES
    assert text.startswith("<|im_start|>system\n" + QWEN_SYSTEM + "\n\n# Tools\n\n")
    assert "<tools>\n" + json.dumps(WEATHER, ensure_ascii=False) + "\n</tools>" in text
    assert (
        '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
        "</tool_call><|im_end|>\n"
    ) in text
    assert text.endswith(
        "<|im_start|>user\n<tool_response>\n18 C, sunny\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
    )


def test_llama31_tool_prompt_call_and_result_as_meta_writes_them():
    template = ChatTemplate(LLAMA31, bos_token="<|begin_of_text|>", eos_token="<|eot_id|>")
    messages = [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "18 C"},
    ]
    text = template.render(messages, [WEATHER]).text
    assert template.format == LLAMA3
    assert text.startswith("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\n")
    assert json.dumps(WEATHER, indent=4) + "\n\nWeather in Paris?<|eot_id|>" in text
    assert (
        '<|start_header_id|>assistant<|end_header_id|>\n\n{"name": "get_weather", "parameters": '
        '{"city": "Paris"}}<|eot_id|>'
    ) in text
    assert text.endswith(
        '<|start_header_id|>ipython<|end_header_id|>\n\n"18 C"<|eot_id|>'
        "<|start_header_id|>assistant<|end_header_id|>\n\n"
    )


def test_a_template_without_tools_teaches_no_format():
    assert ChatTemplate("{{ messages[0].content }}").format is None


@pytest.mark.parametrize(
    "source",
    [
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ messages.append({'role': 'user'}) }}",
        "{{ raise_exception('no tools here') }}",
        "{{ messages[0].content + none }}",
    ],
)
def test_a_hostile_or_broken_template_is_refused_in_one_error(source):
    with pytest.raises(TemplateError, match="cannot render"):
        ChatTemplate(source).render([{"role": "user", "content": "hi"}], None)
