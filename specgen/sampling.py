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
rejection. Random numbers come from one small stream per output position (`uniforms`), so a
seeded run draws the same numbers for a position however the rounds before it were split.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

_FIRST_CANDIDATES = 64  # top-p looks at this many most likely tokens first, then 8x more


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

    def dense(self, size: int) -> np.ndarray:
        if self.ids is None:
            out = np.zeros(size, dtype=self.probs.dtype)
            n = min(size, self.probs.shape[0])
            out[:n] = self.probs[:n]
            return out
        out = np.zeros(size, dtype=self.probs.dtype)
        inside = self.ids < size
        out[self.ids[inside]] = self.probs[inside]
        return out

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
        ids = np.sort(np.argpartition(values, -params.top_k)[-params.top_k :])
        values = values[ids]
    if params.top_p < 1.0:
        keep = _nucleus(values, params.top_p)
        ids = keep if ids is None else ids[keep]
        values = values[keep]
    scaled = (values - values.max()) / np.float32(params.temperature)
    probs = np.exp(scaled)
    probs /= probs.sum()
    return Dist(probs, ids)


def _nucleus(logits: np.ndarray, top_p: float) -> np.ndarray:
    """Sorted indices of the smallest set of most likely tokens whose mass reaches top_p."""
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    size = probs.shape[0]
    m = _FIRST_CANDIDATES
    while True:
        if m >= size:
            top = np.argsort(-probs, kind="stable")
        else:
            part = np.argpartition(probs, -m)[-m:]
            top = part[np.argsort(-probs[part], kind="stable")]
        cut = int(np.searchsorted(np.cumsum(probs[top]), top_p))
        if cut < top.shape[0] or m >= size:
            return np.sort(top[: cut + 1])
        m *= 8


def sample(dist: Dist, u: float) -> int:
    """The token at uniform draw `u` in [0, 1) by inverse CDF."""
    cdf = np.cumsum(dist.probs)
    index = min(int(np.searchsorted(cdf, u * cdf[-1], side="right")), cdf.shape[0] - 1)
    return index if dist.ids is None else int(dist.ids[index])


def uniforms(seed: int, position: int) -> np.ndarray:
    """Three uniform draws for one output position: draft sample, accept test, target sample."""
    return np.random.default_rng([seed, position]).random(3)


def accepts(p: Dist, q: Dist, token: int, u: float) -> bool:
    """The p/q rule: keep `token` when u < p(token) / q(token), with u uniform in [0, 1)."""
    return u * q.prob(token) < p.prob(token)


def residual(p: Dist, q: Dist) -> Dist:
    """norm(max(p - q, 0)), which lives on p's support.

    It can only sum to zero when p == q, where a rejection has probability zero; rounding can
    still get there, and then p itself is the right distribution.
    """
    other = q.at(p.ids) if p.ids is not None else q.dense(p.probs.shape[0])
    diff = np.maximum(p.probs - other, 0.0)
    total = diff.sum()
    return Dist(diff / total, p.ids) if total > 0.0 else p


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


def verify_sampled(p_row: Callable[[int], Dist], q_rows: list[Dist], drafted: list[int],
                   draws: list[np.ndarray]) -> Verdict:
    """Speculative sampling. `p_row(i)` is the target's distribution at draft position i (made
    only when reached); `draws[i]` are position i's uniforms (accept test [1], target sample [2])."""
    for i, token in enumerate(drafted):
        p = p_row(i)
        if not accepts(p, q_rows[i], token, draws[i][1]):
            return Verdict(i, sample(residual(p, q_rows[i]), draws[i][2]))
    return Verdict(len(drafted), sample(p_row(len(drafted)), draws[len(drafted)][2]))
