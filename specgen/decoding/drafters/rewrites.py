"""Edits learnt from the output, applied to later copies: a rename costs one broken copy, not one
per occurrence.

An edit that renames `bal` to `balance` reprints its input with the same change at every
occurrence. A plain copy breaks at each one, and copying only resumes once a few tokens of the
output match the source again. When a copy broke and the output then rejoined the same source a
few tokens further on, the source span it skipped and the tokens it wrote instead form a rule
(old span -> new span). Later copies that pass the old span carry the new one instead. A rule
that the output did not follow at an occurrence is scored down and stops being applied once it
has missed as often as it hit, so a one-off fix does not spoil every later copy of its span; a
change the output had already left undone elsewhere starts with those misses. Copied tokens
stay one-hot drafts, so exactness does not depend on a rule being right.

A renamed name is tokenized with what stands before it: `tmo` after a space, a tab, a bracket
or a dot is four different pairs of tokens, and `timeout` merges with them differently again. So
where the target's `Vocabulary` is given, a rule that changes one whole word for another is also
kept as a word rule (`tmo` -> `timeout`), and a copy that passes the old word, whole, in a
context no rule has seen yet gets a token rule made for that context: the tokens that hold the
word, spelt again with the new word. A word rule stops making rules once the rules it made have
missed as often as they hit. Pure Python.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate

from specgen.decoding.drafters.base import Vocabulary

SPAN_MAX = 8  # longest old or new span a rule holds
RULES_MAX = 256  # rules kept per request; the oldest go first
WORD = re.compile(rb"\w+")  # a name: letters, digits, underscores (ASCII)


@dataclass(frozen=True)
class Rewritten:
    """A copy of source tokens from `position` on, after the rules: its tokens, and the
    replacements made, as (start, end, old span) in `tokens`."""

    tokens: list[int]
    position: int
    replaced: tuple[tuple[int, int, tuple[int, ...]], ...] = ()

    def source_after(self, followed: int) -> int | None:
        """The source position after the first `followed` tokens (None: inside a replacement)."""
        shift = 0
        for start, end, old in self.replaced:
            if end <= followed:
                shift += len(old) - (end - start)
            elif start < followed:
                return None
        return self.position + followed + shift


@dataclass
class Rule:
    """What replaces an old span, and how often the output followed it (the learning counts) or not."""

    new: tuple[int, ...]
    hits: int = 1
    misses: int = 0

    @property
    def trusted(self) -> bool:
        return self.hits > self.misses


@dataclass
class WordRule:
    """What replaces an old word, and how the token rules it made fared (`Rule`'s counts)."""

    new: bytes
    hits: int = 1
    misses: int = 0

    @property
    def trusted(self) -> bool:
        return self.hits > self.misses


class Rewrites:
    """Rules old span -> new span with their record at later occurrences; with a vocabulary,
    word rules that make token rules for contexts not seen yet."""

    def __init__(self, vocabulary: Vocabulary | None = None) -> None:
        self.rules: dict[tuple[int, ...], Rule] = {}
        self._longest: dict[int, int] = {}  # first token of an old span -> longest such span
        self.vocabulary = vocabulary
        self.words: dict[bytes, WordRule] = {}  # old word -> the new word, and its record
        self._made: dict[tuple[int, ...], bytes] = {}  # a token rule a word rule made -> that old word
        self._pieces: dict[int, bytes] = {}  # the vocabulary's, as read

    def learn(self, old: tuple[int, ...], new: tuple[int, ...], output: Sequence[int]) -> None:
        """The output wrote `new` where its source had `old`: a rule for each part that differs
        (what the two share, a key between changed quotes, say, stays out of the rules)."""
        if len(old) > SPAN_MAX or len(new) > SPAN_MAX:
            return
        for i, end, j, new_end in _differences(old, new):
            if i == end or j == new_end:  # an insertion or a deletion: take in a shared neighbour
                if i > 0:
                    i, j = i - 1, j - 1
                elif end < len(old):
                    end, new_end = end + 1, new_end + 1
            self._learn(old[i:end], new[j:new_end], output)
        if self.vocabulary is not None:
            self._learn_words(old, new, output)

    def _learn_words(self, old: tuple[int, ...], new: tuple[int, ...], output: Sequence[int]) -> None:
        """Where the two spans hold as many words and differ in some, each such pair is a word
        rule; each whole occurrence of the old word in `output` counts as a miss, as for a token rule."""
        assert self.vocabulary is not None
        before, after = WORD.findall(self._text(old)), WORD.findall(self._text(new))
        if len(before) != len(after):
            return
        written = self._text(output)
        for was, now in zip(before, after, strict=True):
            if was != now and was not in self.words:
                misses = len(re.findall(rb"(?<!\w)" + re.escape(was) + rb"(?!\w)", written))
                self.words[was] = WordRule(now, misses=misses)

    def _text(self, tokens: Sequence[int]) -> bytes:
        assert self.vocabulary is not None
        return b"".join(self._piece(t) for t in tokens)

    def _learn(self, old: tuple[int, ...], new: tuple[int, ...], output: Sequence[int]) -> None:
        """A rule old -> new; each place where `output` (the output so far) kept `old` as it was
        counts as a miss (not one inside a place where it wrote `new`, which may hold `old`:
        an insertion before a token)."""
        if not old or not new:
            return
        if len(self.rules) >= RULES_MAX and old not in self.rules:
            del self.rules[next(iter(self.rules))]
        first, inside = old[0], [o for o in range(len(new) - len(old) + 1) if new[o : o + len(old)] == old]
        kept = sum(
            1
            for i, token in enumerate(output)
            if token == first
            and tuple(output[i : i + len(old)]) == old
            and not any(tuple(output[i - o : i - o + len(new)]) == new for o in inside if i >= o)
        )
        self.rules[old] = Rule(new, misses=kept)
        self._longest[old[0]] = max(self._longest.get(old[0], 0), len(old))

    def score(self, old: tuple[int, ...], followed: bool) -> None:
        """Whether the output followed the rule for `old` where a copy applied it (and so the
        word rule that made it, if one did)."""
        for rule in (self.rules.get(old), self.words.get(self._made.get(old, b""))):
            if rule is not None and followed:
                rule.hits += 1
            elif rule is not None:
                rule.misses += 1

    def apply(self, raw: list[int], position: int, k: int) -> Rewritten:
        """The first k tokens of `raw` (source tokens from `position` on) with the rules applied,
        and the rest of a new span that the k-th token cuts: a copy offers k of them, but the
        output is judged against the whole rewrite."""
        if not any(rule.trusted for rule in self.rules.values()) and not any(w.trusted for w in self.words.values()):
            return Rewritten(raw[:k], position)  # no rule would apply: the tokens as they are
        tokens: list[int] = []
        replaced: list[tuple[int, int, tuple[int, ...]]] = []
        words, starts = self._words_in(raw)
        i = 0
        while i < len(raw) and len(tokens) < k:
            rule = self._rule_at(raw, i) if raw[i] in self._longest else None
            if rule is None and i in words:
                rule = self._word_at(raw, i, words[i], starts)
            if rule is None:
                tokens.append(raw[i])
                i += 1
                continue
            old, new = rule
            replaced.append((len(tokens), len(tokens) + len(new), old))
            tokens.extend(new)
            i += len(old)
        return Rewritten(tokens, position, tuple(replaced))

    def _rule_at(self, raw: list[int], i: int) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """The longest trusted rule whose old span starts raw[i:], unless the new span is already there."""
        for n in range(min(self._longest[raw[i]], len(raw) - i), 0, -1):
            old = tuple(raw[i : i + n])
            rule = self.rules.get(old)
            if rule is None or not rule.trusted:
                continue
            if tuple(raw[i : i + len(rule.new)]) == rule.new:  # the source already reads the new way
                return None
            return old, rule.new
        return None

    def _words_in(self, raw: list[int]) -> tuple[dict[int, tuple[bytes, int]], list[int]]:
        """Where trusted word rules' old words stand, whole, in the text of `raw` (with what
        follows each in view): by the token their first byte is in, the word and where it ends
        in the text; and where each token's text starts (one more: the end). Nothing is read
        while no word rule is trusted: this runs for every copy offered."""
        trusted = sorted((word for word, rule in self.words.items() if rule.trusted), key=len, reverse=True)
        if not trusted:
            return {}, []
        pieces = [self._piece(t) for t in raw]
        starts = list(accumulate(map(len, pieces), initial=0))
        found: dict[int, tuple[bytes, int]] = {}
        text = b"".join(pieces)
        for match in re.finditer(rb"(?<!\w)(" + b"|".join(map(re.escape, trusted)) + rb")(?!\w)", text):
            if match.end() < len(text):
                found.setdefault(bisect_right(starts, match.start()) - 1, (match.group(1), match.end()))
        return found, starts

    def _word_at(
        self, raw: list[int], i: int, found: tuple[bytes, int], starts: list[int]
    ) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """A token rule for the tokens from raw[i] on that hold an old word (`found`: the word,
        and where it ends in the text), made now and kept: those tokens spelt again with the new
        word; None where the span is too long, or the spelling gives the same tokens."""
        assert self.vocabulary is not None
        was, end = found
        count = bisect_left(starts, end) - i  # tokens through the one the word ends in
        old = tuple(raw[i : i + count])
        if count > SPAN_MAX or old in self.rules:
            return None
        spelt = self._text(old)
        cut = end - starts[i]
        text = spelt[: cut - len(was)] + self.words[was].new + spelt[cut:]
        new = tuple(self.vocabulary.tokenize(text.decode("utf-8", "replace")))
        if new == old or not new or len(new) > SPAN_MAX:
            return None
        self._learn(old, new, ())
        self._made[old] = was
        return old, new

    def _piece(self, token: int) -> bytes:
        assert self.vocabulary is not None
        piece = self._pieces.get(token)
        if piece is None:
            piece = self._pieces[token] = self.vocabulary.piece(token)
        return piece


def _differences(old: tuple[int, ...], new: tuple[int, ...]) -> list[tuple[int, int, int, int]]:
    """The parts where `old` and `new` differ, between the tokens of a longest common
    subsequence: (start, end) in `old`, then in `new`."""
    table = [[0] * (len(new) + 1) for _ in range(len(old) + 1)]
    for i in range(len(old) - 1, -1, -1):
        for j in range(len(new) - 1, -1, -1):
            table[i][j] = table[i + 1][j + 1] + 1 if old[i] == new[j] else max(table[i + 1][j], table[i][j + 1])
    parts, i, j, start = [], 0, 0, (0, 0)
    while i < len(old) and j < len(new):
        if old[i] == new[j]:
            if start != (i, j):
                parts.append((start[0], i, start[1], j))
            i, j = i + 1, j + 1
            start = (i, j)
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    if start != (len(old), len(new)):
        parts.append((start[0], len(old), start[1], len(new)))
    return parts
