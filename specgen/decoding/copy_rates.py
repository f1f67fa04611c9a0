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
rates. On top, a token that broke copies before (an identifier an edit renames) is less likely
to be kept again. Pure Python: no llama.cpp, no clock.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass

# lower edges of the match-length bins; a match re-found near where the last copy left off
# ("anchored") is told apart while it is shorter than ANCHORED_BELOW
EDGES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
ANCHORED_BELOW = 6
# keep rate of a copied token by bin of its match: text that reprints its source, text that does not
GROUNDED = {False: (0.32, 0.70, 0.85, 0.92, 0.93, 0.95, 0.96, 0.96, 0.97, 0.98, 0.98, 0.99),
            True: (0.45, 0.70, 0.85, 0.90)}
LOOSE = {False: (0.25, 0.50, 0.50, 0.60, 0.62, 0.65, 0.65, 0.65, 0.65, 0.65, 0.65, 0.65),
         True: (0.30, 0.50, 0.55, 0.65)}
_EVIDENCE = 0.5  # weight of one judged token's Bayes factor (overlapping offers judge a token more than once)
_ODDS_LIMIT = 6.0  # log-odds bound, so that a long stretch of one kind can still be overturned
_COPY_FORGET = 0.98  # per round, of the log-odds and of the match-bin counts
_BIN_PRIOR = 16.0  # pseudo-observations of the mixture behind a bin's own counts
_TOKEN_PRIOR = 1.0  # pseudo-observations of "kept" behind a token's own counts


@dataclass(frozen=True)
class CopyJudgement:
    """Positions start..judged-1 of a copy offer were judged this round against the emitted
    tokens (the earlier ones in earlier rounds); those before `kept` were kept. The offer: its
    match (anchored, length), or None where unknown; its tokens."""

    match: tuple[bool, int] | None
    tokens: tuple[int, ...]
    start: int
    judged: int
    kept: int


def _match_bin(anchored: bool, match: int) -> tuple[bool, int]:
    """The bin of a copied token with `match` tokens behind it: (short and anchored, index in EDGES)."""
    short = anchored and match < ANCHORED_BELOW
    return short, bisect_right(EDGES, min(match, EDGES[-1])) - 1


class CopyRates:
    """The odds that this text reprints its source, counts by match bin, and tokens that broke copies."""

    def __init__(self) -> None:
        self.log_odds = 0.0  # grounded over loose
        self.bins: dict[tuple[bool, int], list[float]] = {}  # bin -> [kept, judged]
        self.tokens: dict[int, list[float]] = {}  # copied token -> [kept, judged]

    @property
    def grounded(self) -> float:
        """The chance that this text is of the kind that reprints its source."""
        return 1.0 / (1.0 + math.exp(-self.log_odds))

    def rates(self, match: tuple[bool, int], offer: tuple[int, ...]) -> list[float]:
        """Keep rate of each copied token of `offer`, once all before it were kept."""
        anchored, length = match
        grounded = self.grounded
        out = []
        for j, token in enumerate(offer):
            key = _match_bin(anchored, length + j)
            prior = grounded * GROUNDED[key[0]][key[1]] + (1.0 - grounded) * LOOSE[key[0]][key[1]]
            kept, judged = self.bins.get(key, (0.0, 0.0))
            rate = (kept + _BIN_PRIOR * prior) / (judged + _BIN_PRIOR)
            kept, judged = self.tokens.get(token, (0.0, 0.0))
            out.append(rate * (kept + _TOKEN_PRIOR) / (judged + _TOKEN_PRIOR))
        return out

    def learn(self, judgement: CopyJudgement) -> None:
        if judgement.match is None:
            return
        anchored, length = judgement.match
        for i in range(judgement.start, min(judgement.judged, len(judgement.tokens))):
            kept = i < judgement.kept
            key = _match_bin(anchored, length + i)
            grounded, loose = GROUNDED[key[0]][key[1]], LOOSE[key[0]][key[1]]
            factor = grounded / loose if kept else (1.0 - grounded) / (1.0 - loose)
            self.log_odds = max(-_ODDS_LIMIT, min(_ODDS_LIMIT, self.log_odds + _EVIDENCE * math.log(factor)))
            for table, name in ((self.bins, key), (self.tokens, judgement.tokens[i])):
                cell = table.setdefault(name, [0.0, 0.0])
                cell[0] += kept
                cell[1] += 1.0

    def forget(self) -> None:
        """One round passed: old evidence weighs a little less."""
        self.log_odds *= _COPY_FORGET
        for cell in self.bins.values():
            cell[0] *= _COPY_FORGET
            cell[1] *= _COPY_FORGET
