"""A model's own chat template, rendered with Jinja for requests that carry tools, and the
tool-call format it teaches the model.

llama.cpp's built-in template code knows a template by its look and writes plain turns; it has
no tools. A tool prompt is what the model's authors wrote into the template (Qwen2.5 lists the
functions in its system turn and asks for `<tool_call>` blocks; Llama 3.1 asks for a JSON
object), so requests with tools render the GGUF's template itself, as Hugging Face's
`apply_chat_template` does (`trim_blocks`, `lstrip_blocks`, a `tojson` that keeps non-ASCII
text). A GGUF's template is untrusted input: it runs in Jinja's immutable sandbox, which
refuses access to Python internals and changes to the values it is given, and within a budget:
RENDER_SECONDS of its own lines (a template can loop without end), no value or output larger
than a bound (`**`, `*`, `+`, widths in formats and filters are checked before they run). The
rendering keeps the template's markup apart from the messages' texts (llama.markup), so that
only the markup can become control tokens.

The format a template teaches is read from its text: `<tool_call>` blocks (Qwen2.5, Hermes) or
a bare JSON object with `parameters` (Llama 3.1 and 3.2). `call_grammar` writes a grammar that
forces a well-formed call in that format, for `tool_choice` `required` or a named function.
"""

from __future__ import annotations

import functools
import json
import re
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from types import FrameType
from typing import Any

from specgen.errors import SpecgenError
from specgen.llama.grammar import check_schema, schema_grammar
from specgen.llama.library import llama
from specgen.llama.markup import Templated, split
from specgen.llama.model import Model, check_message_count

GRAMMAR_ROOT = "specgen-tool-calls"  # the forced calls' start rule, beside the schema's own rules
RENDER_SECONDS = 0.4  # the longest a template may run over one request's messages (it renders twice)
MAX_WIDTH = 100_000  # the largest count or width a template may pass to an operator, method or filter
MAX_VALUE = 8 << 20  # the longest text or list a template may make (the output is bounded apart)
MIN_OUTPUT = 1 << 20  # a rendering may be this long, or twice the messages' and tools' JSON if longer
_WIDE_FORMAT = re.compile(r"[%{:][^a-zA-Z%}]*?[0-9]{6,}")  # a width or precision of 6+ digits in a format


class _OverBudget(Exception):
    """A template went past the budget of one rendering (time, a value's size, the output's)."""


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
        self._template.root_render_func.__globals__["str_join"] = _joined  # `~`, checked for size
        self._specials = {"bos_token": bos_token, "eos_token": eos_token}

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> Templated:
        """The prompt for `messages` (OpenAI's shape), ending with the assistant's turn, its markup
        apart from the messages' and tools' texts; within the budget of one rendering."""
        check_message_count(len(messages))
        limit = max(MIN_OUTPUT, 2 * len(json.dumps([messages, tools], ensure_ascii=False, default=str)))
        return split(lambda values: self._render(values[:-1], values[-1], limit), [*messages, tools or []])

    def _render(self, messages: list[Any], tools: list[Any], limit: int) -> str:
        deadline = time.monotonic() + RENDER_SECONDS
        chunks: list[str] = []
        written = 0
        try:
            with _timed(deadline):
                for chunk in self._template.generate(
                    messages=messages, tools=tools or None, add_generation_prompt=True, **self._specials
                ):
                    written += len(chunk)
                    if written > limit:
                        raise _OverBudget(f"writes over {limit} characters")
                    chunks.append(chunk)
        except _OverBudget as error:
            raise TemplateError(
                f"the chat template stopped: it {error}, past the budget of one rendering; "
                "the template may loop without end: fix the GGUF's template"
            ) from None
        except Exception as error:  # noqa: BLE001 - the template is untrusted code: any failure is its own
            raise TemplateError(
                f"the chat template cannot render these messages ({type(error).__name__}: {error})"
            ) from None
        return "".join(chunks)


def model_template(model: Model) -> ChatTemplate | None:
    """The template in a model's GGUF header, with its BOS and EOS texts (None: it has none)."""
    source = model.chat_template()
    if source is None:
        return None
    eos = llama().llama_vocab_eos(model.vocab_handle)
    return ChatTemplate(source, _token_text(model, model.bos), _token_text(model, eos))


def call_grammar(fmt: ToolFormat, tools: list[dict[str, Any]], single: bool) -> tuple[str, str]:
    """GBNF (and its start rule) for one well-formed call of one of `tools` in `fmt`, or several
    in a row unless `single`: the name is one of theirs, the arguments fit its parameters."""
    for index, tool in enumerate(tools):
        check_schema(tool["function"].get("parameters") or {"type": "object"}, f"tools[{index}].function.parameters")
    calls = [
        {
            "type": "object",
            "properties": {
                "name": {"const": tool["function"]["name"]},
                fmt.arguments: tool["function"].get("parameters") or {"type": "object"},
            },
            "required": ["name", fmt.arguments],
        }
        for tool in tools
    ]
    body = schema_grammar(calls[0] if len(calls) == 1 else {"oneOf": calls})
    if not fmt.open:
        return body, "root"
    call = f"{_literal(fmt.open)} root {_literal(fmt.close)}"
    repeat = "" if single else f' ("\\n" {call})*'
    return f"{body}\n{GRAMMAR_ROOT} ::= {call}{repeat}\n", GRAMMAR_ROOT


def _literal(text: str) -> str:
    return json.dumps(text)  # a GBNF string literal escapes as JSON does


def _token_text(model: Model, token: int) -> str:
    if token < 0:
        return ""
    raw = llama().llama_vocab_get_text(model.vocab_handle, token)
    return raw.decode("utf-8", errors="replace") if raw else ""


class _timed:
    """Trace the template's own lines (its code is named <template>) on this thread, and stop it
    with _OverBudget once `deadline` (time.monotonic) has passed."""

    def __init__(self, deadline: float):
        self.deadline = deadline
        self.previous: Callable[..., Any] | None = None

    def _line(self, frame: FrameType, event: str, arg: object) -> Callable[..., Any]:
        if time.monotonic() > self.deadline:
            raise _OverBudget(f"ran over {RENDER_SECONDS} s")
        return self._line

    def _call(self, frame: FrameType, event: str, arg: object) -> Callable[..., Any] | None:
        return self._line if frame.f_code.co_filename == "<template>" else None

    def __enter__(self) -> None:
        self.previous = sys.gettrace()
        sys.settrace(self._call)

    def __exit__(self, *exc: object) -> None:
        sys.settrace(self.previous)


def _checked(value: Any) -> Any:
    """`value`, once it is known to be no larger than a template may make one."""
    if isinstance(value, (str, list, tuple, bytes)) and len(value) > MAX_VALUE:
        raise _OverBudget(f"makes a value of {len(value)} items")
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4096:
        raise _OverBudget("makes an integer of over 4096 bits")
    return value


def _check_arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    for value in (*args, *kwargs.values()):
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_WIDTH:
            raise _OverBudget(f"asks for a count or width of {value}")


def _check_format(text: object) -> None:
    if isinstance(text, str) and _WIDE_FORMAT.search(text):
        raise _OverBudget("asks for a width of a million or more in a format")


def _check_method(method: object, args: tuple[Any, ...]) -> None:
    """Refuse a text method that would make a text past MAX_VALUE, before it makes it."""
    method = getattr(method, "__wrapped__", method)  # the sandbox wraps str.format
    text, name = getattr(method, "__self__", None), getattr(method, "__name__", "")
    if not isinstance(text, str):
        return
    if name in ("format", "format_map"):
        _check_format(text)
    if name == "replace" and len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
        grown = (text.count(args[0]) if args[0] else len(text) + 1) * max(0, len(args[1]) - len(args[0]))
        _check_size(len(text) + grown)
    if name == "join" and args and isinstance(args[0], (list, tuple)):
        _check_size(sum(len(str(item)) for item in args[0]) + len(text) * len(args[0]))


def _check_size(size: int) -> None:
    if size > MAX_VALUE:
        raise _OverBudget(f"would make a text of {size} characters")


def _joined(parts: Iterable[object]) -> str:
    """Jinja's `~` and `join`, refused before a text past MAX_VALUE is made."""
    texts = [str(part) for part in parts]
    _check_size(sum(map(len, texts)))
    return "".join(texts)


def _bounded_filter(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """A filter whose counts and widths are checked first, and its result after."""

    @functools.wraps(function)  # keeps Jinja's pass_context marks
    def bounded(*args: Any, **kwargs: Any) -> Any:
        _check_arguments(args, kwargs)
        if name == "format":
            _check_format(next((a for a in args if isinstance(a, str)), None))
        if name == "join":
            _check_size(sum(len(str(item)) for arg in args if isinstance(arg, (list, tuple)) for item in arg))
        return _checked(function(*args, **kwargs))

    return bounded


def _environment() -> Any:
    """Hugging Face's rendering settings, in Jinja's immutable sandbox, with the budget's checks."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class Bounded(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset(["**", "*", "+", "%"])

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            numbers = isinstance(left, (int, float)) and isinstance(right, (int, float))
            if operator == "**" and numbers and abs(right) > 64 and abs(left) > 1:
                raise _OverBudget(f"raises to the power {right}")
            if operator == "*":
                _check_arguments((left, right), {})
            if operator == "%":
                _check_format(left)
            return _checked(super().call_binop(context, operator, left, right))

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # Jinja's own signature
            _check_arguments(args, kwargs)
            _check_method(__obj, args)
            return _checked(super().call(__context, __obj, *args, **kwargs))

    environment = Bounded(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    for name, function in list(environment.filters.items()):
        environment.filters[name] = _bounded_filter(name, function)
    environment.filters["tojson"] = _tojson
    environment.globals["raise_exception"] = _raise
    environment.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return environment


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | str | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _raise(message: str) -> None:
    import jinja2

    raise jinja2.TemplateError(message)
