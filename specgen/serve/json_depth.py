"""How deep a JSON text nests, found before it is parsed.

Python's parser recurses once per level: `"[" * 100000` raises RecursionError, and a value a
little less deep parses but then stalls or breaks whatever walks it next (a chat template, a
schema converter). A text's depth is read here without parsing it, by the brackets left once
its strings are taken out (all in C: a regular expression, then a running sum), so a body, the
arguments of an earlier tool call or a call the model wrote can be refused before the parser
sees them.
"""

from __future__ import annotations

import re
from itertools import accumulate

MAX_DEPTH = 100  # levels of arrays and objects in a request body or a tool call's arguments

_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_STRINGS_BYTES = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")
_BRACKETS_BYTES = re.compile(rb"[\[\]{}]")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1, b"[": 1, b"{": 1, b"]": -1, b"}": -1}


def depth(text: str | bytes | bytearray) -> int:
    """The deepest nesting of arrays and objects in `text`, outside its strings (for a text that
    is not JSON, a number that may be too high: only its brackets are counted)."""
    if isinstance(text, (bytes, bytearray)):
        brackets = _BRACKETS_BYTES.findall(_STRINGS_BYTES.sub(b"", text))
    else:
        brackets = _BRACKETS.findall(_STRINGS.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def too_deep(text: str | bytes | bytearray) -> bool:
    return depth(text) > MAX_DEPTH
