"""Tool calls read back from a reply's text, whole or as it streams, in the model's own format.

A model asked with tools writes its calls as text in the format its template taught it
(`llama.templates.ToolFormat`): Qwen2.5 writes `<tool_call>` blocks holding
{"name", "arguments"}, Llama 3.1 a bare {"name", "parameters"} object. The client gets them as
OpenAI's `tool_calls` (a name, and the arguments as a JSON string) and the rest of the text as
`content`. While a reply streams, text that may begin a call is held back until it is known to
be one; a call is sent whole once the reply ends. Text that only looks like a call (it is not
JSON with a name and arguments, or nests deeper than any call needs) is sent as content, so
nothing the model wrote is lost.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from specgen.llama.templates import ToolFormat
from specgen.serve.json_depth import too_deep


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: str  # a JSON object, as OpenAI sends it


def parse_calls(text: str, fmt: ToolFormat) -> tuple[str, list[ToolCall]]:
    """The reply's content (the text outside its calls) and its calls."""
    if not fmt.open:
        call = _call(text.strip().removeprefix(fmt.prefix), fmt)
        return ("", [call]) if call is not None else (text, [])
    opening, closing = fmt.open.strip(), fmt.close.strip()
    content, calls, rest = [], [], text
    while (start := rest.find(opening)) >= 0:
        end = rest.find(closing, start)
        block = rest[start + len(opening) : end if end >= 0 else len(rest)]
        call = _call(block, fmt)
        if call is None:  # not a call after all: it stays text
            content.append(rest[: start + len(opening)])
            rest = rest[start + len(opening) :]
            continue
        content.append(rest[:start])
        calls.append(call)
        rest = rest[end + len(closing) :] if end >= 0 else ""
    content.append(rest)
    return ("".join(content).strip() if calls else text), calls


def _call(text: str, fmt: ToolFormat) -> ToolCall | None:
    if too_deep(text):  # more than a call's arguments ever need: text, not a call
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return None
    arguments = value.get(fmt.arguments, value.get("arguments", {}))
    if isinstance(arguments, str):  # some models write the arguments as a JSON string already
        if too_deep(arguments):
            return None
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    if not isinstance(arguments, dict):
        return None
    return ToolCall(value["name"], json.dumps(arguments, ensure_ascii=False))


class CallStream:
    """Splits a streamed reply into content to send now and calls found at the end."""

    def __init__(self, fmt: ToolFormat):
        self.fmt = fmt
        self.held = ""  # text that may begin a call, or (once `calling`) the calls
        self.calling = False  # a call has begun: everything from there is held until the end
        self.plain = False  # a bare format's reply began as text: no call follows

    def feed(self, text: str) -> str:
        """The part of `text` that is certainly content."""
        held, self.held = self.held + text, ""
        if self.calling:
            self.held = held
            return ""
        if self.plain:
            return held
        return self._marked(held) if self.fmt.open else self._bare(held)

    def _marked(self, held: str) -> str:
        """Content up to the call's opening marker; the end that may begin one is held back."""
        marker = self.fmt.open.strip()
        at = held.find(marker)
        if at >= 0:
            self.calling, self.held = True, held[at:]
            return held[:at]
        keep = next((n for n in range(min(len(marker) - 1, len(held)), 0, -1) if marker.startswith(held[-n:])), 0)
        self.held = held[len(held) - keep :]
        return held[: len(held) - keep]

    def _bare(self, held: str) -> str:
        """A format without markers: the reply is a call if it begins like one."""
        start = held.lstrip()[: len(self.fmt.prefix) or 1]
        if not start:
            self.held = held
        elif start.startswith("{") or self.fmt.prefix.startswith(start):
            self.calling, self.held = True, held
        else:
            self.plain = True
            return held
        return ""

    def finish(self) -> tuple[str, list[ToolCall]]:
        """The content still held, and the calls, once the reply has ended."""
        held, self.held = self.held, ""
        return parse_calls(held, self.fmt) if self.calling else (held, [])
