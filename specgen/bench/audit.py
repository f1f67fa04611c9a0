"""The sampling counterpart of bench's greedy audit: do speculative outputs follow the target's distribution?

When sampling, outputs differ from run to run by design, so exactness is a statement about
distributions: at every position, the token a speculative configuration emits must be
distributed as the target alone's. For each prompt, the target alone and each configuration
generate the first few tokens under many seeds (distinct seeds per configuration, so the samples
are independent). Per position a chi-square test of homogeneity compares the two samples' token
counts, tokens seen fewer than 10 times in both together pooled into one category (an output
that ended counts as an "end" token). A check's p-value is the smallest over its positions times
their number, and the audit's is the smallest check's times the number of checks (Bonferroni:
valid however the positions depend on one another). The audit passes at the 0.001 level.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, replace

from specgen.decoding.events import consume
from specgen.decoding.loop import GenerationConfig, generate
from specgen.llama.calibrate import drafter_for

LEVEL = 0.001
MIN_COUNT = 10  # a category needs this many tokens in both samples together, else it is pooled
END = -1  # the "token" of positions after an output ended


@dataclass(frozen=True)
class PositionTest:
    position: int  # 0 = the first generated token
    statistic: float  # Pearson's chi-square
    df: int
    p_value: float


@dataclass(frozen=True)
class DistributionCheck:
    prompt: int
    config: str
    seeds: int
    positions: tuple[PositionTest, ...]
    p_value: float  # Bonferroni over positions


@dataclass(frozen=True)
class DistributionAudit:
    seeds: int
    tokens: int
    level: float
    checks: tuple[DistributionCheck, ...]
    p_value: float  # Bonferroni over checks
    passed: bool

    def failed(self) -> list[DistributionCheck]:
        """The checks that alone make the audit fail."""
        return [c for c in self.checks if c.p_value * len(self.checks) < self.level]

    def to_dict(self, names: list[str]) -> dict:
        return {**asdict(self), "checks": [{**asdict(c), "prompt": names[c.prompt]} for c in self.checks]}


def distribution_audit(target, draft, prompts: list[list[int]], plan, make_drafter,
                       started=None) -> DistributionAudit:
    """Sample plan.audit_tokens tokens under plan.audit_seeds seeds per configuration and prompt; test.

    `make_drafter(config, target, draft)` builds a configuration's drafter (None for the target alone);
    `started(done, prompt, config)` is called before each configuration's samples on a prompt.
    """
    n, width = plan.audit_seeds, plan.audit_tokens
    first_seed = plan.sampling.seed or 0
    checks = []
    for p, prompt in enumerate(prompts):
        samples = {}
        for index, config in enumerate(plan.configs):
            if started is not None:
                started((p * len(plan.configs) + index) * n, p, config)
            seeds = range(first_seed + index * n, first_seed + (index + 1) * n)
            settings = [GenerationConfig(max_tokens=width, draft_tokens=config.k,
                                         sampling=replace(plan.sampling, seed=s)) for s in seeds]
            samples[config.name] = [sample_tokens(target, make_drafter(config, target, draft), prompt, g,
                                                  config.adaptive, width) for g in settings]
        baseline, *others = plan.configs
        for config in others:
            tests = tuple(position_test(i, [s[i] for s in samples[baseline.name]], [s[i] for s in samples[config.name]])
                          for i in range(width))
            worst = min(t.p_value for t in tests)
            checks.append(DistributionCheck(p, config.name, n, tests, min(1.0, worst * width)))
    overall = min(1.0, min((c.p_value for c in checks), default=1.0) * len(checks))
    return DistributionAudit(n, width, LEVEL, tuple(checks), overall, overall >= LEVEL)


def sample_tokens(target, drafter, prompt: list[int], settings: GenerationConfig, auto: bool,
                  width: int) -> list[int]:
    """The first `width` tokens of one sampled generation (under the auto policy where `auto`),
    END-padded where it stopped early."""
    tokens: list[int] = []
    events = generate(target, drafter_for(target, drafter, settings, auto), prompt, settings)
    consume(events, lambda event: tokens.extend(event.tokens))
    return [*tokens[:width], *[END] * (width - len(tokens))]


def position_test(position: int, a: list[int], b: list[int]) -> PositionTest:
    """Chi-square test that two samples of tokens come from one distribution (rare tokens pooled)."""
    table = pooled_table(Counter(a), Counter(b))
    if len(table) < 2:
        return PositionTest(position, 0.0, 0, 1.0)
    statistic = chi_square(table)
    df = len(table) - 1
    return PositionTest(position, statistic, df, chi2_sf(statistic, df))


def pooled_table(a: Counter, b: Counter) -> list[tuple[int, int]]:
    """(count in a, count in b) per category; categories rarer than MIN_COUNT pooled into one,
    which joins the smallest other category if it is itself too rare."""
    common, rare = [], [0, 0]
    for token in sorted(a.keys() | b.keys()):
        pair = (a[token], b[token])
        if sum(pair) >= MIN_COUNT:
            common.append(pair)
        else:
            rare = [rare[0] + pair[0], rare[1] + pair[1]]
    if sum(rare) >= MIN_COUNT or not common:
        return [*common, tuple(rare)] if sum(rare) else common
    smallest = min(range(len(common)), key=lambda i: sum(common[i]))
    common[smallest] = (common[smallest][0] + rare[0], common[smallest][1] + rare[1])
    return common


def chi_square(table: list[tuple[int, int]]) -> float:
    """Pearson's statistic for a 2-row contingency table given as columns."""
    rows = [sum(c[0] for c in table), sum(c[1] for c in table)]
    total = rows[0] + rows[1]
    statistic = 0.0
    for column in table:
        size = column[0] + column[1]
        for observed, row in zip(column, rows):
            expected = row * size / total
            statistic += (observed - expected) ** 2 / expected if expected else 0.0
    return statistic


def chi2_sf(x: float, df: int) -> float:
    """P(X >= x) for X chi-square with df degrees of freedom: the regularized upper gamma Q(df/2, x/2)."""
    if x <= 0:
        return 1.0
    a, z = df / 2, x / 2
    log_front = a * math.log(z) - z - math.lgamma(a)
    if z < a + 1:  # series for the lower function P
        term = total = 1 / a
        k = a
        while term > total * 1e-15:
            k += 1
            term *= z / k
            total += term
        return max(0.0, 1.0 - total * math.exp(log_front))
    return _upper_fraction(a, z) * math.exp(log_front)


def _upper_fraction(a: float, z: float) -> float:
    """Continued fraction for Q(a, z) / (z^a e^-z / Gamma(a)), by Lentz's method."""
    tiny = 1e-300
    b = z + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    for i in range(1, 500):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        step = d * c
        h *= step
        if abs(step - 1) < 1e-15:
            break
    return h
