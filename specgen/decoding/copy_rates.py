"""How likely a copied token is to be kept: the number the auto policy prices a copy by.

A copy runs on while the output repeats the source. How far that goes depends first on the
kind of text: where the output reprints what it was given (an edit, a quotation, a revision, the
same request again) a copy that has matched a handful of tokens runs on for dozens; where the
text only repeats its own patterns (a reformat, new code, prose) copies break within a few
tokens at any match length. Measured on held-out prompts of both kinds with the suffix index's
offers, the chance that a copied token is kept rises with the match behind it (the match the
offer came from, plus the copied tokens before it) along two distinct curves, `GROUNDED` and
`LOOSE`.

`CopyRates` keeps the odds that the current text is of the grounded kind, updated from every
copied token judged (a Bayes factor between the two curves, damped because offers overlap,
and drifting back toward even so that a document that changes character is followed), and a
count per match-length bin that takes over from the mixture where the text has shown its own
rates. The kind is mixed over whole copies, not token by token: a copy either reprints its
source or does not, so the chance that its first j tokens are kept is the odds-weighted mix of
each kind's product over those j tokens (`reach`). Mixing each token's rate first and then
multiplying would treat every token as drawn anew, and a copy whose first dozen tokens were kept
would still be priced as if its kind were unknown: long copies undervalued where breaks cluster.
On top, a token that broke copies before (an identifier an edit renames) is less likely to be
kept again, and at a short match the source's own statistics count: where every earlier
occurrence of the context went on the same way the copy is likelier to hold, where they went on
differently it is not (`Agreement`).

Each kind of copy source keeps its own record (`CopyRates` per source in the policy): a record
pattern's predictions and a copy of the text can hold at different rates in the same reply. A
prediction the user gave starts from the odds that the output reprints it (`PREDICTION_ODDS`).
Pure Python: no llama.cpp, no clock.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass

from specgen.decoding.drafters.base import Source
from specgen.decoding.drafters.structure import Role
from specgen.decoding.kept import reach_of

# lower edges of the match-length bins; a match re-found near where the last copy left off
# ("anchored") is told apart while it is shorter than ANCHORED_BELOW
EDGES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
ANCHORED_BELOW = 6
_BIN_INDEX = [bisect_right(EDGES, match) - 1 for match in range(EDGES[-1] + 1)]  # index in EDGES by match
# keep rate of a copied token by bin of its match: text that reprints its source, text that does not
GROUNDED = {
    False: (0.32, 0.70, 0.85, 0.92, 0.93, 0.95, 0.96, 0.96, 0.97, 0.98, 0.98, 0.99),
    True: (0.45, 0.70, 0.85, 0.90),
}
LOOSE = {
    False: (0.25, 0.50, 0.50, 0.60, 0.62, 0.65, 0.65, 0.65, 0.65, 0.65, 0.65, 0.65),
    True: (0.30, 0.50, 0.55, 0.65),
}
_EVIDENCE = 0.5  # weight of one judged token's Bayes factor (overlapping offers judge a token more than once)
_ODDS_LIMIT = 6.0  # log-odds bound, so that a long stretch of one kind can still be overturned
_COPY_FORGET = 0.98  # per round, of the log-odds and of the match-bin counts
_BIN_PRIOR = 16.0  # pseudo-observations of the mixture behind a bin's own counts
_TOKEN_PRIOR = 1.0  # pseudo-observations of "kept" behind a token's own counts
TOKENS_MAX = 4096  # copied tokens whose own record is kept; the least recently judged go first
_FADES = [_COPY_FORGET**age for age in range(256)]  # what a count keeps after `age` rounds

# the prior log-odds that the output reprints a prediction the user gave (0.95 grounded): who
# sends a prediction expects the output to follow it; the record's own evidence takes over
PREDICTION_ODDS = 3.0
SINGLE, AGREE, SPLIT = "single", "agree", "split"  # how the earlier occurrences of a context went on
# odds factor of the first copied token by agreement, at matches shorter than AGREEMENT_BELOW;
# measured on the dev outputs' offers in hindsight (benchmarks/results/2026-11-26-cold-start):
# at a 1- or 2-token match, 0.53 and 0.77 of the first tokens were kept where two or more
# occurrences agreed, 0.12 and 0.11 where they split, 0.27 and 0.53 after a single occurrence
AGREEMENT_ODDS = {SINGLE: 1.0, AGREE: 3.0, SPLIT: 0.35}
AGREEMENT_BELOW = 4


@dataclass(frozen=True)
class CopyEvidence:
    """What is known of a copy offer before the target judges it: its source's kind, the tokens
    before it that equal the recent ones (`match`), whether it was re-found near where the last
    copy left off (`anchored`), and how the source's other occurrences of the context went on."""

    match: int
    anchored: bool = False
    agreement: str = SINGLE
    source: Source = Source.TEXT  # whose record prices it (`Source.STRUCTURE`'s: a `StructureRates`)
    roles: tuple[Role, ...] = ()  # a structure-aligned offer's: what each token held where it was written


@dataclass(frozen=True)
class CopyJudgement:
    """Positions start..judged-1 of a copy offer were judged this round against the emitted
    tokens (the earlier ones in earlier rounds); those before `kept` were kept. The offer: its
    evidence, or None where unknown; its tokens."""

    evidence: CopyEvidence | None
    tokens: tuple[int, ...]
    start: int
    judged: int
    kept: int


def _match_bin(anchored: bool, match: int) -> tuple[bool, int]:
    """The bin of a copied token with `match` tokens behind it: (short and anchored, index in EDGES)."""
    return anchored and match < ANCHORED_BELOW, _BIN_INDEX[min(match, EDGES[-1])]


class CopyRates:
    """One source's record: the odds that this text reprints it, counts by match bin, and tokens
    that broke copies, all fading by `_COPY_FORGET` a round."""

    def __init__(self, log_odds: float = 0.0) -> None:
        """`log_odds`: the prior odds, grounded over loose, before this text shows its own."""
        self.log_odds = log_odds
        self.bins: dict[tuple[bool, int], list[float]] = {}  # bin -> [kept, judged]
        self.tokens: dict[int, list[float]] = {}  # copied token -> [kept, judged, round last judged]
        self.round = 0

    @property
    def grounded(self) -> float:
        """The chance that this text is of the kind that reprints its source."""
        return 1.0 / (1.0 + math.exp(-self.log_odds))

    def reach(self, evidence: CopyEvidence, offer: tuple[int, ...], floor: float = 0.0) -> list[float]:
        """The chance that at least j tokens of `offer` are kept, j = 1..len(offer): each kind's
        product of its keep rates, mixed by the odds of the kind. A kind's rate at a token is its
        curve at the token's match bin, scaled by how this text's copies held in that bin against
        the mixture (`bins`) and by the token's own record; at a short match the first token's
        odds follow the source's agreement, alike for both kinds (it says whether the match is
        the place the output copies, not what kind of text it is). The list ends at the first
        chance under `floor`: no token's rate exceeds 1, so the chances after it are under it too."""
        first, runs = self._runs(evidence, offer, floor)
        return [first * run for run in runs]

    def rates(self, evidence: CopyEvidence, offer: tuple[int, ...]) -> list[float]:
        """Keep rate of each copied token of `offer`, once all before it were kept (from `reach`)."""
        first, runs = self._runs(evidence, offer)
        return [first * runs[0], *_conditional(runs)[1:]] if runs else []

    def _runs(self, evidence: CopyEvidence, offer: tuple[int, ...], floor: float = 0.0) -> tuple[float, list[float]]:
        """The agreement's factor on the first token, and the mixed runs without it, up to the
        first whose chance with that factor is under `floor`."""
        grounded = self.grounded
        out: list[float] = []
        held_grounded = held_loose = first = 1.0  # each kind's chance to keep the tokens so far
        key, bin_grounded, bin_loose = None, 1.0, 1.0  # the bin of the token before, and its two rates
        for j, token in enumerate(offer):
            if key != (key := _match_bin(evidence.anchored, evidence.match + j)):  # a bin's rates, once
                short, index = key
                rate_grounded, rate_loose = GROUNDED[short][index], LOOSE[short][index]
                prior = grounded * rate_grounded + (1.0 - grounded) * rate_loose
                kept, judged = self.bins.get(key, (0.0, 0.0))
                learnt = (kept + _BIN_PRIOR * prior) / (judged + _BIN_PRIOR) / prior
                bin_grounded, bin_loose = min(rate_grounded * learnt, 1.0), min(rate_loose * learnt, 1.0)
            kept, judged = self._token(token)
            own = (kept + _TOKEN_PRIOR) / (judged + _TOKEN_PRIOR)
            held_grounded = held_grounded * bin_grounded * own
            held_loose = held_loose * bin_loose * own
            out.append(grounded * held_grounded + (1.0 - grounded) * held_loose)
            if j == 0 and evidence.match < AGREEMENT_BELOW and out[0] > 0.0:
                first = _with_odds(out[0], AGREEMENT_ODDS[evidence.agreement]) / out[0]
            if first * out[-1] < floor:
                break
        return first, out

    def learn(self, judgement: CopyJudgement) -> None:
        evidence = judgement.evidence
        if evidence is None:
            return
        for i in range(judgement.start, min(judgement.judged, len(judgement.tokens))):
            kept = i < judgement.kept
            key = _match_bin(evidence.anchored, evidence.match + i)
            grounded, loose = GROUNDED[key[0]][key[1]], LOOSE[key[0]][key[1]]
            factor = grounded / loose if kept else (1.0 - grounded) / (1.0 - loose)
            self.log_odds = max(-_ODDS_LIMIT, min(_ODDS_LIMIT, self.log_odds + _EVIDENCE * math.log(factor)))
            cell = self.bins.setdefault(key, [0.0, 0.0])
            cell[0] += kept
            cell[1] += 1.0
            self._judge_token(judgement.tokens[i], kept)

    def forget(self) -> None:
        """One round passed: old evidence weighs a little less (a token's own record fades when
        it is next read)."""
        self.round += 1
        self.log_odds *= _COPY_FORGET
        for cell in self.bins.values():
            cell[0] *= _COPY_FORGET
            cell[1] *= _COPY_FORGET

    def _token(self, token: int) -> tuple[float, float]:
        """A token's [kept, judged], faded to this round."""
        cell = self.tokens.get(token)
        if cell is None:
            return 0.0, 0.0
        age = int(self.round - cell[2])
        fade = _FADES[age] if age < len(_FADES) else _COPY_FORGET**age
        return cell[0] * fade, cell[1] * fade

    def _judge_token(self, token: int, kept: bool) -> None:
        held, judged = self._token(token)
        self.tokens.pop(token, None)
        self.tokens[token] = [held + kept, judged + 1.0, self.round]  # re-inserted: the newest last
        if len(self.tokens) > TOKENS_MAX:
            for old in list(self.tokens)[: TOKENS_MAX // 4]:  # the least recently judged
                del self.tokens[old]


def _conditional(reach: list[float]) -> list[float]:
    """The chance that each token is kept once all before it were, from the chances of keeping each prefix."""
    out, before = [], 1.0
    for now in reach:
        out.append(now / before if before > 0.0 else 0.0)
        before = now
    return out


def _with_odds(rate: float, factor: float) -> float:
    """`rate` with its odds multiplied by `factor`."""
    odds = min(rate, 1.0 - 1e-9) / max(1.0 - rate, 1e-9) * factor
    return odds / (1.0 + odds)


# a structure-aligned copy's prior keep rates: of a key or punctuation after a skeleton match
# shorter than STRUCTURE_MATCH (a few symbols that close any value alike) or longer, of the first
# token of a value, of a value's later tokens once its first was kept; and the pseudo-observations
# behind each
_STRUCTURE_PRIOR = {"weak": (0.5, 4.0), "punctuation": (0.9, 4.0), "first": (0.3, 2.0), "rest": (0.8, 4.0)}
STRUCTURE_MATCH = 6
_KEY_PRIOR = 2.0  # pseudo-observations of the pooled rate behind a key's own


class StructureRates:
    """A structure-aligned copy source's record (`drafters.structure`). Such a copy is kept
    through keys and punctuation, which the records share, and breaks at the values that differ;
    whether a value repeats depends on its key (a status, a unit, a list of weekdays repeat; a
    name does not). So a copied token is priced by what it held where it was written: a key or
    punctuation at one rate, the first token of a value at its key's rate, a value's later tokens
    at the key's rate for those; each key's rates start from the pooled ones. Counts fade by
    `_COPY_FORGET` a round."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str | None], list[float]] = {}  # (class, key or None) -> [kept, judged]

    def rates(self, evidence: CopyEvidence, offer: tuple[int, ...]) -> list[float]:
        """Keep rate of each copied token of `offer`, once all before it were kept."""
        return [self._rate(role, evidence.match) for role in evidence.roles[: len(offer)]]

    def reach(self, evidence: CopyEvidence, offer: tuple[int, ...], floor: float = 0.0) -> list[float]:
        """The chance that at least j tokens of `offer` are kept, j = 1..: the product of the
        rates, up to the first under `floor`."""
        return reach_of(self.rates(evidence, offer), floor)

    def learn(self, judgement: CopyJudgement) -> None:
        evidence = judgement.evidence
        if evidence is None:
            return
        for i in range(judgement.start, min(judgement.judged, len(evidence.roles))):
            for cell in self._cells(evidence.roles[i], evidence.match):
                cell[0] += i < judgement.kept
                cell[1] += 1.0

    def forget(self) -> None:
        for cell in self.counts.values():
            cell[0] *= _COPY_FORGET
            cell[1] *= _COPY_FORGET

    def _rate(self, role: Role, match: int) -> float:
        kind = _kind(role, match)
        prior, weight = _STRUCTURE_PRIOR[kind]
        kept, judged = self.counts.get((kind, None), (0.0, 0.0))
        pooled = (kept + weight * prior) / (judged + weight)
        if role.key is None:
            return pooled
        kept, judged = self.counts.get((kind, role.key), (0.0, 0.0))
        return (kept + _KEY_PRIOR * pooled) / (judged + _KEY_PRIOR)

    def _cells(self, role: Role, match: int) -> list[list[float]]:
        kind = _kind(role, match)
        keys = (None,) if role.key is None else (None, role.key)
        return [self.counts.setdefault((kind, key), [0.0, 0.0]) for key in keys]


def _kind(role: Role, match: int) -> str:
    if role.key is None:
        return "punctuation" if match >= STRUCTURE_MATCH else "weak"
    return "first" if role.first else "rest"
