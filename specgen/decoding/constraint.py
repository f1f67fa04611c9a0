"""What the loop asks of a constraint on the output (a grammar, a JSON schema), and the
masked verification that keeps a constrained reply exact under speculation.

A constraint allows some tokens after each accepted history. The constrained target alone
masks each row (forbidden tokens get -inf) and then samples as usual: top-k, top-p and
temperature act on the allowed tokens. Under speculation the verify pass holds a row for each
drafted position, so row i is masked by the constraint's state after the accepted history and
the draft tokens before i, and a draft token the constraint forbids has probability 0 in its
row: greedy never matches it, the p/q rule never keeps it. The target's own token at a
rejection or at the bonus comes from the masked row. So the emitted tokens are what the
constrained target alone emits, greedy and sampled.

Asking a grammar about the whole vocabulary is slow (tens of milliseconds on a 150k-token
vocabulary), so a row is asked about only as many of its most likely tokens as the answer
needs: greedy, the top token, then the top 16, 512, ...; top-k, until k allowed tokens are
found. Only sampling without top-k masks whole rows, as it must to normalise them.

The loop stays free of any grammar engine: `specgen.llama.grammar` implements `Constraint`
over llama.cpp's grammar sampler.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from specgen.decoding.sampling import Dist, SamplingParams, Verdict, distribution, verify_sampled
from specgen.errors import SpecgenError

_WIDTHS = (16, 512)  # top tokens asked about, after the top one and before the whole row


class RowMasks(Protocol):
    """One round's view of a constraint: row i is judged in the state after the accepted history
    and the draft tokens before i. Rows are asked about in order, and row i only once the draft
    tokens before it were kept; the view is dropped after the round (the rollback: nothing it
    saw of the draft stays)."""

    def allowed(self, row: int, tokens: np.ndarray) -> np.ndarray:
        """For each of `tokens`, whether it may stand at row `row` (a bool array)."""


class Constraint(Protocol):
    """A constraint on the output; its state follows the accepted tokens (`accept`), and each
    round's draft is seen through `round`, which leaves that state as it was."""

    def round(self, drafted: Sequence[int]) -> RowMasks:
        """The view that masks this round's verify rows (row i after drafted[:i])."""

    def accept(self, tokens: Sequence[int]) -> None:
        """The output grew by `tokens` (each allowed where it stands)."""


def verify_constrained(
    rows: np.ndarray,
    drafted: list[int],
    q: list[Dist],
    params: SamplingParams,
    checks: Callable[[int], np.ndarray],
    masks: RowMasks,
) -> Verdict:
    """The target's verdict on a draft, each row masked by the constraint's state at its place:
    greedy comparison with each masked row's argmax, or the p/q rule on masked rows (`checks(i)`:
    the uniforms of draft position i, as verify_sampled takes them)."""
    if params.greedy:
        accepted = 0
        while True:
            token = masked_argmax(rows[accepted], accepted, masks)
            if accepted == len(drafted) or drafted[accepted] != token:
                return Verdict(accepted, token)
            accepted += 1
    return verify_sampled(lambda i: masked_distribution(rows[i], i, masks, params), q, drafted, checks)


def masked_argmax(logits: np.ndarray, row: int, masks: RowMasks) -> int:
    """The most likely allowed token (the lowest id among equals, as np.argmax picks)."""
    best = int(np.argmax(logits))
    if masks.allowed(row, np.array([best]))[0]:
        return best
    for width in (w for w in _WIDTHS if w < logits.shape[0]):
        ids = _top(logits, width)
        allowed = masks.allowed(row, ids)
        if allowed.any():
            return int(ids[np.argmax(allowed)])
    allowed = _whole(logits, row, masks)
    return int(np.argmax(np.where(allowed, logits, -np.inf)))


def masked_distribution(logits: np.ndarray, row: int, masks: RowMasks, params: SamplingParams) -> Dist:
    """The row's distribution with the forbidden tokens masked first: top-k, top-p and
    temperature act on the allowed tokens (top-k over fewer allowed than k keeps them all).
    With top-k the k most likely allowed tokens are all that matter, so only the top few times
    k are asked about first."""
    for width in (4 * params.top_k, 64 * params.top_k) if 0 < 64 * params.top_k < logits.shape[0] else ():
        ids = _top(logits, width)
        allowed = ids[masks.allowed(row, ids)]
        if allowed.shape[0] >= params.top_k:
            break
    else:
        allowed = np.flatnonzero(_whole(logits, row, masks))
    masked = np.full(logits.shape[0], -np.inf, dtype=np.float32)
    masked[allowed] = logits[allowed]
    top_k = min(params.top_k, allowed.shape[0])
    return distribution(masked, SamplingParams(params.temperature, top_k, params.top_p, params.seed))


def _whole(logits: np.ndarray, row: int, masks: RowMasks) -> np.ndarray:
    allowed = masks.allowed(row, np.arange(logits.shape[0]))
    if not allowed.any():
        raise SpecgenError("the output's grammar allows no token of this model here; simplify the schema")
    return allowed


def _top(logits: np.ndarray, width: int) -> np.ndarray:
    """The `width` most likely tokens and any tied with the last of them, most likely first (the
    lower id first among equals)."""
    floor = logits[np.argpartition(logits, -width)[-width]]
    ids = np.flatnonzero(logits >= floor)
    return ids[np.lexsort((ids, -logits[ids]))]
