"""Open a target/draft pair safely and turn user text into prompt tokens.

Every front end (run, chat, bench) starts the same way: check both GGUF headers, refuse a pair
whose vocabularies differ before any weights are loaded, load both models under one ExitStack
(a draft whose vocabulary is a little larger or smaller is seen through the target's), and
encode the prompt with the model's chat template (or as raw text; or, for a conversation with
tools, with the template's own Jinja text, as `serve` does). Through a template, only the
template's markup becomes control tokens: messages, files and stdin are text (llama.markup).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from typing import Any

from specgen.errors import SpecgenError
from specgen.llama.model import ContextFull, LoadOptions, Model
from specgen.llama.templates import model_template
from specgen.llama.vocabmap import DraftVocabulary, stand_in
from specgen.models.gguf import GGUFInfo, read_info
from specgen.models.paths import ModelPaths
from specgen.models.vocab import check_vocabularies, same_texts


class IncompatiblePair(SpecgenError):
    """The draft model does not share the target's vocabulary."""


def preflight(paths: ModelPaths) -> GGUFInfo | None:
    """Validate both files and their shared vocabulary from the headers alone; the draft's header.
    The token texts (a large vocabulary's take most of a header's reading) are decoded only where
    the two vocabularies differ, to name where (`check_vocabularies`)."""
    target = read_info(paths.target, tokens=False)
    if paths.draft is None:
        return None
    draft = read_info(paths.draft, tokens=False)
    if not same_texts(target, draft):
        target, draft = read_info(paths.target), read_info(paths.draft)
    verdict = check_vocabularies(target, draft)
    if not verdict.compatible:
        raise IncompatiblePair(
            f"{paths.draft.name} cannot draft for {paths.target.name}: {verdict.reason}; "
            "pick a draft model from the same family"
        )
    return draft


@contextmanager
def open_models(paths: ModelPaths, options: LoadOptions) -> Iterator[tuple[Model, Model | DraftVocabulary | None]]:
    """Yield (target, draft or None), loaded after a successful pre-flight; free both on exit.
    Only the target gets the RPC workers: the draft, a few small passes a round, stays here."""
    header = preflight(paths)
    with ExitStack() as stack:
        target = stack.enter_context(Model(paths.target, options))
        loaded = stack.enter_context(Model(paths.draft, replace(options, rpc=()))) if paths.draft else None
        draft: Model | DraftVocabulary | None = loaded
        if loaded is not None and header is not None and loaded.n_vocab != target.n_vocab:
            draft = DraftVocabulary(loaded, target.n_vocab, stand_in(header, min(loaded.n_vocab, target.n_vocab)))
        yield target, draft


def encode_prompt(target: Model, text: str, raw: bool) -> list[int]:
    """Tokens for one user message: chat-templated (the message is text, never control tokens),
    or with `raw` the text as is, read as llama.cpp reads a prompt (`<|im_start|>` written in it
    is the control token)."""
    if not text.strip():
        raise SpecgenError("the prompt is empty; pass text as an argument or on stdin")
    if raw:
        tokens = target.tokenize(text, add_special=True, parse_special=True)
    else:
        tokens = target.encode_chat([("user", text)])
    check_fits(target, tokens)
    return tokens


def encode_messages(target: Model, messages: list[tuple[str, str]]) -> list[int]:
    """Tokens for a conversation (role, content) that ends with the user's turn."""
    tokens = target.encode_chat(messages)
    check_fits(target, tokens)
    return tokens


def encode_tool_chat(target: Model, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[int]:
    """Tokens for a conversation with tools (OpenAI's message objects, earlier calls' arguments as
    JSON text), through the model's own chat template and its tool prompt, as `serve` renders it."""
    template = model_template(target)
    if template is None or template.format is None:
        raise SpecgenError(
            f"{target.path.name} has no chat template that teaches tool calls specgen reads "
            "(Qwen2.5's <tool_call> blocks, Llama 3.1's JSON); drop the tools, or pick such a model"
        )
    read = [
        {**m, "tool_calls": [_with_object_arguments(c) for c in m["tool_calls"]]} if m.get("tool_calls") else m
        for m in messages
    ]
    tokens = target.encode_templated(template.render(read, tools))
    check_fits(target, tokens)
    return tokens


def _with_object_arguments(call: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI tool call with its arguments as the object a template writes out (not JSON text)."""
    function = call["function"]
    return {**call, "function": {**function, "arguments": json.loads(function["arguments"])}}


def check_fits(target: Model, tokens: list[int]) -> None:
    if len(tokens) >= target.n_ctx:
        raise ContextFull(
            f"the prompt is {len(tokens)} tokens but the context holds {target.n_ctx}; "
            "shorten the prompt or raise --ctx"
        )
