"""An incremental index of token sequences that finds where the recent tokens occurred before.

Copying pays on a slow verify only when the copy is long and right, so the copy drafter needs
the longest earlier match of the last few dozen tokens, every round, at a cost that does not
grow with the history. `SuffixIndex` keeps, for a
few key lengths n (`LEVELS`), hash chains from the last n tokens to every earlier position that
followed the same n tokens: appending a token adds one link per level, truncating removes them
in reverse order (rollback is exact), and a query walks a bounded number of links, verifies
them against the tokens, and measures each match's true length (up to `MAX_MATCH`) by binary
search on slices. The bucket tables double as the sequence grows (amortised O(1) per token;
about 80 bytes per token in all).

A query returns `Branch`es: distinct next tokens among the recent occurrences of the longest
matching key, each with its longest match and how many occurrences agree on it, best first
(the longest match, then the most occurrences agreeing on it). `align` re-finds the place in a source after a changed
span (a renamed identifier): it looks for the last tokens only near where copying left off.
`LookupMemory` is a bounded index of past outputs that outlives a request. Pure Python.
"""

from __future__ import annotations

import hashlib
import sys
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

LEVELS = (1, 2, 4, 8, 16, 32)  # key lengths with a hash chain
MAX_MATCH = 64  # longest match measured
SEPARATOR = -1  # between outputs in a memory; never a token, so no match runs across it
_P = (1 << 61) - 1
_B = 1_000_003_337
_POW = [pow(_B, n, _P) for n in range(MAX_MATCH + 1)]
_WALK = 16  # chain links visited per level and query
_CANDIDATES = 8  # verified occurrences kept per query


@dataclass(frozen=True)
class Branch:
    """A continuation on offer: it starts at `position` in source `source` (0: this request);
    `match` tokens before it equal the recent tokens; `anchored`: found near where the last
    copy left off. Of the `occurrences` of the context the query found, `agreeing` went on
    with this branch's first token (the source's own evidence for it)."""

    source: int
    position: int
    match: int
    anchored: bool = False
    agreeing: int = 1
    occurrences: int = 1


class SuffixIndex:
    """A token sequence with hash chains over its n-token keys; grows, truncates, answers queries."""

    def __init__(self, tokens: Iterable[int] = ()):
        self.tokens = array("i")
        self._hashes = array("q", [0])  # prefix hashes: _hashes[i] covers tokens[:i]
        self._prev = [array("i") for _ in LEVELS]
        self._mask = 0
        self._heads: list[array[int]] = []
        self._resize(1024)
        self.extend(tokens)

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def nbytes(self) -> int:
        arrays = [self.tokens, self._hashes, *self._prev, *self._heads]
        return sum(a.itemsize * len(a) for a in arrays)

    def extend(self, new: Iterable[int]) -> None:
        tokens = list(new)
        if 2 * (len(self.tokens) + len(tokens)) > self._mask + 1:
            self._resize(2 * (len(self.tokens) + len(tokens)))
        for token in tokens:
            self._link(len(self.tokens))
            self.tokens.append(token)
            self._hashes.append((self._hashes[-1] * _B + token + 2) % _P)

    def truncate(self, size: int) -> None:
        """Forget every token from `size` on, unlinking them newest first."""
        for i in range(len(self.tokens) - 1, size - 1, -1):
            for level, n in enumerate(LEVELS):
                if i >= n:
                    self._heads[level][self._key(i, n) & self._mask] = self._prev[level][i]
        del self.tokens[size:], self._hashes[size + 1 :]
        for prev in self._prev:
            del prev[size:]

    def _key(self, end: int, n: int) -> int:
        """Hash of tokens[end - n : end]."""
        return (self._hashes[end] - self._hashes[end - n] * _POW[n]) % _P

    def _link(self, i: int) -> None:
        """Position i follows the n tokens before it: chain it into each level's bucket (each
        key as `_key` computes it, inlined: this runs for every token of every text indexed)."""
        hashes, mask, end = self._hashes, self._mask, self._hashes[i]
        for level, n in enumerate(LEVELS):
            if i >= n:
                bucket = ((end - hashes[i - n] * _POW[n]) % _P) & mask
                heads = self._heads[level]
                self._prev[level].append(heads[bucket])
                heads[bucket] = i
            else:
                self._prev[level].append(-1)

    def _resize(self, want: int) -> None:
        size = 1 << max(want - 1, 1).bit_length()
        self._mask = size - 1
        self._heads = [array("i", [-1]) * size for _ in LEVELS]
        count = len(self.tokens)
        self._prev = [array("i") for _ in LEVELS]
        for i in range(count):
            self._link(i)

    # -- queries ------------------------------------------------------------------------------

    def find(self, context: SuffixIndex, source: int = 0) -> list[Branch]:
        """Branches after the recent occurrences of the longest key that ends `context`."""
        end = len(context.tokens)
        for level in range(len(LEVELS) - 1, -1, -1):
            n = LEVELS[level]
            if n > end:
                continue
            tail = context.tokens[end - n :]
            link, prev = self._heads[level][context._key(end, n) & self._mask], self._prev[level]
            found: list[int] = []
            for _ in range(_WALK):
                if link < 0 or len(found) == _CANDIDATES:
                    break
                if self.tokens[link - n : link] == tail:
                    found.append(link)
                link = prev[link]
            if found:
                return self._branches(found, n, context, source)
        return []

    def _branches(self, found: list[int], n: int, context: SuffixIndex, source: int) -> list[Branch]:
        by_token: dict[int, list[int]] = {}  # next token -> [count, longest match, its position]
        for position in found:
            match = self.match_length(position, context, n)
            cell = by_token.setdefault(self.tokens[position], [0, -1, position])
            cell[0] += 1
            if match > cell[1]:
                cell[1], cell[2] = match, position
        cells = sorted(by_token.values(), key=lambda c: (c[1], c[0]), reverse=True)
        return [Branch(source, p, m, agreeing=count, occurrences=len(found)) for count, m, p in cells]

    def match_length(self, position: int, context: SuffixIndex, known: int = 0) -> int:
        """How many tokens before `position` equal the end of `context` (at most MAX_MATCH);
        `known` of them are known to match already."""
        end, lo = len(context.tokens), known
        hi = min(MAX_MATCH, position, end)
        ours, theirs = self.tokens, context.tokens
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if ours[position - mid : position - lo] == theirs[end - mid : end - lo]:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def align(self, context: SuffixIndex, near: int, width: int, source: int = 0) -> Branch | None:
        """Where, within `width` of position `near`, the end of `context` last occurred: the
        longest such match, then the closest; None when the last token is not there."""
        last = context.tokens[-1] if len(context.tokens) else None
        best: tuple[int, int, int] | None = None  # (match, -distance, position)
        for position in range(max(near - width, 1), min(near + width, len(self.tokens) - 1) + 1):
            if self.tokens[position - 1] != last:
                continue
            candidate = (self.match_length(position, context, 1), -abs(position - near), position)
            best = candidate if best is None or candidate > best else best
        if best is None:
            return None
        return Branch(source, best[2], best[0], anchored=True)

    def continuation(self, position: int, k: int, overlapping: bool = False) -> list[int]:
        """Up to k tokens from `position`, cut at a separator. `overlapping`: this index holds the
        text being written. Where the tokens before `position` equal its end over at least the
        distance d from `position` to the end, the text has repeated with period d, and a copy
        that reaches the end goes on through the tokens it writes itself (an overlapping copy, as
        in LZ77): it offers k tokens, not d. A shorter match shows no period, and the copy stops
        at the end."""
        out = self.tokens[position : position + k].tolist()
        if SEPARATOR in out:
            return out[: out.index(SEPARATOR)]
        period = len(self.tokens) - position
        if overlapping and 0 < period == len(out) < k and self.match_length(position, self) >= period:
            for i in range(period, k):
                out.append(out[i - period])
        return out


class LookupMemory:
    """Past outputs, kept across requests (and, saved as bytes, across processes), bounded in
    tokens: when full, the oldest outputs go. The copy drafter searches it after the request.
    It also knows which prompt each of its latest `REPLIES_MAX` outputs answered (`reply_to`),
    by a digest of the prompt's tokens, so that the same request again can follow its last reply
    as a prediction; saved as bytes, that map goes with the outputs."""

    _MAGIC = b"specgen-lookup-memory 2\n"  # the outputs, and the digests of the prompts they answered
    _MAGIC_OUTPUTS = b"specgen-lookup-memory 1\n"  # the outputs alone, as earlier versions saved them
    _DIGEST_INTS = 4  # a prompt's digest, as 32-bit words
    REPLIES_MAX = 64

    def __init__(self, max_tokens: int = 262_144):
        self.max_tokens = max_tokens
        self.outputs: list[list[int]] = []
        self.index = SuffixIndex()
        self.replies: dict[bytes, list[int]] = {}  # a prompt's digest -> its latest reply (one of `outputs`)

    def add(self, output: Iterable[int], prompt: Sequence[int] | None = None) -> None:
        """Remember one finished output (its last max_tokens - 1 tokens at most), and with
        `prompt` that it was the reply to that prompt."""
        self._add(output, _digest(prompt) if prompt is not None else None)

    def _add(self, output: Iterable[int], key: bytes | None) -> None:
        """`add`, with the answered prompt given by its digest (None: none)."""
        tokens = [t for t in output if t >= 0][-(self.max_tokens - 1) :]
        if not tokens:
            return
        self.outputs.append(tokens)
        if key is not None:
            self.replies.pop(key, None)  # re-inserted: the newest last
            self.replies[key] = tokens
            if len(self.replies) > self.REPLIES_MAX:
                del self.replies[next(iter(self.replies))]
        self.index.extend([*tokens, SEPARATOR])
        if len(self.index) > self.max_tokens:
            kept = 0  # drop the oldest down to 3/4 of the bound, so rebuilds stay amortised O(1)
            while len(self.outputs) > 1 and len(self.index) - kept > self.max_tokens * 3 // 4:
                kept += len(self.outputs.pop(0)) + 1
            self.index = SuffixIndex([t for output in self.outputs for t in (*output, SEPARATOR)])
            held = {id(output) for output in self.outputs}
            self.replies = {key: reply for key, reply in self.replies.items() if id(reply) in held}

    def reply_to(self, prompt: Sequence[int]) -> list[int] | None:
        """The latest remembered reply to exactly this prompt, or None."""
        return self.replies.get(_digest(prompt))

    @property
    def nbytes(self) -> int:
        return self.index.nbytes

    def to_bytes(self, vocabulary: str) -> bytes:
        """The outputs and which prompts they answered, tagged with a vocabulary id so that
        another model family never reads them: after the header, 32-bit words: the number of
        answered prompts, for each the index of its reply among the outputs and its digest,
        then the outputs' tokens, each output ended by a separator."""
        where = {id(output): i for i, output in enumerate(self.outputs)}
        data = array("i", [len(self.replies)])
        for key, reply in self.replies.items():
            data.append(where[id(reply)])
            data.frombytes(key)
        data.extend(self.index.tokens)
        if sys.byteorder == "big":
            data.byteswap()
        return self._MAGIC + vocabulary.encode() + b"\n" + data.tobytes()

    @classmethod
    def vocabulary_of(cls, data: bytes) -> str | None:
        """The vocabulary id that saved `data`, or None when it is not a saved memory."""
        magic = next((m for m in (cls._MAGIC, cls._MAGIC_OUTPUTS) if data.startswith(m)), None)
        if magic is None or b"\n" not in data[len(magic) :]:
            return None
        return data[len(magic) :].split(b"\n", 1)[0].decode("utf-8", errors="replace")

    @classmethod
    def from_bytes(cls, data: bytes, vocabulary: str, max_tokens: int = 262_144) -> LookupMemory:
        """The memory saved by `to_bytes` (or by an earlier version, outputs alone); empty when
        the bytes are damaged or of another vocabulary."""
        memory = cls(max_tokens)
        words = _words(data, cls._MAGIC + vocabulary.encode() + b"\n")
        answered: dict[int, bytes] = {}
        if words is not None:
            size = 1 + cls._DIGEST_INTS
            count = words[0] if words else -1
            if not 0 <= count <= (len(words) - 1) // size:
                return memory
            for at in range(1, 1 + count * size, size):
                answered[words[at]] = words[at + 1 : at + size].tobytes()
            words = words[1 + count * size :]
        else:
            words = _words(data, cls._MAGIC_OUTPUTS + vocabulary.encode() + b"\n")
        if words is None:
            return memory
        output: list[int] = []
        outputs = 0
        for token in words:
            if token == SEPARATOR:
                memory._add(output, answered.get(outputs))
                output, outputs = [], outputs + 1
            else:
                output.append(token)
        memory._add(output, answered.get(outputs))
        return memory


def _words(data: bytes, head: bytes) -> array[int] | None:
    """The 32-bit words after `head` in `data` (in this machine's order); None where `data` does
    not start with `head` or its body is not whole words."""
    body = data[len(head) :]
    if not data.startswith(head) or len(body) % 4:
        return None
    words = array("i")
    words.frombytes(body)
    if sys.byteorder == "big":
        words.byteswap()
    return words


def _digest(prompt: Sequence[int]) -> bytes:
    """A prompt's key in `LookupMemory.replies`: a digest of its tokens."""
    return hashlib.blake2b(array("i", prompt).tobytes(), digest_size=16).digest()
