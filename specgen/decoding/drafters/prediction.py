"""Drafting from a prediction: the text the user expects the output to resemble (`run --predict`,
OpenAI's `prediction` field), followed in order with a cursor.

A prediction is usually the file an edit reprints. The output follows it for long stretches
and departs from it where the edit changes something: an inserted line, a replaced or deleted
span, a renamed name. `Prediction` keeps the prediction's tokens and a cursor, where in the
prediction the output stands. While the output follows, it offers the prediction from the
cursor. Where the output departs, the cursor is lost, and the place it left (the anchor, once
the output had followed it for a few tokens) is kept. Each round it looks for the output's
latest tokens in the prediction near the anchor, at or after it first, the longest match
(counted up to a few tokens) and then the nearest: after an inserted line the output returns to
the prediction where it left, after a replaced span a little later, after a deleted span
further on. Only a place the output then follows for a few tokens becomes the new anchor, so a
stray match inside an inserted line does not move it. Beyond the window, a long match anywhere
in the prediction is taken. Where the output rejoins the prediction a few tokens after it
left, what it skipped and what it wrote instead become a rule (`Rewrites`, as the copier
learns them), so that a rename costs one broken copy, not one per occurrence.

Offered tokens are copies like any other: one-hot drafts, kept with probability p(x), so the
output stays the target's whatever the prediction holds. `PredictionDrafter` drafts from it
with a fixed K; the auto drafter (`decoding.auto`) prices its offers from its own record.

`accepted_tokens` counts OpenAI's accepted prediction tokens: the tokens of the prediction that
appear in the completion, in order (the length of a longest common subsequence). Pure Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from specgen.decoding.drafters.base import Draft, Drafter, Gate, Source, Vocabulary, copied
from specgen.decoding.drafters.rewrites import SPAN_MAX, Rewrites, Rewritten
from specgen.decoding.drafters.source import Offer
from specgen.decoding.drafters.suffix import Branch, SuffixIndex
from specgen.decoding.sampling import SamplingParams
from specgen.decoding.tokens import common_prefix


class Drafted(Protocol):
    """What drafting from a source did over a reply (`events.SourceCount`): tokens drafted, kept."""

    @property
    def drafted(self) -> int: ...

    @property
    def kept(self) -> int: ...


CONFIRM = 3  # tokens the output follows a re-found place for before it is the new anchor
BACK = 16  # how far before the anchor a re-found place may start
WINDOW = 512  # how far after the anchor a re-found place may start
LONG_ENOUGH = 4  # a match this long counts as long as any other within the window: the nearest wins
FAR_MATCH = 8  # beyond the window, the least match that moves the cursor
ANCHORED_BELOW = 6  # a place is priced as re-found (anchored) while the output has followed it for fewer tokens
# a run's tokens beyond these count as reprinted (`reprinted`): an answer that quotes a name or a
# signature follows text for a few tokens, an edit reprints whole lines of it
REPRINTED_AFTER = 8


@dataclass(frozen=True)
class PredictionReport:
    """What became of a prediction in one reply, with OpenAI's meanings: its tokens, those that
    appear in the completion (in order) and those that do not; and what drafting from it did:
    tokens drafted and kept, and the output positions where the output left it."""

    prediction_tokens: int
    accepted_prediction_tokens: int
    rejected_prediction_tokens: int
    prediction_drafted: int = 0
    prediction_kept: int = 0
    prediction_breaks: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {
            "prediction_tokens": self.prediction_tokens,
            "accepted_prediction_tokens": self.accepted_prediction_tokens,
            "rejected_prediction_tokens": self.rejected_prediction_tokens,
            "prediction_drafted": self.prediction_drafted,
            "prediction_kept": self.prediction_kept,
            "prediction_breaks": list(self.prediction_breaks),
        }


class Prediction:
    """The prediction's tokens, where the output stands in it, and the rewrites learnt from the
    output's departures: a copy source (`source.CopySource`), first among equals, since the
    output is expected to follow it. `prepare` starts a reply; `offer` reads the output so far
    and proposes."""

    leads = True

    def __init__(self, tokens: list[int], words: Vocabulary | None = None, name: Source = Source.PREDICTION):
        """`words`: the target's vocabulary, so that a renamed word is carried into contexts
        that tokenize it differently (`Rewrites`); `name`: whose text it is, as rounds report it
        (`Source.REPEAT`: the reply an earlier identical request got, not one the user gave)."""
        self.tokens = list(tokens)
        self.words = words
        self.name = name
        self.index = SuffixIndex(self.tokens)  # for long jumps (and the copier, as one more source)
        self.begin(0)

    @property
    def earned(self) -> int:
        """The reply's tokens that earn its loss allowance (`Policy.follow`): those that followed
        the prediction; of text the prompt attached, which nobody vouched for, those reprinted."""
        return self.reprinted if self.name == Source.ATTACHED else self.followed

    def __len__(self) -> int:
        return len(self.tokens)

    def prepare(self, prefix: list[int]) -> None:
        """A reply starts after `prefix` (the prompt but its last token)."""
        self.begin(len(prefix) + 1)

    def begin(self, start: int) -> None:
        """A reply starts: its output begins at position `start` of the sequences `offer` is given."""
        self.start = start
        self.written = SuffixIndex()  # the output so far
        self.cursor: int | None = 0  # where in the prediction the next output token is expected; None: lost
        self.skip = 0  # tokens of a rewrite's new span at the cursor already written
        self.run = 0  # output tokens that have followed the cursor since it was (re)found, match included
        self.followed = 0  # output tokens that followed the prediction at the cursor, in all
        self.reprinted = 0  # of them, those beyond the first REPRINTED_AFTER of their run: a stretch reprinted
        self.placed = True  # the cursor is a confirmed place: the start, or followed for CONFIRM tokens
        self.anchor, self.left = 0, 0  # the last confirmed place, and the output position there
        self.rewrites = Rewrites(self.words)
        self.breaks: list[int] = []  # output positions where the output left a confirmed place
        self._rejoined: tuple[int, int] | None = None  # where a re-found place's match starts: prediction, output

    # -- reading the output --------------------------------------------------------------------

    def offer(self, history: list[int], last: int, k: int) -> Offer:
        """Up to k tokens of the prediction after history + [last], from the cursor; its branch's
        match is the run the output has followed, `anchored` while that place is newly re-found."""
        self._read(history, last)
        if self.cursor is None:
            self._resync()
        cursor = self.cursor
        if cursor is None:
            return Offer([])
        stream = self._stream(cursor, k)
        if stream.tokens[: self.skip] != self.written.tokens[len(self.written) - self.skip :].tolist():
            self._depart()  # the rewrite it was inside no longer applies
            return Offer([])
        tokens = stream.tokens[self.skip :]
        if not tokens:
            return Offer([])
        rewrites = tuple(max(start - self.skip, 0) for start, end, _ in stream.replaced if end > self.skip)
        branch = Branch(-1, cursor, max(self.run, 1), anchored=self.run < ANCHORED_BELOW)
        return Offer(tokens, branch, rewrites, source=self.name)

    def _read(self, history: list[int], last: int) -> None:
        """Take in the output tokens written since the last call (all of them after a rewind)."""
        end = len(history) + 1
        if end < self.start + len(self.written):
            self.begin(self.start)
        begin = self.start + len(self.written)
        new = [history[i] if i < len(history) else last for i in range(begin, end)]
        if new:
            self._advance(new)

    def _stream(self, cursor: int, count: int) -> Rewritten:
        """The prediction from the cursor with the rewrites applied: what the output is expected
        to write next (its first `skip` tokens already written), `count` tokens beyond those."""
        raw = self.tokens[cursor : cursor + count + self.skip + SPAN_MAX]
        return self.rewrites.apply(raw, cursor, count + self.skip)

    def _advance(self, new: list[int]) -> None:
        """Follow the cursor through `new`; where the output departs, the cursor is lost."""
        if self.cursor is None:
            self.written.extend(new)
            return
        stream = self._stream(self.cursor, len(new))
        followed = common_prefix(new, stream.tokens[self.skip :])
        through = self.skip + followed  # tokens of the stream written now
        departed = followed < len(new)
        for start, end, old in stream.replaced:
            if through >= end:
                self.rewrites.score(old, True)
            elif departed and start <= through:
                self.rewrites.score(old, False)
        self.written.extend(new[:followed])
        before, self.run = self.run, self.run + followed
        self.followed += followed
        self.reprinted += max(0, self.run - max(before, REPRINTED_AFTER))
        cursor, self.skip = _place(stream, through)
        self.cursor = cursor
        if self.placed or self.run >= CONFIRM:
            self._confirm(cursor)
        if departed:
            self._depart()
            self.written.extend(new[followed:])

    def _depart(self) -> None:
        """The output left the prediction at the cursor; a confirmed place stays the anchor."""
        if self.placed:
            self.breaks.append(len(self.written))
        self.cursor, self.skip, self.run, self.placed, self._rejoined = None, 0, 0, False, None

    # -- finding the place again ---------------------------------------------------------------

    def _resync(self) -> None:
        """Re-find the output's latest tokens in the prediction: near the anchor the longest
        match (up to LONG_ENOUGH) that starts nearest it, at or after it first; else a match of
        FAR_MATCH tokens anywhere. The place is confirmed once CONFIRM tokens match."""
        if not len(self.written):
            return
        found = self._near() or self._far()
        if found is None:
            return
        position, match = found
        self.cursor, self.skip, self.run = position, 0, match
        self._rejoined = (position - match, len(self.written) - match)
        if match >= CONFIRM:
            self._confirm(position)

    def _confirm(self, cursor: int) -> None:
        """The cursor is a confirmed place now, the new anchor. Where the output rejoined the
        prediction a few tokens after it left, the span it skipped and what it wrote instead,
        both short, become a rule."""
        if self._rejoined is not None:
            rejoined, written = self._rejoined
            # with the token where they meet again, so that an inserted span is a rule too
            old = self.tokens[self.anchor : rejoined + 1]
            new = self.written.tokens[self.left : written + 1].tolist()
            if old != new and len(old) <= SPAN_MAX and len(new) <= SPAN_MAX and rejoined >= self.anchor:
                self.rewrites.learn(tuple(old), tuple(new), self.written.tokens.tolist())
            self._rejoined = None
        self.placed = True
        self.anchor, self.left = cursor, len(self.written) - self.skip

    def _near(self) -> tuple[int, int] | None:
        last = self.written.tokens[-1]
        best, best_key = None, None
        low, high = max(self.anchor - BACK, 0), min(self.anchor + WINDOW, len(self.tokens) - 1)
        for begin in range(low, high + 1):  # a place whose last matching token is tokens[begin]
            if self.tokens[begin] != last:
                continue
            position = begin + 1
            match = self.index.match_length(position, self.written, 1)
            if position <= self.anchor:  # wholly before where the output left it: after any place beyond
                distance = BACK + WINDOW + self.anchor - position
            else:  # how far beyond that place the match begins (0 where it covers the place)
                distance = max(position - match - self.anchor, 0)
            key = (min(match, LONG_ENOUGH), -distance)
            if best_key is None or key > best_key:
                best, best_key = (position, match), key
        return best

    def _far(self) -> tuple[int, int] | None:
        branches = self.index.find(self.written)
        if not branches or branches[0].match < FAR_MATCH:
            return None
        return branches[0].position, branches[0].match


def _place(stream: Rewritten, through: int) -> tuple[int, int]:
    """The prediction position after `through` tokens of `stream`, and how many tokens of a
    rewrite's new span there were written (the cursor stays at that rewrite's start)."""
    inside = next((start for start, end, _ in stream.replaced if start < through < end), through)
    position = stream.source_after(inside)
    assert position is not None  # a rewrite's start, or a place outside every rewrite
    return position, through - inside


def accepted_tokens(prediction: list[int], completion: list[int]) -> int:
    """How many tokens of the prediction appear in the completion, in order: the length of a
    longest common subsequence (bit-parallel, Hyyrö 2004: one big-integer step per completion
    token, so a 4,096 by 4,096 comparison takes milliseconds)."""
    if not prediction or not completion:
        return 0
    masks: dict[int, int] = {}
    for i, token in enumerate(prediction):
        masks[token] = masks.get(token, 0) | (1 << i)
    width = (1 << len(prediction)) - 1
    row = width  # a 1 bit: that prediction position is not yet matched
    for token in completion:
        matches = row & masks.get(token, 0)
        row = ((row + matches) | (row - matches)) & width
    return len(prediction) - bin(row).count("1")


def report(prediction: Prediction, completion: list[int], drafted: Drafted | None = None) -> PredictionReport:
    """The prediction's fate in a reply of `completion` tokens; `drafted`: what the rounds that
    drafted from it proposed and the target kept (the Summary's `by_source["prediction"]`)."""
    accepted = accepted_tokens(prediction.tokens, completion)
    breaks = tuple(b for b in prediction.breaks if b < len(completion))
    return PredictionReport(
        len(prediction),
        accepted,
        len(prediction) - accepted,
        drafted.drafted if drafted else 0,
        drafted.kept if drafted else 0,
        breaks,
    )


class PredictionDrafter(Drafter):
    """Drafts up to K tokens a round from the prediction where it knows its place, and leaves
    the other rounds to `fallback` (the draft model, or copying from what was written)."""

    def __init__(self, prediction: Prediction, fallback: Drafter | None):
        self.prediction, self.fallback = prediction, fallback
        self.name = f"{fallback.name} + prediction" if fallback is not None else "prediction"

    def prepare(self, prefix: list[int]) -> None:
        self.prediction.prepare(prefix)
        if self.fallback is not None:
            self.fallback.prepare(prefix)

    def propose(
        self,
        history: list[int],
        last: int,
        k: int,
        params: SamplingParams,
        draws: np.ndarray | None,
        keep: Gate | None = None,
    ) -> Draft:
        offer = self.prediction.offer(history, last, k)
        if offer.tokens or self.fallback is None:
            return copied(offer.tokens[:k], params, len(offer.rewrites), self.prediction.name)
        return self.fallback.propose(history, last, k, params, draws, keep)

    def observe(self, draft: Draft, emitted: list[int], seconds: float, looked: float = 0.0) -> None:
        if self.fallback is not None and draft.source != self.prediction.name:
            self.fallback.observe(draft, emitted, seconds, looked)

    def rollback(self, history: list[int]) -> None:
        if self.fallback is not None:
            self.fallback.rollback(history)
