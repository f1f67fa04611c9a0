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


KEEPS_MORE = 1.15  # a realistic bias: an accept test off by 15% (a rate computed on the wrong row, say)


def keeps_more(monkeypatch, factor: float = KEEPS_MORE) -> None:
    """Plant a bias of realistic size in the sampled verification: the p/q test keeps a drafted
    token with probability min(1, factor * p / q), `factor` times what it should."""
    from specgen.decoding import sampling

    fair = sampling.accepts
    monkeypatch.setattr(sampling, "accepts", lambda p, q, token, u: fair(p, q, token, u / factor))


def keeps_near_ties(monkeypatch, factor: float = KEEPS_MORE) -> None:
    """Plant the greedy form of that bias: a drafted token is kept where `factor` times its
    probability reaches the top token's (a near-tie read as a tie), not only where it is the top."""
    import numpy as np

    from specgen.decoding import loop
    from specgen.decoding.sampling import Verdict

    fair = loop._verify

    def verify(rows, draft, params, checks, constraint):
        if not params.greedy or constraint is not None:
            return fair(rows, draft, params, checks, constraint)
        accepted = 0
        while accepted < len(draft.tokens) and rows[accepted][draft.tokens[accepted]] >= rows[
            accepted
        ].max() - math.log(factor):
            accepted += 1
        return Verdict(accepted, int(np.argmax(rows[accepted])))

    monkeypatch.setattr(loop, "_verify", verify)


def near_tie_swaps(target, prompt: list[int], output: list[int], factor: float = KEEPS_MORE) -> list[int]:
    """`output` (the target alone's greedy one after `prompt`) with each token whose runner-up
    has more than 1 / `factor` of its probability replaced by that runner-up: a copy the exact
    greedy test refuses there, and one that reads near-ties as ties keeps."""
    import numpy as np

    target.truncate(0)
    target.sync(prompt[:-1])
    rows = target.forward([prompt[-1], *output[:-1]], all_logits=True).copy()
    swapped = list(output)
    for i, row in enumerate(rows):
        runner_up, top = np.argsort(row)[-2:]
        if row[top] - row[runner_up] < math.log(factor):
            swapped[i] = int(runner_up)
    return swapped
