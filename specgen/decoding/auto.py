"""`--draft-tokens auto` as a drafter: each round the policy picks plain decoding, the draft
model at some K, or a copy from the text so far, and learns from what the round showed.

The composition sits above the policy, which sits above the drafters it chooses among. The
copy source is fed incrementally: its index grows by the accepted tokens each round (and
truncates if the history is rewound), so a round's copy lookup costs the same at any length of
history. Given the target's `Vocabulary`, a `PatternSource` also offers each round what the
output's record pattern predicts (`drafters.pattern`); the offer the output has followed
longer is the one priced. Given a `Prediction` (the text the user expects the output to
resemble), it offers the prediction from where the output stands in it too, first among equals,
and the loss bound allows for the reply the prediction foresees from the start. A reply written
in JSON (`quoted`) also copies from the prompt's text as JSON escapes it (`drafters.quoted`),
and from its own earlier records, found by their keys past the values that changed
(`drafters.structure`), where that match is the longer; those copies are priced by what each
token held (a key, a value's first token) and reported as "structure". With a JSON schema the
reply is foreseen to be at least about as long as the compact spelling of the schema's example
(`example`'s first line), and the loss bound allows for that reply from the start, as for a
prediction.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from specgen.decoding.copy_rates import (
    AGREE,
    PATTERN,
    PREDICTION,
    SINGLE,
    SPLIT,
    STRUCTURE,
    TEXT,
    CopyEvidence,
    CopyJudgement,
)
from specgen.decoding.drafters.base import (
    COPIED_PATTERN,
    COPIED_PREDICTION,
    COPIED_QUOTED,
    COPIED_STRUCTURE,
    COPIED_TEXT,
    LOOKUP,
    MODEL,
    NO_DRAFT,
    PLAIN,
    Draft,
    Drafter,
    Gate,
    Vocabulary,
    copied,
)
from specgen.decoding.drafters.lookup import Copier, Offer, PromptLookupDrafter
from specgen.decoding.drafters.model import ModelDrafter
from specgen.decoding.drafters.pattern import RecordPattern
from specgen.decoding.drafters.prediction import Prediction
from specgen.decoding.drafters.quoted import quoted_source
from specgen.decoding.drafters.structure import StructureSource
from specgen.decoding.drafters.suffix import Branch, SuffixIndex
from specgen.decoding.policy import LOOKUP_MAX, Choice, Outcome, Policy
from specgen.decoding.sampling import SamplingParams
from specgen.decoding.tokens import Utf8Stream, common_prefix

_OPEN_MAX = 8  # copy offers judged at once
_PATTERN_CHARS = 256  # characters of text a pattern offer predicts
_SAME = 4  # leading tokens on which the copier's offer and the prediction's agree to count as one


class OpenOffer:
    """A copy offer judged in hindsight against the tokens the target emits, over as many rounds
    as it takes, so the policy learns how far copies really run, not only the part it drafted.
    Each round reports the positions its tokens judged (a copied token x is kept with
    probability p(x), the chance that the target emits x: this hindsight has the expectation
    of a real verification)."""

    def __init__(self, evidence: CopyEvidence | None, tokens: tuple[int, ...]):
        self.evidence, self.tokens = evidence, tokens
        self.judged = 0
        self.settled = False

    def judge(self, emitted: list[int]) -> CopyJudgement:
        """The positions `emitted` judges; the offer is settled at a miss or when all are judged."""
        start, tokens = self.judged, self.tokens
        end = min(len(tokens), start + len(emitted))
        kept = next((i for i in range(start, end) if tokens[i] != emitted[i - start]), end)
        self.judged = min(kept + 1, end)
        self.settled = kept < end or end == len(tokens)
        return CopyJudgement(self.evidence, tokens, start, self.judged, kept)


class PatternSource:
    """A copy source read from the output's record pattern: this request's `RecordPattern` over the
    prompt's text, fed the output's text as it is accepted, and its run, how many tokens the
    output has followed its offers for in a row (the match its offers are priced by, like a copy's)."""

    def __init__(self, vocabulary: Vocabulary, prefix: list[int]):
        self.vocabulary, self.stream, self.read = vocabulary, Utf8Stream(), len(prefix)
        self.pattern = RecordPattern(self._text(prefix))
        self.run = 0
        self._last: tuple[int, list[int]] = (0, [])  # where the last offer was made, its tokens

    def _text(self, tokens) -> str:
        return self.stream.feed(b"".join(self.vocabulary.piece(t) for t in tokens))

    def offer(self, tokens: list[int], k: int) -> Offer:
        """What the pattern predicts after `tokens` (the prompt, then the accepted output)."""
        if len(tokens) < self.read:
            return Offer([])
        self._score(tokens)
        self.pattern.extend(self._text(tokens[self.read :]))
        self.read = len(tokens)
        text = self.pattern.predict(_PATTERN_CHARS) if not self.stream.pending else ""
        predicted = self.vocabulary.tokenize(text)[:k] if text else []
        self._last = (len(tokens), predicted)
        if not predicted:
            return Offer([])
        return Offer(predicted, Branch(-1, -1, max(self.run, 1)))  # no place in a source: priced by the run

    def _score(self, tokens: list[int]) -> None:
        """The run grows by what the output followed of the last offer, and ends where it did not."""
        at, predicted = self._last
        if not predicted:  # no offer, no evidence
            return
        emitted = tokens[at:]
        if common_prefix(emitted, predicted) < min(len(emitted), len(predicted)):
            self.run = 0
        else:
            self.run += len(emitted)


class AutoDrafter(Drafter):
    """`--draft-tokens auto`: each round a `Policy` picks plain decoding, the draft model at some
    K, or a copy; `observe` feeds it what the round showed and how long it took."""

    def __init__(self, model: ModelDrafter | None, policy: Policy, shared: tuple[SuffixIndex, ...] = (),
                 vocabulary: Vocabulary | None = None, prediction: Prediction | None = None, quoted: bool = False,
                 example: str = ""):
        """`shared`: copy sources searched after this request (a conversation, a `LookupMemory`'s
        index); `vocabulary`: the target's, for offers by the output's record pattern;
        `prediction`: the text the user expects the output to resemble (also searched by the
        copier, after this request); `quoted`: the reply is written in JSON, so the prompt's
        text escaped as JSON is searched too, after the prompt (needs `vocabulary`); `example`:
        a document of the reply's JSON shape (`grammar.schema_example` of its schema), whose
        keys the structure source offers in the reply's first record."""
        self.model, self.policy = model, policy
        self.prediction = prediction
        self.copier = Copier((prediction.index, *shared) if prediction is not None else shared)
        self.vocabulary = vocabulary
        self.quoted, self.example = quoted, example
        self.pattern_source: PatternSource | None = None
        self.structure: StructureSource | None = None
        self.name = (model.name if model else PromptLookupDrafter.name) + " (auto)"
        self._choice = Choice(PLAIN)  # this round's, which `observe` reports to the policy
        self._open: list[OpenOffer] = []  # copy offers still being judged against the output
        self._weighed = True  # whether this round weighed drafts (else it decodes plainly, unweighed)

    def reach(self, k: int) -> int:
        """The policy holds the draft model to k; a long copy may go further."""
        return max(k, LOOKUP_MAX)

    def prepare(self, prefix: list[int]) -> None:
        """Prefill the draft model now only if it could ever pay; else it catches up when first used."""
        self.copier.reset(prefix)
        self.policy.prefilled()
        quoted = quoted_source(prefix, self.vocabulary) if self.quoted and self.vocabulary is not None else None
        self.copier.request_sources = (quoted,) if quoted is not None else ()
        self._open = []
        self.pattern_source = PatternSource(self.vocabulary, prefix) if self.vocabulary is not None else None
        self.structure = None
        if self.quoted and self.vocabulary is not None:
            example = self.vocabulary.tokenize(self.example) if self.example else []
            self.structure = StructureSource(self.vocabulary, len(prefix) + 1, example)
            if self.example:  # the schema's grammar foresees a reply of its shape: its compact spelling's length
                self.policy.foresee(len(self.vocabulary.tokenize(self.example.split("\n", 1)[0])))
        if self.prediction is not None:
            self.prediction.prepare(len(prefix) + 1)
            self.policy.foresee(len(self.prediction))
        if self.model is not None:
            self.model.prepare(prefix, prefill=self.policy.model_can_pay())

    def propose(self, history: list[int], last: int, k: int, params: SamplingParams,
                draws: np.ndarray | None, keep: Gate | None = None) -> Draft:
        self._weighed = self.policy.worth_looking()
        if not self._weighed:  # weighing drafts would cost more than drafts have earned
            return NO_DRAFT
        (offer, source), other = self._offers(history, last)
        lag = self.model.lag(history) if self.model is not None else 0
        tokens = tuple(offer.tokens)
        known = evidence(offer.branch, source, offer.roles) if offer.branch else None
        choice = self.policy.choose(k, len(tokens), lag, known, tokens)
        self._choice = choice
        opened = [OpenOffer(known, tokens)] if tokens else []
        if other is not None:  # the offer not chosen is judged too, so that its source's record learns
            opened.append(OpenOffer(evidence(other[0].branch, other[1], other[0].roles), tuple(other[0].tokens)))
        self._open = [*self._open[len(self._open) + len(opened) - _OPEN_MAX:], *opened]
        if choice.source == LOOKUP:
            return copied(offer.tokens[: choice.k], params, sum(start < choice.k for start in offer.rewrites),
                          self._copied_from(offer, source))
        if choice.source == MODEL:
            return self.model.propose(history, last, choice.k, params, draws, self.policy.gate())
        return NO_DRAFT

    def _offers(self, history: list[int], last: int) -> tuple[tuple[Offer, str], tuple[Offer, str] | None]:
        """This round's copy offer and its source, and an offer of another source that was
        passed over (None where none was). Of the copier's and the record pattern's offers, the
        one the output has followed longer; then the prediction's, where the other begins as it
        does (one offer: the prediction's, with the longer of their matches) or where the output
        has followed it as long (the prediction first among equals). A JSON reply's structure
        offer takes the place of the first where its skeleton match is the longer."""
        offer: Offer = self.copier.offer(history, last, LOOKUP_MAX)
        source = TEXT
        pattern_source = self.pattern_source
        pattern = pattern_source.offer([*history, last], LOOKUP_MAX) if pattern_source is not None else Offer([])
        if pattern.tokens and (offer.branch is None or pattern.branch.match >= offer.branch.match):
            offer, source = pattern, PATTERN
        structured = self.structure.offer(history, last, LOOKUP_MAX) if self.structure is not None else Offer([])
        if structured.tokens and (offer.branch is None or structured.branch.match > offer.branch.match):
            offer, source = structured, STRUCTURE
        predicted = self.prediction.offer(history, last, LOOKUP_MAX) if self.prediction is not None else Offer([])
        if not predicted.tokens:
            return (offer, source), None
        if offer.branch is None:
            return (predicted, PREDICTION), None
        if offer.tokens[:_SAME] == predicted.tokens[:_SAME]:
            match = max(offer.branch.match, predicted.branch.match)
            return (Offer(predicted.tokens, replace(predicted.branch, match=match), predicted.rewrites), PREDICTION), None
        if predicted.branch.match >= offer.branch.match:
            return (predicted, PREDICTION), (offer, source)
        return (offer, source), (predicted, PREDICTION)

    def _copied_from(self, offer: Offer, source: str) -> str:
        """What a drafted copy is reported as copied from. The quoted prompt is priced as the
        text's (it is the prompt, escaped) but shown apart, so a JSON reply shows what it adds."""
        if source != TEXT:
            return {PATTERN: COPIED_PATTERN, PREDICTION: COPIED_PREDICTION, STRUCTURE: COPIED_STRUCTURE}[source]
        quoted = offer.branch is not None and self.copier.is_request_source(offer.branch)
        return COPIED_QUOTED if quoted else COPIED_TEXT

    def observe(self, draft: Draft, emitted: list[int], seconds: float, looked: float = 0.0) -> None:
        copies = tuple(offer.judge(emitted) for offer in self._open)
        self._open = [offer for offer in self._open if not offer.settled]
        if not self._weighed:
            self.policy.decoded_plainly(Outcome(Choice(PLAIN), 0, len(emitted) - 1, seconds=seconds, copies=copies,
                                                looked=looked))
            return
        dropped = None
        if draft.dropped is not None and draft.dropped[1] >= 0 and len(emitted) > len(draft.tokens):
            dropped = (draft.dropped[0], emitted[len(draft.tokens)] == draft.dropped[1])
        self.policy.observe(Outcome(
            self._choice, len(draft.tokens), len(emitted) - 1, tuple(draft.confidences),
            draft.lag, dropped, seconds, copies, looked))

    def rollback(self, history: list[int]) -> None:
        """The copy index holds accepted tokens only; the draft model forgets its drafted ones."""
        if self.model is not None:
            self.model.rollback(history)



def evidence(branch: Branch, source: str, roles: tuple = ()) -> CopyEvidence:
    """What prices a copy offer from `branch` of a `source` kind: its match, whether it was
    re-found near the last copy's place, whether the source's other occurrences of the context
    agreed on its first token, and what its tokens held where they were written (`roles`: a
    structure-aligned offer's)."""
    if branch.occurrences > branch.agreeing:
        agreement = SPLIT
    else:
        agreement = AGREE if branch.agreeing > 1 else SINGLE
    return CopyEvidence(branch.match, branch.anchored, agreement, source, roles)
