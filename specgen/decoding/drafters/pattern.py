"""Drafting a reformat's next record from how the output rewrote the records before it.

In a reformat (CSV to JSON, `print` calls to a table, a list of objects to YAML) every record of
the source is rewritten the same way: its values are copied, and the punctuation around them is
the output's own. Token copies break two or three times a line there, because each value sits
between new punctuation, and because a value's tokens differ on the two sides (`,Desk` in the
CSV, ` "Desk` in the JSON). So the record pattern works on text.

The output is read word by word. A word found in the source at or after where the last value
ended (the nearest occurrence, a whole word) starts a *value*, which runs as far as source and
output agree and ends on a word character. Between two values the output wrote a *literal* and
the source had a *gap*. The pattern learnt: after literal L (the value's context), a value that
ends where the source reads gap G is followed by literal L'.

The prediction continues the output: copy the source from where the current value stands up to
the nearest gap that has followed the current context (on the same line), write the literal
that followed it, go on after the gap, and so on. A record's values come out in the source's
order with the output's punctuation around them.

One rule refines the context: a value's place in its line (`field_place`), so that fields the
same punctuation separates (` | `, a space) are told apart. It is the `place` argument; None
switches it off, and every value then has place 0.

The source's words are indexed once (word -> where it starts), so finding a value costs the same
at any length of source; the output is read once, a word at a time; the literals learnt are
bounded by `PATTERNS`. `PatternSource` is the copy source over it (`source.CopySource`): it
feeds the pattern the output's text as it is accepted and tokenizes its prediction; those tokens
are a copy like any other, one-hot drafts, so the output stays the target's whatever is predicted.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass

from specgen.decoding.drafters.base import Source, Vocabulary
from specgen.decoding.drafters.source import Offer
from specgen.decoding.drafters.suffix import Branch
from specgen.decoding.tokens import Utf8Stream, common_prefix

LITERAL_MAX = 120  # characters of a literal the pattern keeps
GAP_MAX = 80  # characters of a source gap
PATTERNS = 512  # (context, gap) -> literal entries kept per request
PLACE_MAX = 16  # a value's place in its line is counted up to this
PREDICTED_CHARS = 256  # characters of text a pattern offer predicts
_REACH = 400  # how far ahead in the source a gap is looked for
_TRIES = 16  # occurrences of a partial word looked at before giving up on it
_WINDOW = 4096  # how far past the cursor a value being written is looked for
_WORD = re.compile(r"(?<!\w)\w+")


def field_place(place: int, literal: str) -> int:
    """The place in its line of the value after `literal`, the value before it being at `place`:
    the first (0) after a newline, else the next."""
    return 0 if "\n" in literal else min(place + 1, PLACE_MAX)


@dataclass(frozen=True)
class Context:
    """What a value follows: the literal before it, and its place in its line."""

    literal: str
    place: int = 0


@dataclass(frozen=True)
class Value:
    """Output characters start..end, copied from the source at `source_start`; at `place` in
    its output line."""

    start: int
    end: int
    source_start: int
    place: int

    @property
    def source_end(self) -> int:
        return self.source_start + self.end - self.start


@dataclass(frozen=True)
class OpenValue:
    """A value still open at the output's end: where it starts in the output and the source, and
    how many characters the two agree on so far."""

    start: int
    source_start: int
    length: int


@dataclass(frozen=True)
class Where:
    """Where the output stands: the source position of the next value (or of the current one,
    while a value is being written), its context, and what is left to write of a literal the
    output has begun."""

    position: int
    context: Context
    rest: str = ""


@dataclass(frozen=True)
class Step:
    """One value of a prediction, the literal after it, and the source position after its gap."""

    value: str
    literal: str
    position: int


class RecordPattern:
    """The source text, the output text read so far, its values and the literals between them."""

    def __init__(self, source: str = "", place: Callable[[int, str], int] | None = field_place):
        self.source, self.place = source, place
        self._words: dict[str, list[int]] = {}  # where each whole word of the source starts
        for word in _WORD.finditer(source):
            self._words.setdefault(word.group(), []).append(word.start())
        self.output = ""
        self.values: list[Value] = []  # the last three read
        # after a context, each gap seen (in the order first seen) and the literal that followed it
        self.patterns: dict[Context, dict[str, str]] = {}
        self._size = 0  # entries in `patterns`
        self._read = 0  # output characters read into values
        self._cursor = 0  # source position after the last value
        self._open: OpenValue | None = None

    def extend(self, text: str) -> None:
        self.output += text
        self._scan()

    def predict(self, limit: int) -> str:
        """Up to `limit` characters that continue the output by the pattern ("" if none)."""
        where = self._position()
        if where is None:
            return ""
        text, size, context, position = [where.rest], len(where.rest), where.context, where.position
        while size < limit:
            step = self._next(context, position)
            if step is None:
                break
            text += [step.value, step.literal]
            size += len(step.value) + len(step.literal)
            context, position = self._after(context, step.literal), step.position
        return "".join(text)[:limit]

    def _after(self, context: Context, literal: str) -> Context:
        """The context of the value that follows `literal`, written after a value in `context`."""
        return Context(literal, self.place(context.place, literal) if self.place else 0)

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
            length = _agreement(output, word.start(), self.source, start, self._known(word.start(), start))
            if word.start() + length == len(output):  # it may run on: read it again with more output
                self._read, self._open = word.start(), OpenValue(word.start(), start, length)
                return
            while not _wordy(output[word.start() + length - 1]):
                length -= 1
            self._add(Value(word.start(), word.start() + length, start, self._place_at(word.start())))

    def _known(self, start: int, source_start: int) -> int:
        """How many characters of a value at `start` in the output and `source_start` in the
        source are known to agree (it was open at the output's end before)."""
        found = self._open
        return found.length if found is not None and (found.start, found.source_start) == (start, source_start) else 0

    def _place_at(self, start: int) -> int:
        """The place in its line of a value that starts at `start` in the output."""
        if not self.values:
            return 0
        last = self.values[-1]
        return self._after(Context("", last.place), self.output[last.end : start]).place

    def _add(self, value: Value) -> None:
        """Keep a value and learn the literal that led to it."""
        self.values.append(value)
        del self.values[:-3]  # the pattern and the prediction look at the last three
        self._read, self._cursor = value.end, value.source_end
        if len(self.values) < 3:
            return
        before, last = self.values[-3], self.values[-2]
        literal = self.output[before.end : last.start]
        gap = self.source[last.source_end : value.source_start]
        following = self.output[last.end : value.start]
        if not gap or len(gap) > GAP_MAX or max(len(literal), len(following)) > LITERAL_MAX:
            return
        gaps = self.patterns.setdefault(Context(literal, last.place), {})
        if gap not in gaps:
            if self._size >= PATTERNS:
                return
            self._size += 1
        gaps[gap] = following

    def _find(self, word: str, start: int) -> int:
        """The nearest occurrence of `word` in the source at or after `start`, as a whole word."""
        starts = self._words.get(word, ())
        at = bisect_left(starts, start)
        return starts[at] if at < len(starts) else -1

    # -- predicting ---------------------------------------------------------------------------

    def _position(self) -> Where | None:
        """Where the output stands. Text that begins a literal seen here before is read as that
        literal, else as a new value."""
        if len(self.values) < 2:
            return None
        last, before = self.values[-1], self.values[-2]
        context = Context(self.output[before.end : last.start], last.place)
        finished = self._finish(context, self.output[last.end :], last.source_end)
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
        context, written = Context(self.output[last.end : self._read], self._place_at(self._read)), tail[size:]
        finished = self._finish(context, written, at + size) if written else None
        return finished if finished is not None else Where(at + len(tail), context)

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

    def _finish(self, context: Context, written: str, position: int) -> Where | None:
        """Where the literal that follows `context` here and begins with `written` leads."""
        for gap, literal in self.patterns.get(context, {}).items():
            if self.source.startswith(gap, position) and literal.startswith(written):
                return Where(position + len(gap), self._after(context, literal), literal[len(written) :])
        return None

    def _next(self, context: Context, position: int) -> Step | None:
        """The value from `position` to the nearest gap seen after `context` on the same line,
        and the literal that followed that gap."""
        gaps = self.patterns.get(context, {})
        nearest, gap, end = -1, "", position + _REACH
        for seen in gaps:
            at = self.source.find(seen, position, end)
            if at >= 0 and (nearest < 0 or at < nearest):
                nearest, gap, end = at, seen, at + len(seen)
        if nearest < 0:
            return None
        value = self.source[position:nearest]
        if "\n" in value:  # values are read within a line: this gap belongs to a later record
            return None
        return Step(value, gaps[gap], nearest + len(gap))


def _agreement(output: str, start: int, source: str, source_start: int, known: int) -> int:
    """How many characters from `start` in the output equal those from `source_start` in the
    source (the first `known` of them are known to)."""
    length, limit, chunk = known, min(len(output) - start, len(source) - source_start), 64
    while (
        length + chunk <= limit
        and output[start + length : start + length + chunk]
        == source[source_start + length : source_start + length + chunk]
    ):
        length += chunk
    while length < limit and output[start + length] == source[source_start + length]:
        length += 1
    return length


def _wordy(char: str) -> bool:
    return char.isalnum() or char == "_"


class PatternSource:
    """A copy source read from the output's record pattern: this request's `RecordPattern` over the
    prompt's text, fed the output's text as it is accepted, and its run, how many tokens the
    output has followed its offers for in a row (the match its offers are priced by, like a copy's)."""

    name = Source.PATTERN
    leads = False

    def __init__(self, vocabulary: Vocabulary):
        self.vocabulary = vocabulary
        self.prepare([])

    def prepare(self, prefix: list[int]) -> None:
        """A request starts after `prefix` (the prompt but its last token): its text is the source."""
        self.stream, self.read = Utf8Stream(), len(prefix)
        self.pattern = RecordPattern(self._text(prefix))
        self.run = 0
        self._last: tuple[int, list[int]] = (0, [])  # where the last offer was made, its tokens

    def _text(self, tokens: list[int]) -> str:
        return self.stream.feed(b"".join(self.vocabulary.piece(t) for t in tokens))

    def offer(self, history: list[int], last: int, k: int) -> Offer:
        """What the pattern predicts after history + [last] (the prompt, then the accepted output)."""
        length = len(history) + 1  # history + [last], not built: the prompt may be long
        if length < self.read:
            return Offer([])
        self._score(history, last)
        self.pattern.extend(self._text(_after(history, last, self.read)))
        self.read = length
        text = self.pattern.predict(PREDICTED_CHARS) if not self.stream.pending else ""
        predicted = self.vocabulary.tokenize(text)[:k] if text else []
        self._last = (length, predicted)
        if not predicted:
            return Offer([])
        # no place in a source: priced by the run
        return Offer(predicted, Branch(-1, -1, max(self.run, 1)), source=self.name)

    def _score(self, history: list[int], last: int) -> None:
        """The run grows by what the output followed of the last offer (history + [last] after
        where it was made), and ends where it did not."""
        at, predicted = self._last
        if not predicted:  # no offer, no evidence
            return
        emitted = _after(history, last, at)
        if common_prefix(emitted, predicted) < min(len(emitted), len(predicted)):
            self.run = 0
        else:
            self.run += len(emitted)


def _after(history: list[int], last: int, start: int) -> list[int]:
    """history + [last] from `start` on, without building the whole of it."""
    return [*history[start:], last] if start <= len(history) else []
