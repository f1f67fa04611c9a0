"""Copies aligned by a JSON reply's structure: the next record's keys from the last record's.

A reply that lists records in JSON repeats its keys and punctuation and changes its values. A
copy of the text breaks at each new value, and after it the text's own match is only the few
tokens that close the value (`",`), which end every string value alike, so the copy that
follows is priced as a guess. Read with every value taken as one symbol, the reply is a
sequence of keys and punctuation that the next record repeats exactly: matched there, the
place in an earlier record is found past any number of changed values, with the match that
proves it (`"name": V, "title": V,` before ` "days"`).

`JsonShape` reads the reply's text as it grows and tells, of each token, whether it lies wholly
inside a value (a string's characters, a number, true/false/null). `StructureSource` keeps the
reply's skeleton, each token its own symbol but a run of tokens inside one value a single
`VALUE`, in a `SuffixIndex`, and offers the reply's own tokens from after the longest earlier
match of the skeleton, with that match as the offer's evidence. It offers nothing inside a
value, where the text's own copy is the better guess, nor outside the JSON. The first record has
no record before it, so where the reply has a schema the skeleton starts with an example document
of it (`llama.grammar.schema_example`), whose keys and punctuation, never its placeholder values,
are offered. Pure Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specgen.decoding.drafters.base import Source, Vocabulary
from specgen.decoding.drafters.source import Offer
from specgen.decoding.drafters.suffix import Branch, SuffixIndex
from specgen.decoding.tokens import Utf8Stream, token_at

VALUE = 1 << 30  # the skeleton's symbol for a run of tokens inside one value; never a token id
_BARE = frozenset("0123456789+-.eEtrufalsn")  # the characters of numbers and true/false/null


@dataclass(frozen=True)
class Role:
    """What a token of a JSON reply holds: whether every character of it lies inside one value
    (`inside`), and of the last value it holds characters of (None: it holds none, only keys and
    punctuation) the key (the array's key for an array's elements; "" at the top) and whether
    that value begins in this token (`first`)."""

    inside: bool = False
    key: str | None = None
    first: bool = False


class JsonShape:
    """Where a text stands in JSON, read a character at a time: inside a string (a key's or a
    value's), inside a bare value (a number, true/false/null), or between them, and under which
    key. Text before the first `{` or `[` and after the outermost one closes is read as
    structure (prose around a tool call)."""

    def __init__(self) -> None:
        self.containers: list[str] = []  # open "{" and "[", innermost last
        self.keys: list[str] = []  # each open container's key: an object's last, an array's parent's
        self.in_string = self.is_key = self.escaped = self.in_bare = False
        self._expect_key = False  # in an object, after "{" or ","
        self._key_chars: list[str] = []
        self._seen = False  # whether the value being read has shown a character yet

    def feed(self, text: str) -> Role:
        """Read `text` (a token's); what it holds."""
        inside, key, first = bool(text), None, False
        for char in text:
            if self._read(char):
                key, first = self.keys[-1], first or not self._seen
                self._seen = True
            else:
                inside = False
        return Role(inside, key, first)

    def _read(self, char: str) -> bool:
        """Read one character; whether it is part of a value."""
        if self.in_string:
            return self._read_string(char)
        if self.in_bare:
            if char in _BARE:
                return True
            self.in_bare = False
        if not self.containers:
            if char in "{[":
                self._open(char)
            return False
        if char == '"':
            self.in_string, self.is_key = True, self._expect_key
            self._key_chars, self._seen = [], False
            return False
        if char in "{[":
            self._open(char)
        elif char in "}]":
            self.containers.pop()
            self.keys.pop()
            self._expect_key = False
        elif char == ",":
            self._expect_key = self.containers[-1] == "{"
        elif char == ":":
            self._expect_key = False
        elif char in _BARE:
            self.in_bare, self._seen = True, False
            return True
        return False

    def _read_string(self, char: str) -> bool:
        if self.escaped:
            self.escaped = False
        elif char == "\\":
            self.escaped = True
        elif char == '"':
            self.in_string = False
            if self.is_key:
                self.keys[-1] = "".join(self._key_chars)
            return False
        if self.is_key:
            self._key_chars.append(char)
        return not self.is_key

    def _open(self, char: str) -> None:
        self.keys.append("" if char == "{" or not self.keys else self.keys[-1])
        self.containers.append(char)
        self._expect_key = char == "{"


class StructureSource:
    """A copy source aligned by the reply's JSON skeleton (`source.CopySource`): fed the reply's
    tokens as they are accepted, it offers what followed the longest earlier match of the
    skeleton's end."""

    name = Source.STRUCTURE
    leads = False

    def __init__(self, vocabulary: Vocabulary, start: int = 0, example: Sequence[int] = ()):
        """`start`: where the reply begins in the histories `offer` is given (`prepare` sets it
        for each request); `example`: the tokens of a document of the reply's shape
        (`grammar.schema_example`), whose keys and punctuation are offered until the reply has
        records of its own to align with."""
        self.vocabulary, self.start, self.example = vocabulary, start, list(example)
        self._reset()

    def prepare(self, prefix: list[int]) -> None:
        """A reply starts after `prefix` (the prompt but its last token)."""
        self.start = len(prefix) + 1
        self._reset()

    def _reset(self) -> None:
        self.shape, self.stream = JsonShape(), Utf8Stream()
        self.tokens: list[int] = []  # the example's tokens, then the reply's so far
        self.skeleton = SuffixIndex()
        self.roles: list[Role] = []  # of each token held
        self.ends: list[int] = []  # skeleton symbol i ends before token ends[i]
        for token in self.example:
            self._add(token)
        self.shape, self.stream = JsonShape(), Utf8Stream()  # the reply is read from its start

    def offer(self, history: list[int], last: int, k: int) -> Offer:
        """Up to k tokens after history + [last] (the prompt, then the accepted reply) by the
        skeleton's longest earlier match; nothing inside a value or without a match. Reading the
        new tokens costs O(new tokens), as the copier's does."""
        size, held = len(history) + 1, len(self.tokens) - len(self.example)
        if size < self.start + held or (held and token_at(history, last, self.start + held - 1) != self.tokens[-1]):
            self._reset()  # not a continuation of the reply held (a rewound history)
            held = 0
        for i in range(self.start + held, size):
            self._add(token_at(history, last, i))
        if not self.shape.containers or self.roles[-1].inside or self.stream.pending:
            return Offer([])
        branches = self.skeleton.find(self.skeleton)
        if not branches or branches[0].position == 0:
            return Offer([])
        branch = branches[0]
        at = self.ends[branch.position - 1]
        copy = self.tokens[at : min(at + k, self._copyable(at))]
        if not copy:
            return Offer([])
        return Offer(
            copy,
            Branch(0, at, branch.match, agreeing=branch.agreeing, occurrences=branch.occurrences),
            roles=tuple(self.roles[at : at + len(copy)]),
            source=self.name,
        )

    def _copyable(self, at: int) -> int:
        """Where a copy from `at` must end: the reply's end, or in the example, before its
        first token holding a value's characters (a placeholder) or at the example's end."""
        if at >= len(self.example):
            return len(self.tokens)
        return next((i for i in range(at, len(self.example)) if self.roles[i].key is not None), len(self.example))

    def _add(self, token: int) -> None:
        role = self.shape.feed(self.stream.feed(self.vocabulary.piece(token)))
        self.tokens.append(token)
        if role.inside and self.roles and self.roles[-1].inside:  # the value goes on: its symbol ends here
            self.ends[-1] = len(self.tokens)
        else:
            self.skeleton.extend((VALUE if role.inside else token,))
            self.ends.append(len(self.tokens))
        self.roles.append(role)
