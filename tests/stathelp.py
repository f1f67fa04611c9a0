"""Two-sample tests of token distributions, for the exactness tests (no scipy needed), and the
one number a planted, biased drafter peeks at."""

from __future__ import annotations

import math
from collections import Counter

from specgen.decoding.drafters.base import NO_DRAFT
from specgen.decoding.sampling import uniforms


def chi2_sf(x: float, df: int) -> float:
    """P(chi-square with df degrees of freedom > x), Wilson–Hilferty approximation."""
    if df <= 0:
        return 1.0
    z = ((x / df) ** (1 / 3) - (1 - 2 / (9 * df))) / math.sqrt(2 / (9 * df))
    return 0.5 * math.erfc(z / math.sqrt(2))


def homogeneity(a: Counter, b: Counter, min_expected: float = 5.0) -> float:
    """p-value of a chi-square test that two samples of categories share one distribution;
    categories too rare for the test are pooled into one."""
    n_a, n_b = sum(a.values()), sum(b.values())
    share_a = n_a / (n_a + n_b)
    cells: list[tuple[int, int]] = []
    pooled = [0, 0]
    for key in set(a) | set(b):
        total = a[key] + b[key]
        if total * min(share_a, 1 - share_a) < min_expected:
            pooled[0] += a[key]
            pooled[1] += b[key]
        else:
            cells.append((a[key], b[key]))
    if sum(pooled):
        cells.append((pooled[0], pooled[1]))
    stat = 0.0
    for x, y in cells:
        total = x + y
        ex, ey = total * share_a, total * (1 - share_a)
        stat += (x - ex) ** 2 / ex + (y - ey) ** 2 / ey
    return chi2_sf(stat, len(cells) - 1)


def position_pvalues(a: list[tuple[int, ...]], b: list[tuple[int, ...]]) -> list[float]:
    """One p-value per output position (its marginal), and one for the first two tokens jointly."""
    depth = min(min(len(s) for s in a), min(len(s) for s in b))
    out = [homogeneity(Counter(s[i] for s in a), Counter(s[i] for s in b)) for i in range(depth)]
    if depth >= 2:
        out.append(homogeneity(Counter(s[:2] for s in a), Counter(s[:2] for s in b)))
    return out


def accept_uniform(seed: int, prompt_length: int, history: list[int]) -> float:
    """The uniform of the accept test at the first position a round drafts after `history` (the
    prompt is `prompt_length` tokens with the last), as the loop will draw it: a cheat for planted
    biases, since drafters are never handed it."""
    return float(uniforms(seed, len(history) + 1 - prompt_length)[0])


class PeeksAtTheAcceptTest:
    """A planted bias, mixed in before a drafter: it drafts only where the accept test's uniform
    for the round's first position is small, so a drafted token is kept more often than the
    target would emit it. Every exactness test of a drafter must fail with it."""

    def prepare(self, prefix):
        super().prepare(prefix)
        self.prompt_length = len(prefix) + 1

    def propose(self, history, last, k, params, draws, keep=None):
        draft = super().propose(history, last, k, params, draws, keep)
        return draft if accept_uniform(params.seed, self.prompt_length, history) < 0.5 else NO_DRAFT
