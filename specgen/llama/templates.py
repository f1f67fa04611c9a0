"""A model's own chat template, rendered with Jinja for requests that carry tools, and the
tool-call format it teaches the model.

llama.cpp's built-in template code knows a template by its look and writes plain turns; it has
no tools. A tool prompt is what the model's authors wrote into the template (Qwen2.5 lists the
functions in its system turn and asks for `<tool_call>` blocks; Llama 3.1 asks for a JSON
object), so requests with tools render the GGUF's template itself, as Hugging Face's
`apply_chat_template` does (`trim_blocks`, `lstrip_blocks`, a `tojson` that keeps non-ASCII
text). A GGUF's template is untrusted input: it runs in Jinja's immutable sandbox, which
refuses access to Python internals and changes to the values it is given.

The format a template teaches is read from its text: `<tool_call>` blocks (Qwen2.5, Hermes) or
a bare JSON object with `parameters` (Llama 3.1 and 3.2). `call_grammar` writes a grammar that
forces a well-formed call in that format, for `tool_choice` `required` or a named function.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from specgen.errors import SpecgenError
from specgen.llama.grammar import schema_grammar
from specgen.llama.library import llama

GRAMMAR_ROOT = "specgen-tool-calls"  # the forced calls' start rule, beside the schema's own rules


class TemplateError(SpecgenError):
    """The chat template cannot render these messages (or cannot be read at all)."""


@dataclass(frozen=True)
class ToolFormat:
    """How a model writes a tool call: a JSON object {"name", <arguments key>}, inside `open` and
    `close` (Qwen2.5's `<tool_call>` blocks, one per call) or bare (`open` empty: the whole reply,
    after an optional `prefix` such as Llama's `<|python_tag|>`)."""

    name: str
    arguments: str  # the key of the arguments object
    open: str = ""
    close: str = ""
    prefix: str = ""


HERMES = ToolFormat("hermes", "arguments", "<tool_call>\n", "\n</tool_call>")
LLAMA3 = ToolFormat("llama3", "parameters", prefix="<|python_tag|>")


def tool_format(source: str) -> ToolFormat | None:
    """The tool-call format a template teaches, or None where it teaches none specgen reads."""
    if "tools" not in source:
        return None
    if "<tool_call>" in source:
        return HERMES
    if '"parameters"' in source and ("<|python_tag|>" in source or "Environment: ipython" in source):
        return LLAMA3
    return None


class ChatTemplate:
    """A chat template compiled once in Jinja's sandbox, and the tool-call format it teaches."""

    def __init__(self, source: str, bos_token: str = "", eos_token: str = ""):
        import jinja2

        self.source = source
        self.format = tool_format(source)
        try:
            self._template = _environment().from_string(source)
        except jinja2.TemplateError as error:
            raise TemplateError(f"the chat template cannot be read: {error}") from None
        self._specials = {"bos_token": bos_token, "eos_token": eos_token}

    def render(self, messages: list[dict], tools: list[dict] | None) -> str:
        """The prompt text for `messages` (OpenAI's shape), ending with the assistant's turn."""
        try:
            return self._template.render(messages=messages, tools=tools or None, add_generation_prompt=True,
                                         **self._specials)
        except Exception as error:  # noqa: BLE001 - the template is untrusted code: any failure is its own
            raise TemplateError(f"the chat template cannot render these messages ({type(error).__name__}: "
                                f"{error})") from None


def model_template(model) -> ChatTemplate | None:
    """The template in a model's GGUF header, with its BOS and EOS texts (None: it has none)."""
    source = model.chat_template()
    if source is None:
        return None
    eos = llama().llama_vocab_eos(model.vocab_handle)
    return ChatTemplate(source, _token_text(model, model.bos), _token_text(model, eos))


def call_grammar(fmt: ToolFormat, tools: list[dict], single: bool) -> tuple[str, str]:
    """GBNF (and its start rule) for one well-formed call of one of `tools` in `fmt`, or several
    in a row unless `single`: the name is one of theirs, the arguments fit its parameters."""
    calls = [{"type": "object", "properties": {"name": {"const": tool["function"]["name"]},
                                               fmt.arguments: tool["function"].get("parameters") or {"type": "object"}},
              "required": ["name", fmt.arguments]} for tool in tools]
    body = schema_grammar(calls[0] if len(calls) == 1 else {"oneOf": calls})
    if not fmt.open:
        return body, "root"
    call = f"{_literal(fmt.open)} root {_literal(fmt.close)}"
    repeat = "" if single else f' ("\\n" {call})*'
    return f"{body}\n{GRAMMAR_ROOT} ::= {call}{repeat}\n", GRAMMAR_ROOT


def _literal(text: str) -> str:
    return json.dumps(text)  # a GBNF string literal escapes as JSON does


def _token_text(model, token: int) -> str:
    if token < 0:
        return ""
    raw = llama().llama_vocab_get_text(model.vocab_handle, token)
    return raw.decode("utf-8", errors="replace") if raw else ""


def _environment():
    """Hugging Face's rendering settings, in Jinja's immutable sandbox."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    environment = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                extensions=["jinja2.ext.loopcontrols"])
    environment.filters["tojson"] = _tojson
    environment.globals["raise_exception"] = _raise
    environment.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return environment


def _tojson(value, ensure_ascii: bool = False, indent=None, separators=None, sort_keys: bool = False) -> str:
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _raise(message: str):
    import jinja2

    raise jinja2.TemplateError(message)
