"""A chat template's output kept as the template's own markup and the messages' text, so that
only the markup can become control tokens.

Tokenizing a whole templated prompt with llama.cpp's special-token parsing (as its server and
Hugging Face's `apply_chat_template` do) reads `<|im_end|>` inside a user message, a tool
result or an attached file as the real control token: text could close its own turn and open a
system turn or a tool call. So a template is rendered twice, once with the messages' texts and
once with a random mark in place of each text; the marks show where each text lies in the
rendering, and what lies between them is the template's markup. `encode` then cuts the prompt
at the control tokens found in the markup alone, as llama.cpp cuts a text at every control
token it finds (longest tokens first, whitespace stripped where a token asks for it), and
tokenizes what lies between the cuts as plain text. A prompt whose texts hold no control token
gets the very tokens it got before; one whose texts do gets their characters.

A template may write a text changed (trimmed, JSON-escaped); each text is matched as the
template wrote it. Where the two renderings cannot be lined up (a template that takes a text
apart), the marked rendering is used with each text as it was given: text stays text.
"""

from __future__ import annotations

import bisect
import json
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

STRUCTURAL = frozenset({"role", "type"})  # values a template branches on: never replaced by a mark


@dataclass(frozen=True)
class Templated:
    """A rendered chat: `parts` alternate markup and text (markup first and last, so an odd count);
    `owners[i]` is the message that text part i (parts[2 * i + 1]) came from."""

    parts: tuple[str, ...]
    owners: tuple[int, ...]

    @property
    def text(self) -> str:
        return "".join(self.parts)


@dataclass(frozen=True)
class Control:
    """A token that llama.cpp's special-token parsing cuts out of a text: its text (UTF-8), id, and
    whether it strips the whitespace on its left or right."""

    text: bytes
    token: int
    lstrip: bool
    rstrip: bool


@dataclass(frozen=True)
class Encoded:
    """A templated prompt's tokens, and where in its UTF-8 text each run of them ends (for
    counting the tokens that a stretch of the text took)."""

    tokens: list[int]
    ends: list[int]  # byte offset where run i ends
    counts: list[int]  # tokens up to and including run i

    def tokens_before(self, offset: int) -> int:
        """Tokens of the runs that end at or before byte `offset`."""
        index = bisect.bisect_right(self.ends, offset)
        return self.counts[index - 1] if index else 0


def marked(messages: list[Any], texts: dict[str, str], owners: dict[str, int]) -> list[Any]:
    """`messages` (dicts, lists, tuples of (role, content)) with each text (a non-empty string that
    is not a role or type) replaced by its mark; `texts` gets each mark's text, `owners` the message
    that holds it. In dicts, the same text gets the same mark, so a template that compares two
    texts (a property's name with `required`) still finds them equal; each (role, content) gets
    a mark of its own."""
    nonce = secrets.token_hex(8)
    by_text: dict[str, str] = {}
    message = 0

    def mark(text: str, own: bool = False) -> str:
        if not text:
            return text
        if own or text not in by_text:
            by_text[text] = f"\ue000{nonce}.{len(texts)}\ue001"
            texts[by_text[text]], owners[by_text[text]] = text, message
        return by_text[text]

    def walk(value: Any, key: str | None) -> Any:
        if isinstance(value, str):
            return value if key in STRUCTURAL else mark(value)
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):  # (role, content)
            return (value[0], mark(value[1], own=True))
        if isinstance(value, list):
            return [walk(item, key) for item in value]
        if isinstance(value, dict):
            keys_are_text = key in ("properties", "arguments")  # a schema's property names, a call's keys
            return {(mark(k) if keys_are_text and isinstance(k, str) else k): walk(v, k) for k, v in value.items()}
        return value

    out = []
    for message, value in enumerate(messages):  # noqa: B007 - `mark` reads `message`, the one being walked
        out.append(walk(value, None))
    return out


def split(render: Callable[[list[Any]], str], messages: list[Any]) -> Templated:
    """Render `messages` with `render` and tell the template's markup from the messages' texts."""
    texts: dict[str, str] = {}
    owners: dict[str, int] = {}
    masked = render(marked(messages, texts, owners))
    nonce = next(iter(texts))[1:17] if texts else "-"
    pieces = re.split(f"(\ue000{nonce}\\.[0-9]+\ue001)", masked)  # markup, mark, markup, ..., markup
    markup, marks = pieces[::2], pieces[1::2]
    given = [texts[mark] for mark in marks]
    written = _aligned(render(messages), markup, given)
    parts = [piece for pair in zip(markup, [*(written or given), ""], strict=True) for piece in pair][:-1]
    return Templated(tuple(parts), tuple(owners.get(mark, 0) for mark in marks))


def _aligned(real: str, markup: list[str], texts: list[str]) -> list[str] | None:
    """How the template wrote each text in `real` (as given, trimmed, JSON-escaped), with the
    markup between them as in the marked rendering; None where they do not line up."""
    if not real.startswith(markup[0]):
        return None
    at, written = len(markup[0]), []
    for text, after in zip(texts, markup[1:], strict=True):
        found = next(
            (form for form in _forms(text) if real.startswith(form, at) and real.startswith(after, at + len(form))),
            None,
        )
        if found is None:
            return None
        written.append(found)
        at += len(found) + len(after)
    return written if at == len(real) else None


def _forms(text: str) -> list[str]:
    """The ways a template writes a text: as is, trimmed (C's or Python's whitespace), JSON-escaped."""
    return [
        text,
        text.strip(" \t\n\r\x0b\x0c"),
        text.strip(),
        json.dumps(text, ensure_ascii=False)[1:-1],
        json.dumps(text)[1:-1],
    ]


def cuts(data: bytes, markup: list[tuple[int, int]], controls: list[Control]) -> list[tuple[int, int, Control]]:
    """Where llama.cpp's special-token parsing cuts control tokens out of `data`, with matches
    allowed only inside the byte ranges `markup`: longest tokens first, each token's matches left
    to right, none overlapping a cut made before. Returns (start, end, control) in text order."""
    found: list[tuple[int, int, Control]] = []
    taken: list[tuple[int, int]] = []  # sorted cut ranges
    for control in controls:
        for start, end in markup:
            at = data.find(control.text, start, end)
            while at >= 0:
                stop = at + len(control.text)
                index = bisect.bisect_right(taken, (at, stop))
                clear = (index == 0 or taken[index - 1][1] <= at) and (index == len(taken) or taken[index][0] >= stop)
                if clear:
                    taken.insert(index, (at, stop))
                    found.append((at, stop, control))
                at = data.find(control.text, stop if clear else at + 1, end)
    return sorted(found, key=lambda cut: cut[0])


def runs(data: bytes, found: list[tuple[int, int, Control]]) -> list[tuple[int, int, Control | None]]:
    """The prompt as runs of plain text (None) and control tokens, with whitespace next to a
    token that strips it left out, as llama.cpp leaves it out."""
    pieces: list[tuple[int, int, Control | None]] = []
    at = 0
    for index, (start, stop, control) in enumerate(found):
        end = start
        if control.lstrip:
            while end > at and data[end - 1 : end].isspace():
                end -= 1
        if end > at:
            pieces.append((at, end, None))
        pieces.append((start, stop, control))
        at = stop
        if control.rstrip:
            limit = found[index + 1][0] if index + 1 < len(found) else len(data)
            while at < limit and data[at : at + 1].isspace():
                at += 1
    if at < len(data):
        pieces.append((at, len(data), None))
    return pieces


def encode(templated: Templated, controls: list[Control], plain: Callable[[bytes], list[int]]) -> Encoded:
    """Tokens of a templated prompt: control tokens where its markup writes them, `plain`
    (llama.cpp's tokenizer without special-token parsing) for every run between them."""
    data, markup, at = b"", [], 0
    chunks = [part.encode("utf-8") for part in templated.parts]
    for index, chunk in enumerate(chunks):
        if index % 2 == 0 and chunk:
            markup.append((at, at + len(chunk)))
        at += len(chunk)
    data = b"".join(chunks)
    present = [c for c in controls if any(data.find(c.text, start, end) >= 0 for start, end in markup)]
    tokens: list[int] = []
    ends: list[int] = []
    counts: list[int] = []
    seen: dict[bytes, list[int]] = {}
    for start, stop, control in runs(data, cuts(data, markup, present)):
        if control is not None:
            tokens.append(control.token)
        else:
            text = data[start:stop]
            if text not in seen:
                seen[text] = plain(text)
            tokens.extend(seen[text])
        ends.append(stop)
        counts.append(len(tokens))
    return Encoded(tokens, ends, counts)
