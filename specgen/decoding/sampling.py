"""The sampling and verification math of speculative decoding, in pure numpy.

Kept apart from llama.cpp so that every rule that decides which tokens the user sees can be
checked on four-element arrays. Two rules make the output follow the target model exactly:

* the same transforms (top-k, top-p, temperature, in llama.cpp's order) turn target logits
  into p and draft logits into q, and q is the distribution the draft token was really drawn from;
* a draft token x is kept with probability min(1, p(x)/q(x)); at the first rejection the
  replacement is drawn from norm(max(p - q, 0)) (Leviathan et al. 2023, Chen et al. 2023).

At temperature 0 every distribution is one-hot on the argmax, so the same rules reduce to
"keep the draft token while it equals the target's argmax" (`verify_greedy`).

Cost matters as much as correctness: a distribution is kept sparse (only the tokens top-k or
top-p leave, found by partial selection, never a full sort of the vocabulary), computed in
float32, and the target's rows are turned into distributions only as far as the first
rejection.

Random numbers: the accept test and the target's sample at an output position come from that
position's own stream (`uniforms`), used once, by the round that settles the position; a draft
model's tokens come from a stream of the round's own (`draft_uniforms`). So whatever a drafter
chose from earlier rounds is independent of the numbers that draw and judge this round's
tokens, also where a position is drafted again after a rejection.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

_BLOCK = 512  # tokens per block when sampling a whole-vocabulary distribution
_FLOOR = 1e-3  # top-p sorts only tokens this likely relative to the top one, then 1e-6, ...


@dataclass(frozen=True)
class SamplingParams:
    """How logits become a distribution. temperature 0 means greedy."""

    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int | None = None

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0.0


@dataclass(frozen=True)
class Dist:
    """Probabilities over token `ids` (sorted), or over the whole vocabulary when `ids` is None."""

    probs: np.ndarray
    ids: np.ndarray | None = None

    def prob(self, token: int) -> float:
        return float(self.at(np.array([token]))[0])

    def at(self, tokens: np.ndarray) -> np.ndarray:
        """The probability of each token in `tokens` (0 outside the support)."""
        if self.ids is None:
            inside = tokens < self.probs.shape[0]
            return np.where(inside, self.probs[np.where(inside, tokens, 0)], 0.0)
        where = np.minimum(np.searchsorted(self.ids, tokens), self.ids.shape[0] - 1)
        return np.where(self.ids[where] == tokens, self.probs[where], 0.0)

    @property
    def top(self) -> float:
        """The largest probability: how sure the model is, whichever token is then drawn."""
        return float(self.probs.max())


def one_hot(token: int) -> Dist:
    """The distribution of a token that was copied, not sampled (prompt lookup)."""
    return Dist(np.ones(1, dtype=np.float32), np.array([token]))


def distribution(logits: np.ndarray, params: SamplingParams) -> Dist:
    """top-k, then top-p on the untempered probabilities, then temperature (llama.cpp's order)."""
    if params.greedy:
        return one_hot(int(np.argmax(logits)))
    values = np.asarray(logits, dtype=np.float32)
    ids = None
    if 0 < params.top_k < values.shape[0]:
        ids = _top_k(values, params.top_k)
        values = values[ids]
    if params.top_p < 1.0:
        keep = _nucleus(values, params.top_p)
        ids = keep if ids is None else ids[keep]
        values = values[keep]
    probs = values - values.max()  # the only vocabulary-sized allocation; the rest is in place
    probs *= np.float32(1.0 / params.temperature)
    np.exp(probs, out=probs)
    probs /= probs.sum()
    return Dist(probs, ids)


def _top_k(logits: np.ndarray, k: int) -> np.ndarray:
    """Sorted indices of the k largest logits, partitioning only those near the top."""
    top, spread = float(logits.max()), 8.0
    while True:
        candidates = np.flatnonzero(logits >= top - spread)
        if candidates.shape[0] >= k:
            break
        spread *= 4.0
    best = np.argpartition(logits[candidates], -k)[-k:]
    return np.sort(candidates[best])


def _nucleus(logits: np.ndarray, top_p: float) -> np.ndarray:
    """Sorted indices of the smallest set of most likely tokens whose mass reaches top_p.

    Only tokens above a probability floor are sorted; the floor drops until they hold the
    mass, so a peaked distribution sorts a handful of tokens, a flat one more.
    """
    probs = logits - logits.max()
    np.exp(probs, out=probs)
    need = top_p * float(probs.sum())
    floor = _FLOOR
    while True:
        candidates = np.flatnonzero(probs >= floor)
        if float(probs[candidates].sum()) >= need or floor < 1e-30:
            break
        floor *= _FLOOR
    top = candidates[np.argsort(-probs[candidates], kind="stable")]
    cut = int(np.searchsorted(np.cumsum(probs[top]), need))
    return np.sort(top[: cut + 1])


def sample(dist: Dist, u: float) -> int:
    """The token at uniform draw `u` in [0, 1) by inverse CDF, found block by block so that a
    whole-vocabulary distribution costs two short cumulative sums, not one long one."""
    probs = dist.probs
    size = probs.shape[0]
    full = size - size % _BLOCK
    blocks = np.cumsum(probs[:full].reshape(-1, _BLOCK).sum(axis=1, dtype=np.float64))
    total = (blocks[-1] if blocks.shape[0] else 0.0) + float(probs[full:].sum(dtype=np.float64))
    goal = u * total
    block = int(np.searchsorted(blocks, goal, side="right"))
    start = block * _BLOCK
    before = blocks[block - 1] if block else 0.0
    local = np.cumsum(probs[start : start + _BLOCK], dtype=np.float64)
    index = min(start + int(np.searchsorted(local, goal - before, side="right")), size - 1)
    while probs[index] == 0.0 and index > 0:  # rounding at a block edge: step back to a real token
        index -= 1
    return index if dist.ids is None else int(dist.ids[index])


def uniforms(seed: int, position: int) -> np.ndarray:
    """Two uniform draws for one output position: the accept test, the target's sample."""
    return np.random.default_rng([seed, position]).random(2)


def draft_uniforms(seed: int, round_number: int, count: int) -> np.ndarray:
    """`count` uniform draws for the draft tokens of one round, from the round's own stream (a
    spawn key keeps it apart from every position's `uniforms`)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(round_number,))).random(count)


def accepts(p: Dist, q: Dist, token: int, u: float) -> bool:
    """The p/q rule: keep `token` when u < p(token) / q(token), with u uniform in [0, 1)."""
    return u * q.prob(token) < p.prob(token)


def residual(p: Dist, q: Dist) -> Dist:
    """norm(max(p - q, 0)), which lives on p's support.

    It can only sum to zero when p == q, where a rejection has probability zero; rounding can
    still get there, and then p itself is the right distribution.
    """
    if p.ids is not None:
        diff = p.probs - q.at(p.ids)
    else:
        diff = p.probs.copy()
        if q.ids is None:
            n = min(diff.shape[0], q.probs.shape[0])
            diff[:n] -= q.probs[:n]
        else:
            inside = q.ids < diff.shape[0]
            diff[q.ids[inside]] -= q.probs[inside]
    np.maximum(diff, 0.0, out=diff)
    total = diff.sum()
    return Dist(diff / total, p.ids) if total > 0.0 else p


@dataclass(frozen=True)
class TokenLogprob:
    """An emitted token's log-probability under the target's raw row (temperature 1, no top-k,
    top-p or grammar mask: the model's own numbers), and the `top` most likely tokens' ones."""

    token: int
    logprob: float
    top: tuple[tuple[int, float], ...] = ()


def token_logprobs(rows: np.ndarray, tokens: list[int], top: int) -> tuple[TokenLogprob, ...]:
    """Log-softmax of row i at tokens[i], with the `top` largest entries of each row."""
    out = []
    for row, token in zip(rows, tokens, strict=False):  # rows may run past the tokens kept
        logits = np.asarray(row, dtype=np.float64)
        peak = logits.max()
        normaliser = peak + np.log(np.exp(logits - peak).sum())
        best = np.argpartition(logits, -top)[-top:] if 0 < top < logits.shape[0] else np.arange(0)
        best = best[np.lexsort((best, -logits[best]))]
        out.append(
            TokenLogprob(
                token, float(logits[token] - normaliser), tuple((int(t), float(logits[t] - normaliser)) for t in best)
            )
        )
    return tuple(out)


@dataclass(frozen=True)
class Verdict:
    """Outcome of checking one round of draft tokens against the target."""

    accepted: int
    token: int


def verify_greedy(target_argmax: np.ndarray, drafted: list[int]) -> Verdict:
    """Keep draft tokens while they equal the target's argmax; the next argmax follows."""
    accepted = 0
    while accepted < len(drafted) and drafted[accepted] == int(target_argmax[accepted]):
        accepted += 1
    return Verdict(accepted, int(target_argmax[accepted]))


def verify_sampled(
    p_row: Callable[[int], Dist], q_rows: list[Dist], drafted: list[int], checks: Callable[[int], np.ndarray]
) -> Verdict:
    """Speculative sampling. `p_row(i)` is the target's distribution at draft position i and
    `checks(i)` that position's uniforms (accept test [0], target sample [1]), both made only
    when reached."""
    for i, token in enumerate(drafted):
        p, u = p_row(i), checks(i)
        if not accepts(p, q_rows[i], token, u[0]):
            return Verdict(i, sample(residual(p, q_rows[i]), u[1]))
    return Verdict(len(drafted), sample(p_row(len(drafted)), checks(len(drafted))[1]))
