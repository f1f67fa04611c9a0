"""Drafting a reformat's next record from how the output rewrote the records before it.

In a reformat (CSV to JSON, `print` calls to a table, a list of objects to YAML) every record of
the source is rewritten the same way: its values are copied, and the punctuation around them is
the output's own pattern. Copying tokens breaks two or three times a line there, because each
value sits between new punctuation, and because a value's tokens differ on the two sides (`,Desk`
in the CSV, ` "Desk` in the JSON). So this works on text.

The output is read word by word. A word found in the source at or after where the last copied
value ended (the nearest occurrence, at word boundaries both sides) starts a *value*, which runs
as far as source and output agree and ends on a word character. Between two values the output
wrote a *literal* and the source had a *gap*. The pattern learnt is: after literal L, the i-th
value of its line, ending where the source reads gap G, is followed by literal L'; written
`((L, i), G, shape) -> L'`, where the shape of the value after the gap (a number, a keyword such
as `true`, other text) tells how it is written (TOML quotes text, not numbers), and i tells the
fields of a line apart where the same punctuation separates them.

The prediction continues the output: copy the source from where the current value stands up to
the nearest gap that has followed the current context before, write the literal that followed
it, go on after the gap, and so on. A record's values come out in the source's order with the
output's punctuation around them. An aligned table pads each value with spaces to its column:
a literal whose text began at the same column after values of other lengths is written padded
to that column, and contexts ignore a literal's leading spaces. The caller tokenizes the text (`Vocabulary`); its tokens are a
copy like any other: one-hot drafts, so the output stays the target's whatever is predicted.

The source's words are indexed once (word -> where it starts), so finding a value costs the same
at any length of source; the output is read once, a word at a time; the patterns are bounded by
`PATTERNS`. Pure Python: no llama.cpp.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass

LITERAL_MAX = 120  # characters of a literal the pattern keeps
GAP_MAX = 80  # characters of a source gap
PATTERNS = 512  # (context, gap, shape) -> literal entries kept per request
_INDEX_MAX = 16  # a value's place in its line is counted up to this
_REACH = 400  # how far ahead in the source a gap is looked for
_TRIES = 16  # occurrences of a partial word looked at before giving up on it
_WINDOW = 4096  # how far past the cursor a value being written is looked for
_WORD = re.compile(r"(?<!\w)\w+")
_RUN = re.compile(r"[^\s,;:()\[\]{}<>|=\"'`]*")  # a value's first run of characters
_NUMBER = re.compile(r"[-+]?\d[\d_]*(?:\.\d+)?(?:[eE][-+]?\d+)?")
_KEYWORDS = frozenset({"true", "false", "null", "none", "nil", "yes", "no", "on", "off"})


@dataclass(frozen=True)
class Vocabulary:
    """The target's tokens as text and text as tokens (no special tokens either way)."""

    piece: Callable[[int], bytes]
    tokenize: Callable[[str], list[int]]


Context = tuple[str, int]  # the literal before a value, and the value's place in its line


@dataclass(frozen=True)
class _Literal:
    """A literal as the output last wrote it, the column of its line where its text after the
    leading spaces began, and whether those spaces pad the line to that column (an aligned
    table: the same text began at the same column after values of other lengths)."""

    text: str
    column: int
    padded: bool = False

    def at(self, column: int) -> str:
        """The literal written from `column` of its line."""
        if not self.padded:
            return self.text
        return " " * max(self.column - column, 1) + self.text.lstrip(" ")


@dataclass(frozen=True)
class _Value:
    """Output characters start..end, copied from the source at `source_start`; the `index`-th
    value of its output line."""

    start: int
    end: int
    source_start: int
    index: int

    @property
    def source_end(self) -> int:
        return self.source_start + self.end - self.start


class Template:
    """The source text, the output text read so far, its values and the pattern between them."""

    def __init__(self, source: str = ""):
        self.source = source
        self._words: dict[str, list[int]] = {}  # where each whole word of the source starts
        for word in _WORD.finditer(source):
            self._words.setdefault(word.group(), []).append(word.start())
        self.output = ""
        self.values: list[_Value] = []  # the last three read
        # the literal that followed, by (context, gap, shape of the next value), and by (gap,
        # shape) for what that has not seen
        self.patterns: dict[tuple[Context, str, str], _Literal] = {}
        self.by_gap: dict[tuple[str, str], _Literal] = {}
        self.gaps: dict[Context, dict[str, None]] = {}  # the gaps seen after a context, in order
        self._read = 0  # output characters read into values
        self._cursor = 0  # source position after the last value
        self._agreed = (-1, -1, 0)  # a value still open at the output's end: its starts, its length so far

    def extend(self, text: str) -> None:
        self.output += text
        self._scan()

    def predict(self, limit: int) -> str:
        """Up to `limit` characters that continue the output by the pattern ("" if none)."""
        where = self._position()
        if where is None:
            return ""
        position, context, rest = where
        text, size, column = [rest], len(rest), _column(rest, len(rest), _column(self.output, len(self.output)))
        while size < limit:
            step = self._next(context, position, column)
            if step is None:
                break
            value, literal, position = step
            context, column = _after(context, literal), _column(value + literal, len(value + literal), column)
            text += [value, literal]
            size += len(value) + len(literal)
        return "".join(text)[:limit]

    # -- reading the output -------------------------------------------------------------------

    def _scan(self) -> None:
        """Read values from the output until a word or value reaches its end (it may grow)."""
        output = self.output
        while True:
            word = _WORD.search(output, self._read)
            if word is None or word.end() == len(output):
                self._read = word.start() if word else len(output)
                return
            start = self._find(word.group(), self._cursor)
            if start < 0:
                self._read = word.end()
                continue
            agreed = self._agreed[2] if self._agreed[:2] == (word.start(), start) else 0
            length = _agreement(output, word.start(), self.source, start, agreed)
            if word.start() + length == len(output):  # it may run on: read it again with more output
                self._read, self._agreed = word.start(), (word.start(), start, length)
                return
            while not _wordy(output[word.start() + length - 1]):
                length -= 1
            self._add(_Value(word.start(), word.start() + length, start, self._index_at(word.start())))

    def _index_at(self, start: int) -> int:
        """The place in its line of a value that starts at `start` in the output."""
        if not self.values:
            return 0
        last = self.values[-1]
        return _after(("", last.index), self.output[last.end : start])[1]

    def _add(self, value: _Value) -> None:
        """Keep a value and learn the pattern that led to it."""
        self.values.append(value)
        del self.values[:-3]  # the pattern and the prediction look at the last three
        self._read, self._cursor = value.end, value.source_end
        if len(self.values) < 3:
            return
        before, last = self.values[-3], self.values[-2]
        literal = self.output[before.end : last.start]
        gap = self.source[last.source_end : value.source_start]
        following = self.output[last.end : value.start]
        if gap and len(gap) <= GAP_MAX and len(literal) <= LITERAL_MAX and len(following) <= LITERAL_MAX:
            context, shape = (literal.lstrip(" "), last.index), _shape(self.source, value.source_start)
            key = (context, gap, shape)
            if key not in self.patterns and len(self.patterns) >= PATTERNS:
                return
            self.patterns[key] = self.by_gap[(gap, shape)] = self._observed(self.patterns.get(key), last.end, following)
            self.gaps.setdefault(context, {})[gap] = None

    def _observed(self, seen: _Literal | None, start: int, text: str) -> _Literal:
        """The literal `text` written at `start` of the output, given the one `seen` before in
        the same place of the pattern."""
        core = text.lstrip(" ")
        column = _column(self.output, start + len(text) - len(core))
        padded = seen is not None and seen.column == column and seen.text.lstrip(" ") == core and \
            (seen.padded or seen.text != text)
        return _Literal(text, column, padded)

    def _following(self, context: Context, gap: str, position: int, column: int) -> str:
        """The literal that follows `context`, written from `column`, where the source has `gap`
        before `position`: by the most context that has been seen; where this shape of value
        never followed the gap, the gap as the source has it (what the output does where it
        does not rewrite)."""
        shape = _shape(self.source, position)
        found = self.patterns.get((context, gap, shape))
        if found is None:
            found = self.by_gap.get((gap, shape))
        return gap if found is None else found.at(column)

    def _find(self, word: str, start: int) -> int:
        """The nearest occurrence of `word` in the source at or after `start`, as a whole word."""
        starts = self._words.get(word, ())
        at = bisect_left(starts, start)
        return starts[at] if at < len(starts) else -1

    # -- predicting ---------------------------------------------------------------------------

    def _position(self) -> tuple[int, Context, str] | None:
        """Where the output stands: the source position of the next value (or of the current
        one, where a value is being written), its context, and what is left to write of a
        literal the output has begun ("" inside a value). Text that begins a literal seen here
        before is read as that literal, else as a new value."""
        if len(self.values) < 2:
            return None
        last, before = self.values[-1], self.values[-2]
        context, written = (self.output[before.end : last.start].lstrip(" "), last.index), self.output[last.end :]
        finished = self._finish(context, written, last.source_end)
        if finished is not None:
            return finished
        tail = self.output[self._read :]
        size = len(tail)
        while size and not _wordy(tail[size - 1]):
            size -= 1
        if not size or not _wordy(tail[0]):
            return None
        at = self._prefix_at(tail)  # a value is being written, or was just
        if at < 0:
            return None
        literal, written = self.output[last.end : self._read], tail[size:]
        context = (literal.lstrip(" "), self._index_at(self._read))
        finished = self._finish(context, written, at + size) if written else None
        return finished if finished is not None else (at + len(tail), context, "")

    def _prefix_at(self, tail: str) -> int:
        """The nearest place within `_WINDOW` after the cursor where the source starts a word
        with `tail` (among the first `_TRIES` occurrences)."""
        source, end = self.source, self._cursor + _WINDOW
        at = source.find(tail, self._cursor, end)
        for _ in range(_TRIES):
            if at <= 0 or not _wordy(source[at - 1]):
                return at
            at = source.find(tail, at + 1, end)
        return -1

    def _finish(self, context: Context, written: str, position: int) -> tuple[int, Context, str] | None:
        """Where the literal that follows `context` here and begins with `written` leads: the
        source position after its gap, the context after it, and what is left of it to write."""
        column = _column(self.output, len(self.output) - len(written))
        for gap in self.gaps.get(context, ()):
            if self.source.startswith(gap, position):
                following = self._following(context, gap, position + len(gap), column)
                if following.startswith(written):
                    return position + len(gap), _after(context, following), following[len(written) :]
        return None

    def _next(self, context: Context, position: int, column: int) -> tuple[str, str, int] | None:
        """The value from `position` (written from `column`) to the nearest gap seen after
        `context` on the same line, the literal that follows, and the source position after the gap."""
        best: tuple[int, str] | None = None
        end = position + _REACH
        for gap in self.gaps.get(context, ()):
            at = self.source.find(gap, position, end)
            if at >= 0 and (best is None or at < best[0]):
                best, end = (at, gap), at + len(gap)
        if best is None:
            return None
        at, gap = best
        value = self.source[position:at]
        if "\n" in value:  # values are read within a line: this gap belongs to a later record
            return None
        following = self._following(context, gap, at + len(gap), _column(value, len(value), column))
        return value, following, at + len(gap)


def _agreement(output: str, start: int, source: str, source_start: int, known: int) -> int:
    """How many characters from `start` in the output equal those from `source_start` in the
    source (the first `known` of them are known to)."""
    length, limit, chunk = known, min(len(output) - start, len(source) - source_start), 64
    while length + chunk <= limit and output[start + length : start + length + chunk] == \
            source[source_start + length : source_start + length + chunk]:
        length += chunk
    while length < limit and output[start + length] == source[source_start + length]:
        length += 1
    return length


def _column(text: str, end: int, column: int = 0) -> int:
    """The column of its line that `end` of `text` is at, `text` beginning at `column`."""
    newline = text.rfind("\n", 0, end)
    return end - newline - 1 if newline >= 0 else column + end


def _after(context: Context, literal: str) -> Context:
    """The context of the value that follows `literal`: the first of a line after a newline."""
    return literal.lstrip(" "), 0 if "\n" in literal else min(context[1] + 1, _INDEX_MAX)


def _shape(source: str, at: int) -> str:
    """What kind of value starts at `at`: a number, a keyword (true, null...) or other text."""
    run = _RUN.match(source, at).group().rstrip(".")  # a number may end a sentence
    if _NUMBER.fullmatch(run):
        return "number"
    return "keyword" if run.lower() in _KEYWORDS else "text"


def _wordy(char: str) -> bool:
    return char.isalnum() or char == "_"
