"""Small facts about token sequences that the loop, the drafters and the engine all need."""

from __future__ import annotations

import codecs
from collections.abc import Sequence

MAX_DRAFT_TOKENS = 32  # the largest K a user may ask for (-k, /k, a pair's draft_tokens)


def common_prefix(have: Sequence[int], want: Sequence[int]) -> int:
    """How many leading tokens the two sequences share."""
    common = 0
    for a, b in zip(have, want, strict=False):
        if a != b:
            break
        common += 1
    return common


def token_at(history: Sequence[int], last: int, i: int) -> int:
    """Token i of history + [last], without building that list (drafters are handed the two apart)."""
    return history[i] if i < len(history) else last


class Utf8Stream:
    """Turns token bytes into text without ever splitting a multi-byte character."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data: bytes) -> str:
        return self._decoder.decode(data)

    @property
    def pending(self) -> bool:
        """Whether a multi-byte character is half fed."""
        return bool(self._decoder.getstate()[0])
