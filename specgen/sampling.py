"""The sampling and verification math of speculative decoding, in pure numpy.

Kept apart from llama.cpp so that every rule that decides which tokens the user sees can be
checked on four-element arrays. Two rules make the output follow the target model exactly:

* the same transforms (temperature, top-k, top-p) turn target logits into p and draft logits
  into q, and q is the distribution the draft token was really drawn from;
* a draft token x is kept with probability min(1, p(x)/q(x)); at the first rejection the
  replacement is drawn from norm(max(p - q, 0)) (Leviathan et al. 2023, Chen et al. 2023).

At temperature 0 every distribution is one-hot on the argmax, so the same rules reduce to
"keep the draft token while it equals the target's argmax".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


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


def one_hot(index: int, size: int) -> np.ndarray:
    out = np.zeros(size, dtype=np.float64)
    out[index] = 1.0
    return out


def distribution(logits: np.ndarray, params: SamplingParams) -> np.ndarray:
    """Probabilities after temperature, then top-k, then top-p (float64, sums to 1)."""
    if params.greedy:
        return one_hot(int(np.argmax(logits)), logits.shape[-1])
    scaled = logits.astype(np.float64) / params.temperature
    if 0 < params.top_k < scaled.shape[-1]:
        cutoff = np.partition(scaled, -params.top_k)[-params.top_k]
        scaled = np.where(scaled >= cutoff, scaled, -np.inf)
    probs = np.exp(scaled - scaled.max())
    probs /= probs.sum()
    if params.top_p < 1.0:
        probs = _nucleus(probs, params.top_p)
    return probs


def _nucleus(probs: np.ndarray, top_p: float) -> np.ndarray:
    """Keep the smallest set of most likely tokens whose mass reaches top_p."""
    candidates = np.flatnonzero(probs)
    order = candidates[np.argsort(-probs[candidates], kind="stable")]
    mass = np.cumsum(probs[order])
    keep = order[: int(np.searchsorted(mass, top_p)) + 1]
    out = np.zeros_like(probs)
    out[keep] = probs[keep]
    return out / out.sum()


def sample(probs: np.ndarray, rng: np.random.Generator) -> int:
    """Draw one index from a distribution (inverse CDF, one uniform draw)."""
    cdf = np.cumsum(probs)
    index = int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"))
    return min(index, probs.shape[-1] - 1)


def accepts(p: np.ndarray, q: np.ndarray, token: int, u: float) -> bool:
    """The p/q rule: keep `token` when u < p(token) / q(token), with u uniform in [0, 1)."""
    return u * q[token] < p[token]


def residual(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """norm(max(p - q, 0)); q may be shorter than p (a draft vocabulary without padding).

    The residual can only sum to zero when p == q, where a rejection has probability zero;
    rounding can still get there, and then p itself is the right distribution.
    """
    diff = p.copy()
    diff[: q.shape[-1]] -= q[: p.shape[-1]]
    np.maximum(diff, 0.0, out=diff)
    total = diff.sum()
    return diff / total if total > 0.0 else p


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
    p_rows: list[np.ndarray],
    q_rows: list[np.ndarray],
    drafted: list[int],
    rng: np.random.Generator,
) -> Verdict:
    """Speculative sampling: p_rows has one more row than drafted (the bonus position)."""
    for i, token in enumerate(drafted):
        if not accepts(p_rows[i], q_rows[i], token, rng.random()):
            return Verdict(i, sample(residual(p_rows[i], q_rows[i]), rng))
    return Verdict(len(drafted), sample(p_rows[len(drafted)], rng))
