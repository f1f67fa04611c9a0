"""The rules that refine the record pattern's core (`pattern.RecordPattern`), one at a time.

The core learns *after literal L, a value that ends where the source reads gap G is followed
by literal L'*. Each rule here refines one part of that, through one field of `Rules`, so that
a rule is switched off in one place (its field set to None or False) and the core then does
what it does alone:

* `field_place`: a value's place in its line is part of its context, so fields that the same
  punctuation separates (` | `, a space) are told apart. Alone, every value has place 0.
* `without_leading_spaces`: a context ignores its literal's leading spaces, so a padded cell
  (`|` after `Lisbon     `) and an unpadded one are the same context. Alone, a literal keys
  its context as written.
* `ValueShape`: the shape of the value after the gap (a number, a keyword such as `true`,
  other text) is part of the key, because TOML and YAML quote text and leave numbers bare.
  Alone, every value has the same shape.
* `column_padding`: a literal whose text began at the same column after values of different
  lengths is written padded to that column (an aligned table). Alone, a literal is written as
  the output last wrote it.
* `gap_fallback`: where a value of this shape never followed the gap in this context, the
  literal that followed the gap before a value of this shape in any context. Alone (and
  where that too was never seen), the gap as the source has it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

PLACE_MAX = 16  # a value's place in its line is counted up to this
KEYWORDS = frozenset({"true", "false", "null", "none", "nil", "yes", "no", "on", "off"})
_RUN = re.compile(r"[^\s,;:()\[\]{}<>|=\"'`]*")  # a value's first run of characters
_NUMBER = re.compile(r"[-+]?\d[\d_]*(?:\.\d+)?(?:[eE][-+]?\d+)?")


@dataclass(frozen=True)
class Context:
    """What a value follows: the literal before it (as the rules key it), and its place in its
    line."""

    literal: str
    place: int = 0


@dataclass(frozen=True)
class Key:
    """Where a literal was learnt: after a value in `context` (None: any context), where the
    source reads `gap` before a value of `shape`."""

    context: Context | None
    gap: str
    shape: str = ""


@dataclass(frozen=True)
class Literal:
    """A literal as the output last wrote it; with `padded`, its text after the leading spaces
    began at `column` of its line, whatever the length of the value before."""

    text: str
    column: int = 0
    padded: bool = False

    def at(self, column: int) -> str:
        """The literal written from `column` of its line."""
        if not self.padded:
            return self.text
        return " " * max(self.column - column, 1) + self.text.lstrip(" ")


def field_place(place: int, literal: str) -> int:
    """The place in its line of the value after `literal`, the value before it being at `place`:
    the first (0) after a newline, else the next."""
    return 0 if "\n" in literal else min(place + 1, PLACE_MAX)


def without_leading_spaces(literal: str) -> str:
    """A literal as a context keys it: without the spaces that pad it."""
    return literal.lstrip(" ")


@dataclass(frozen=True)
class ValueShape:
    """What kind of value starts at a place of the source: "number", "keyword" (one of
    `keywords`, any case) or "text". With `sentence_end`, a number followed by a full stop is
    a number (`... was 1940.`)."""

    keywords: frozenset[str] = KEYWORDS
    sentence_end: bool = True

    def __call__(self, source: str, at: int) -> str:
        run = _RUN.match(source, at).group()
        if self.sentence_end:
            run = run.rstrip(".")
        if _NUMBER.fullmatch(run):
            return "number"
        return "keyword" if run.lower() in self.keywords else "text"


def column_padding(seen: Literal | None, text: str, column: int) -> Literal:
    """The literal `text`, whose text after its leading spaces begins at `column`, learnt where
    `seen` was learnt before: padded where both began their text at the same column and one of
    them had other leading spaces (or `seen` was padded already)."""
    core = text.lstrip(" ")
    padded = seen is not None and seen.column == column and seen.text.lstrip(" ") == core and \
        (seen.padded or seen.text != text)
    return Literal(text, column, padded)


@dataclass(frozen=True)
class Rules:
    """The rules the core consults; None (False) switches one off."""

    place: Callable[[int, str], int] | None = field_place
    context_key: Callable[[str], str] | None = without_leading_spaces
    shape: Callable[[str, int], str] | None = ValueShape()
    padding: Callable[[Literal | None, str, int], Literal] | None = column_padding
    gap_fallback: bool = True


RULES = Rules()
CORE = Rules(place=None, context_key=None, shape=None, padding=None, gap_fallback=False)
