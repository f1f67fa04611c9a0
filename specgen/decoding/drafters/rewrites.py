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
stay one-hot drafts, so exactness does not depend on a rule being right. Pure Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

SPAN_MAX = 8  # longest old or new span a rule holds
RULES_MAX = 256  # rules kept per request; the oldest go first


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


class Rewrites:
    """Rules old span -> new span with their record at later occurrences."""

    def __init__(self) -> None:
        self.rules: dict[tuple[int, ...], Rule] = {}
        self._longest: dict[int, int] = {}  # first token of an old span -> longest such span

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
        """Whether the output followed the rule for `old` where a copy applied it."""
        rule = self.rules.get(old)
        if rule is not None and followed:
            rule.hits += 1
        elif rule is not None:
            rule.misses += 1

    def apply(self, raw: list[int], position: int, k: int) -> Rewritten:
        """The first k tokens of `raw` (source tokens from `position` on) with the rules applied,
        and the rest of a new span that the k-th token cuts: a copy offers k of them, but the
        output is judged against the whole rewrite."""
        if not self.rules:
            return Rewritten(raw[:k], position)
        tokens: list[int] = []
        replaced: list[tuple[int, int, tuple[int, ...]]] = []
        i = 0
        while i < len(raw) and len(tokens) < k:
            rule = self._rule_at(raw, i) if raw[i] in self._longest else None
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
