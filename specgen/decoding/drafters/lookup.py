"""Copy drafting: propose what followed an earlier occurrence of the recent tokens.

The `Copier` keeps this request's tokens (prompt and output) in a `SuffixIndex` that grows by
the accepted tokens and truncates on rollback, and searches it, then any shared sources (an
earlier conversation, a `LookupMemory` of past outputs), for the longest match. After a changed
span (a renamed identifier) the match ends; the copier remembers where in its source copying
had got to and re-finds its place near there from the last token or two, so copying resumes
where the source continues, and learns the change as a rule (`Rewrites`) that later copies of
the same span carry: a rename breaks one copy, not one per occurrence. A copy that carried a
rule goes on from its place in the source while the output follows it, with the run so far as
its match. Copied tokens are certain (q is one-hot), so a copied token x is
kept with probability p(x): the output stays the target's, whatever is copied.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from specgen.decoding.drafters.base import Draft, Drafter, Gate, Source, Vocabulary, copied
from specgen.decoding.drafters.quoted import quoted_source
from specgen.decoding.drafters.rewrites import SPAN_MAX, Rewrites, Rewritten
from specgen.decoding.drafters.source import Offer
from specgen.decoding.drafters.suffix import Branch, SuffixIndex
from specgen.decoding.sampling import SamplingParams
from specgen.decoding.tokens import common_prefix, token_at

_RESYNC_BELOW = 6  # a global match shorter than this yields to one near the last copy's source
_RESYNC_WIDTH = 16  # how far from the expected source position a re-found place may be
_REJOINED = 3  # tokens of a match that show the output rejoined its source after a change
# for each length of what the output wrote after a break, the lengths of what it may have
# replaced in the source, the nearest to it first (the shorter among equals): the order `_rejoin` tries them in
_NEAREST_FIRST = {
    new: sorted(range(1, SPAN_MAX + 1), key=lambda old: (abs(old - new), old)) for new in range(1, SPAN_MAX + 1)
}


@dataclass(frozen=True)
class _Copy:
    """The last offer: its branch, where in the index it was made, and its tokens."""

    branch: Branch
    start: int
    copy: Rewritten


class Copier:
    """This request's index, the shared sources searched after it, and where copying left off: the
    copy source of the text so far (`source.CopySource`)."""

    name = Source.TEXT
    leads = False

    def __init__(
        self, shared: tuple[SuffixIndex, ...] = (), quoting: Vocabulary | None = None, words: Vocabulary | None = None
    ):
        """`quoting`: the target's vocabulary, where the reply is written in JSON: the prompt's
        text escaped as JSON is searched too, after `shared` (`drafters.quoted`); its copies are
        reported as quoted and priced as the text's (they are the prompt, escaped). `words`: the
        target's vocabulary, so that a renamed word is carried into contexts that tokenize it
        differently (`Rewrites`)."""
        self.index = SuffixIndex()
        self.shared = tuple(shared)
        self.quoting, self.words = quoting, words
        self.request_sources: tuple[SuffixIndex, ...] = ()  # this request's own, searched after `shared`
        self._anchor: tuple[int, int, int] | None = None  # source, position, request length then
        self.rewrites = Rewrites(words)
        self._output_start = 0  # where this request's output begins in the index
        self._last: _Copy | None = None
        self._broken: tuple[int, int, int] | None = None  # source, its position, output position where a copy broke

    def reset(self, sequence: list[int]) -> None:
        """Hold `sequence`, keeping what the index shares with it (a new request, a chat turn)."""
        keep = common_prefix(self.index.tokens, sequence)
        self.index.truncate(keep)
        self.index.extend(sequence[keep:])
        self._anchor = self._last = self._broken = None
        self.rewrites = Rewrites(self.words)
        self._output_start = len(sequence)

    def prepare(self, prefix: list[int]) -> None:
        """Hold the prompt (keeping what an earlier request shared with it), and with `quoting`,
        index its text as JSON escapes it."""
        self.reset(prefix)
        quoted = quoted_source(prefix, self.quoting) if self.quoting is not None else None
        self.request_sources = (quoted,) if quoted is not None else ()

    def sync(self, history: list[int], last: int) -> None:
        """Hold history + [last], which normally extends what the index holds: O(new tokens)."""
        held = len(self.index)
        if held > len(history) + 1 or (held and self.index.tokens[held - 1] != token_at(history, last, held - 1)):
            self.reset([*history, last])
            return
        self.index.extend([*history[held:], last] if held <= len(history) else [])

    def offer(self, history: list[int], last: int, k: int) -> Offer:
        """Up to k tokens to copy after history + [last], from the best match in the nearest source."""
        self.sync(history, last)
        sources = (self.index, *self.shared, *self.request_sources)
        best: Branch | None = None
        for number, source in enumerate(sources):
            branches = source.find(self.index, number)
            if branches and (best is None or branches[0].match > best.match):
                best = branches[0]
        self._rejoin(sources)
        followed, skip = self._followed()
        if followed is not None and (best is None or followed.match > best.match):
            best = followed
        if best is None or best.match < _RESYNC_BELOW:
            best = self._resynced(sources, best) or best
        if best is None:
            self._last = None
            return Offer([])
        if best is not followed:
            skip = 0
        self._anchor = (best.source, best.position, len(self.index))
        source = sources[best.source]
        ahead = source.continuation(best.position, k + skip + SPAN_MAX, overlapping=source is self.index)
        copy = self.rewrites.apply(ahead, best.position, k + skip)
        if skip and copy.tokens[:skip] != self.index.tokens[len(self.index) - skip :].tolist():
            self._last = None  # the rewrite it was inside no longer applies
            return Offer([])
        self._last = _Copy(best, len(self.index) - skip, copy)
        rewrites = tuple(max(start - skip, 0) for start, end, _ in copy.replaced if end > skip)
        quoted = best.source > len(self.shared)  # in one of `request_sources`, after `shared`
        # a cut rewrite's tail is judged, not offered
        return Offer(
            copy.tokens[skip : k + skip],
            best,
            rewrites,
            source=Source.QUOTED if quoted else Source.TEXT,
            priced_as=Source.TEXT,
        )

    def _followed(self) -> tuple[Branch | None, int]:
        """The last copy continued where the output has followed it since, through a rewrite it
        carried (from the rewrite's start, skipping what of it was written), with the run so far
        as its match; where the output broke off, the rewrites are scored and the break is kept
        for `_rejoin`."""
        last = self._last
        if last is None:
            return None, 0
        emitted = self.index.tokens[last.start :]
        followed = common_prefix(emitted, last.copy.tokens)
        for start, end, old in last.copy.replaced:
            if followed >= end or start <= followed < len(emitted):
                self.rewrites.score(old, followed >= end)
        if followed == len(last.copy.tokens) < len(emitted):  # it ran out, not off
            return None, 0
        if followed < len(emitted):
            resume = last.copy.source_after(followed)
            if self._broken is None and resume is not None:
                self._broken = (last.branch.source, resume, last.start + followed)
            return None, 0
        if not last.copy.replaced:
            return None, 0
        inside = next((start for start, end, _ in last.copy.replaced if start < followed < end), followed)
        run = last.branch.match + followed
        position = last.copy.source_after(inside)
        assert position is not None  # a rewrite's start, or a place outside every rewrite
        branch = Branch(last.branch.source, position, run, anchored=last.branch.anchored and run < _RESYNC_BELOW)
        return branch, followed - inside

    def _rejoin(self, sources: Sequence[SuffixIndex]) -> None:
        """Where the output, after a copy broke off, reads like its source again a few tokens
        on, learn what it wrote in the place of what it skipped. Found from the text itself,
        so a change is learnt wherever the rounds fell: a copy kept for many tokens made no
        offer at the place where the output rejoined its source. The first place where
        `_REJOINED` tokens of the output equal the source's, the closest to where the source
        would be by then; none within `SPAN_MAX` tokens: nothing is learnt."""
        if self._broken is None:
            return
        number, old_start, new_start = self._broken
        source, written = sources[number].tokens, self.index.tokens
        for new in range(1, SPAN_MAX + 1):
            if new_start + new + _REJOINED > len(written):
                return  # not written yet
            seen = written[new_start + new : new_start + new + _REJOINED]
            for old in _NEAREST_FIRST[new]:
                if source[old_start + old : old_start + old + _REJOINED] == seen:
                    self.rewrites.learn(
                        tuple(source[old_start : old_start + old]),
                        tuple(written[new_start : new_start + new]),
                        written[self._output_start :],
                    )
                    self._broken = None
                    return
        self._broken = None

    def _resynced(self, sources: Sequence[SuffixIndex], best: Branch | None) -> Branch | None:
        """A match near where the last copy's source would be by now, if it is as long as the
        best match elsewhere (two tokens suffice)."""
        if self._anchor is None:
            return None
        number, position, length = self._anchor
        near = position + len(self.index) - length
        found = sources[number].align(self.index, near, _RESYNC_WIDTH, number)
        if found is None or (best is not None and found.match < min(best.match, 2)):
            return None
        return found


class PromptLookupDrafter(Drafter):
    """Drafts k tokens a round by copying (`Copier`); `shared` sources are searched after the request."""

    name = "prompt-lookup"

    def __init__(self, shared: tuple[SuffixIndex, ...] = ()):
        self.copier = Copier(shared)

    @property
    def shared(self) -> tuple[SuffixIndex, ...]:
        return self.copier.shared

    def prepare(self, prefix: list[int]) -> None:
        """Index the prompt (keeping what an earlier request shared with it)."""
        self.copier.prepare(prefix)

    def propose(
        self,
        history: list[int],
        last: int,
        k: int,
        params: SamplingParams,
        draws: np.ndarray | None,
        keep: Gate | None = None,
    ) -> Draft:
        """Copied tokens are certain (q is one-hot), so `keep` has nothing to weigh."""
        offer = self.copier.offer(history, last, k)
        return copied(offer.tokens, params, len(offer.rewrites), offer.source)
