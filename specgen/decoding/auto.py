"""`--draft-tokens auto` as a drafter: each round the policy picks plain decoding, the draft
model at some K, or a copy from the text so far, and learns from what the round showed.

The composition sits above the policy, which sits above the drafters it chooses among. Copies
come from a list of copy sources (`drafters.source.CopySource`), each asked every round; one
rule picks among their offers (`pick`): the longest match wins, the earlier source in the list
among equals, and a leading source (the prediction) is copied in the place of an offer it agrees
with and judged beside one it does not. By default the list is built from the parameters: the
prediction the user gave (`drafters.prediction`; the loss bound also allows for the reply it
foresees, as the reply follows it), the output's record pattern given the target's `Vocabulary`
(`drafters.pattern`), the text so far (`drafters.lookup`: its index grows by the accepted tokens
each round, so a round's lookup costs the same at any length of history), and for a reply
written in JSON (`quoted`) the prompt's text as JSON escapes it (searched by the text's copier,
`drafters.quoted`) and the reply's own earlier records, found by their keys past the values that
changed (`drafters.structure`, priced by what each token held). With a JSON schema the reply is
foreseen to be at least about as long as the compact spelling of the schema's example
(`example`'s first line), and the loss bound allows for that reply from the start, as for a
prediction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from specgen.decoding.copy_rates import AGREE, SINGLE, SPLIT, CopyEvidence, CopyJudgement
from specgen.decoding.drafters.base import NO_DRAFT, Draft, Drafter, Gate, Source, Vocabulary, copied
from specgen.decoding.drafters.lookup import Copier, PromptLookupDrafter
from specgen.decoding.drafters.model import ModelDrafter
from specgen.decoding.drafters.pattern import PatternSource
from specgen.decoding.drafters.prediction import Prediction
from specgen.decoding.drafters.source import CopySource, Offer
from specgen.decoding.drafters.structure import Role, StructureSource
from specgen.decoding.drafters.suffix import Branch, SuffixIndex
from specgen.decoding.policy import FORESEEN_RISK, LOOKUP_MAX, Choice, Outcome, Policy
from specgen.decoding.sampling import SamplingParams

_OPEN_MAX = 8  # copy offers judged at once
_SAME = 4  # leading tokens on which two offers agree to count as one


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


def copy_sources(
    shared: tuple[SuffixIndex, ...] = (),
    vocabulary: Vocabulary | None = None,
    prediction: Prediction | None = None,
    quoted: bool = False,
    example: str = "",
) -> list[CopySource]:
    """The copy sources `AutoDrafter`'s parameters ask for, in the order that breaks ties: the
    prediction, the record pattern (given `vocabulary`), the text so far (searching `shared`
    after the request, the prediction's text first, and with `quoted` the prompt as JSON escapes
    it), and with `quoted` the JSON reply's structure."""
    sources: list[CopySource] = [prediction] if prediction is not None else []
    if vocabulary is not None:
        sources.append(PatternSource(vocabulary))
    searched = (prediction.index, *shared) if prediction is not None else shared
    quoting = vocabulary if quoted else None
    sources.append(Copier(searched, quoting, words=vocabulary))
    if quoting is not None:
        sources.append(StructureSource(quoting, example=quoting.tokenize(example) if example else []))
    return sources


def pick(offers: Sequence[tuple[CopySource, Offer]]) -> tuple[Offer, Offer | None]:
    """The offer to price this round, and one passed over that is judged beside it (None: none).
    `offers` come in the order of their sources' list. Of the offers of sources that do not
    lead, the longest match wins, the earlier among equals; a leading source's offer (the
    prediction's) takes that one's place where they agree on their first tokens (with the longer
    of their matches), and else the longer match of the two wins, the leading one among equals,
    and the other is judged beside it."""
    offered = [(source, offer) for source, offer in offers if offer.tokens]
    leading = next((offer for source, offer in offered if source.leads), None)
    others = [offer for _, offer in offered if offer is not leading]
    best = max(others, key=lambda offer: offer.match, default=None)  # the first of the longest
    if leading is None or best is None:
        return leading or best or Offer([]), None
    if best.tokens[:_SAME] == leading.tokens[:_SAME] and leading.branch is not None:
        return replace(leading, branch=replace(leading.branch, match=max(leading.match, best.match))), None
    return (leading, best) if leading.match >= best.match else (best, leading)


class AutoDrafter(Drafter):
    """`--draft-tokens auto`: each round a `Policy` picks plain decoding, the draft model at some
    K, or a copy; `observe` feeds it what the round showed and how long it took."""

    def __init__(
        self,
        model: ModelDrafter | None,
        policy: Policy,
        shared: tuple[SuffixIndex, ...] = (),
        vocabulary: Vocabulary | None = None,
        prediction: Prediction | None = None,
        quoted: bool = False,
        example: str = "",
        sources: Sequence[CopySource] | None = None,
    ):
        """`shared`: copy sources searched after this request (a conversation, a `LookupMemory`'s
        index); `vocabulary`: the target's, for offers by the output's record pattern;
        `prediction`: the text the user expects the output to resemble (also searched by the
        copier, after this request); `quoted`: the reply is written in JSON, so the prompt's
        text escaped as JSON is searched too, after the prompt, and the reply's earlier records
        by their keys (needs `vocabulary`); `example`: a document of the reply's JSON shape
        (`grammar.schema_example` of its schema), whose keys the structure source offers in the
        reply's first record. `sources`: the copy sources, in the order that breaks ties, in
        place of those the other parameters ask for (`copy_sources`)."""
        self.model, self.policy = model, policy
        self.prediction, self.vocabulary = prediction, vocabulary
        self.example = example if quoted and vocabulary is not None else ""
        self.sources = (
            list(sources) if sources is not None else copy_sources(shared, vocabulary, prediction, quoted, example)
        )
        self.name = (model.name if model else PromptLookupDrafter.name) + " (auto)"
        self._choice = Choice(Source.PLAIN)  # this round's, which `observe` reports to the policy
        self._open: list[OpenOffer] = []  # copy offers still being judged against the output
        self._weighed = True  # whether this round weighed drafts (else it decodes plainly, unweighed)
        self._first: int | None = None  # this round's copy offer's first token (None: no offer)
        self._start = -1  # the prompt's length but its last token: a request's first round starts there

    @property
    def quoted(self) -> bool:
        """Whether the reply is read as JSON: a source copies the prompt as JSON escapes it, and
        another the reply's earlier records by their keys."""
        return any(isinstance(source, Copier) and source.quoting is not None for source in self.sources) and any(
            isinstance(source, StructureSource) for source in self.sources
        )

    def reach(self, k: int) -> int:
        """The policy holds the draft model to k; a long copy may go further."""
        return max(k, LOOKUP_MAX)

    def prepare(self, prefix: list[int]) -> None:
        """Prefill the draft model now only if it could ever pay; else it catches up when first used."""
        self.policy.prefilled()
        self._open, self._start = [], len(prefix)
        for source in self.sources:
            source.prepare(prefix)
        if self.example and self.vocabulary is not None:  # the schema's grammar foresees a reply of its shape
            self.policy.foresee(len(self.vocabulary.tokenize(self.example.split("\n", 1)[0])))  # its compact spelling
        if self.prediction is not None:
            # an earlier identical request's reply is trusted as a schema is, a user's prediction as it is
            # followed, text the prompt attached as it is reprinted and at the share any reply may lose
            name = self.prediction.name
            share = self.policy.risk if name == Source.ATTACHED else FORESEEN_RISK
            self.policy.foresee(
                len(self.prediction), prediction=name != Source.REPEAT, share=share, adds=name != Source.ATTACHED
            )
        if self.model is not None:
            self.model.prepare(prefix, prefill=self.policy.model_can_pay())

    def propose(
        self,
        history: list[int],
        last: int,
        k: int,
        params: SamplingParams,
        draws: np.ndarray | None,
        keep: Gate | None = None,
    ) -> Draft:
        if len(history) == self._start:  # the first round: the prefill's row gives its token for free
            return NO_DRAFT  # (a draft, checked by a pass of its own, could only lose: `loop._rounds`)
        self._weighed = self.policy.worth_looking()
        if not self._weighed:  # weighing drafts would cost more than drafts have earned
            return NO_DRAFT
        offer, other = self._offers(history, last)
        if self.prediction is not None:  # it has read the reply so far
            self.policy.follow(self.prediction.earned)
        lag = self.model.lag(history) if self.model is not None else 0
        tokens = tuple(offer.tokens)
        known = evidence(offer.branch, offer.record, offer.roles) if offer.branch else None
        choice = self.policy.choose(k, len(tokens), lag, known, tokens)
        self._choice = choice
        self._first = tokens[0] if tokens else None
        opened = [OpenOffer(known, tokens)] if tokens else []
        if other is not None and other.branch is not None:  # the offer not chosen is judged too, so its record learns
            opened.append(OpenOffer(evidence(other.branch, other.record, other.roles), tuple(other.tokens)))
        self._open = [*self._open[len(self._open) + len(opened) - _OPEN_MAX :], *opened]
        if choice.source == Source.LOOKUP and not tokens:  # a held pass where nothing was offered (`decoding.hold`)
            return copied([last] * choice.k, params, 0, Source.FILLER)
        if choice.source == Source.LOOKUP:
            return copied(
                offer.tokens[: choice.k], params, sum(start < choice.k for start in offer.rewrites), offer.source
            )
        if choice.source == Source.MODEL and self.model is not None:
            return self.model.propose(history, last, choice.k, params, draws, self.policy.gate())
        return NO_DRAFT

    def _offers(self, history: list[int], last: int) -> tuple[Offer, Offer | None]:
        """This round's copy offer (no tokens: none), and an offer passed over that is judged
        beside it (None where none was): `pick` over every source's offer."""
        return pick([(source, source.offer(history, last, LOOKUP_MAX)) for source in self.sources])

    def observe(self, draft: Draft, emitted: list[int], seconds: float, looked: float = 0.0) -> None:
        copies = tuple(offer.judge(emitted) for offer in self._open)
        self._open = [offer for offer in self._open if not offer.settled]
        if not self._weighed:
            self.policy.decoded_plainly(
                Outcome(Choice(Source.PLAIN), 0, len(emitted) - 1, seconds=seconds, copies=copies, looked=looked)
            )
            return
        dropped = None
        if draft.dropped is not None and draft.dropped[1] >= 0 and len(emitted) > len(draft.tokens):
            dropped = (draft.dropped[0], emitted[len(draft.tokens)] == draft.dropped[1])
        self.policy.observe(
            Outcome(
                self._choice,
                len(draft.tokens),
                len(emitted) - 1,
                tuple(draft.confidences),
                draft.lag,
                dropped,
                seconds,
                copies,
                looked,
                self._first is not None and emitted[0] == self._first,
            )
        )

    def rollback(self, history: list[int]) -> None:
        """The copy sources hold accepted tokens only; the draft model forgets its drafted ones."""
        if self.model is not None:
            self.model.rollback(history)


def evidence(branch: Branch, source: Source, roles: tuple[Role, ...] = ()) -> CopyEvidence:
    """What prices a copy offer from `branch` of a `source` kind: its match, whether it was
    re-found near the last copy's place, whether the source's other occurrences of the context
    agreed on its first token, and what its tokens held where they were written (`roles`: a
    structure-aligned offer's)."""
    if branch.occurrences > branch.agreeing:
        agreement = SPLIT
    else:
        agreement = AGREE if branch.agreeing > 1 else SINGLE
    return CopyEvidence(branch.match, branch.anchored, agreement, source, roles)
