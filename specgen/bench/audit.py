"""The exactness audits of a benchmark: greedy outputs token for token, sampled ones by distribution.

At temperature 0 each output must equal the target alone's token for token; where it does not,
`divergence` reads the target's top-2 logit margin at the first difference and replays the run's
own verify batches on the target up to that position: a token that the target's own batched
arithmetic picks there (kernels round differently by batch shape) is told apart from a bug. An
output that ended at an end-of-text token is judged like any other token: the end token the
target weighs most there is its token, with its margin.

When sampling, outputs differ from run to run by design, so exactness is a statement about
distributions: at every position, the token a speculative configuration emits must be
distributed as the target alone's. For each prompt, the target alone and each configuration
generate the first few tokens under many seeds (distinct seeds per configuration, so the samples
are independent), each built as the timed runs build it (`plan.generation`: the same grammar,
prediction and JSON copies). Per position a chi-square test of homogeneity compares the two
samples' token counts, tokens seen fewer than 10 times in both together pooled into one category
(an output that ended counts as an "end" token). A check's p-value is the smallest over its
positions times their number, and the audit's is the smallest check's times the number of checks
(Bonferroni: valid however the positions depend on one another). The audit passes at the 0.001 level.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np

from specgen.bench.plan import NOTHING_ASKED, Asked, Config, Plan, Rounds, RunRecord, generation
from specgen.bench.stats import BASELINE
from specgen.decoding.drafters.base import Drafter
from specgen.decoding.loop import GenerationConfig, round_rows
from specgen.llama.grammar import Grammar
from specgen.llama.model import Model
from specgen.llama.vocabmap import DraftVocabulary

LEVEL = 0.001
MIN_COUNT = 10  # a category needs this many tokens in both samples together, else it is pooled
END = -1  # the "token" of positions after an output ended
NEAR_TIE = 0.05  # logits: a top-2 margin this small can flip between batched and single-token passes

MakeDrafter = Callable[[Config, Model, "Model | DraftVocabulary | None"], "Drafter | None"]


@dataclass(frozen=True)
class Divergence:
    """Where an output (position 0: its first generated token) first leaves the target alone's.

    A token of None means that output ended there (at -n, say) without the target choosing an end token.
    """

    position: int
    baseline_token: int | None
    other_token: int | None
    baseline_text: str
    other_text: str
    top2_margin: float
    near_tie: bool
    # the target itself, replaying the run's batches (else batches of 2..16), picks other_token
    batched_flip: bool = False


@dataclass(frozen=True)
class Audit:
    prompt: int
    config: str
    runs: int
    diverged: int
    first: Divergence | None


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


def distribution_audit(
    target: Model,
    draft: Model | DraftVocabulary | None,
    prompts: list[list[int]],
    plan: Plan,
    make_drafter: MakeDrafter,
    started: Callable[[int, int, Config], None] | None = None,
    asks: Sequence[Asked] = (),
) -> DistributionAudit:
    """Sample plan.audit_tokens tokens under plan.audit_seeds seeds per configuration and prompt; test.

    `make_drafter(config, target, draft)` builds a configuration's drafter (None for the target alone);
    `started(done, prompt, config)` is called before each configuration's samples on a prompt;
    `asks[p]`: what prompt p asks of every run (its grammar, prediction, JSON), as in the timed runs.
    """
    n, width = plan.audit_seeds, plan.audit_tokens
    first_seed = plan.sampling.seed or 0
    checks = []
    for p, prompt in enumerate(prompts):
        samples = {}
        asked = asks[p] if p < len(asks) else NOTHING_ASKED
        for index, config in enumerate(plan.configs):
            if started is not None:
                started((p * len(plan.configs) + index) * n, p, config)
            seeds = range(first_seed + index * n, first_seed + (index + 1) * n)
            settings = [
                GenerationConfig(max_tokens=width, draft_tokens=config.k, sampling=replace(plan.sampling, seed=s))
                for s in seeds
            ]
            samples[config.name] = [
                sample_tokens(target, make_drafter(config, target, draft), prompt, config, g, asked) for g in settings
            ]
        baseline, *others = plan.configs
        for config in others:
            tests = tuple(
                position_test(i, [s[i] for s in samples[baseline.name]], [s[i] for s in samples[config.name]])
                for i in range(width)
            )
            worst = min(t.p_value for t in tests)
            checks.append(DistributionCheck(p, config.name, n, tests, min(1.0, worst * width)))
    overall = min(1.0, min((c.p_value for c in checks), default=1.0) * len(checks))
    return DistributionAudit(n, width, LEVEL, tuple(checks), overall, overall >= LEVEL)


def sample_tokens(
    target: Model,
    drafter: Drafter | None,
    prompt: list[int],
    config: Config,
    settings: GenerationConfig,
    asked: Asked = NOTHING_ASKED,
) -> list[int]:
    """The first `settings.max_tokens` tokens of one sampled generation, built as the timed runs
    build it (`plan.generation`), END-padded where it stopped early."""
    tokens: list[int] = []
    with generation(target, drafter, prompt, config, settings, asked) as sampled:
        sampled.consume(lambda event: tokens.extend(event.tokens))
    width = settings.max_tokens
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
    common: list[tuple[int, int]] = []
    rare = (0, 0)
    for token in sorted(a.keys() | b.keys()):
        pair = (a[token], b[token])
        if sum(pair) >= MIN_COUNT:
            common.append(pair)
        else:
            rare = (rare[0] + pair[0], rare[1] + pair[1])
    if sum(rare) >= MIN_COUNT or not common:
        return [*common, rare] if sum(rare) else common
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
        for observed, row in zip(column, rows, strict=True):
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


def audit(
    target: Model, prompts: list[list[int]], records: list[RunRecord], grammars: list[str | None] | None = None
) -> list[Audit]:
    """Compare every run with the target alone's first run on the same prompt (greedy runs only);
    `grammars`: each prompt's GBNF where its output was constrained."""
    reference = {r.prompt: r for r in records if r.config == BASELINE and r.repeat == 0}
    groups: dict[tuple[int, str], list[RunRecord]] = {}
    for record in records:
        groups.setdefault((record.prompt, record.config), []).append(record)
    audits = []
    for (p, config), runs in groups.items():
        base = reference[p]
        bad = [r for r in runs if r.output != base.output]
        gbnf = grammars[p] if grammars else None
        ended = (base.summary.stop_reason == "eog", bad[0].summary.stop_reason == "eog") if bad else (False, False)
        first = (
            divergence(target, prompts[p], base.ids(), bad[0].ids(), bad[0].rounds, base.rounds, gbnf, ended)
            if bad
            else None
        )
        audits.append(Audit(p, config, len(runs), len(bad), first))
    return audits


def divergence(
    target: Model,
    prompt: list[int],
    expected: tuple[int, ...],
    got: tuple[int, ...],
    rounds: Rounds = (),
    expected_rounds: Rounds = (),
    gbnf: str | None = None,
    ended: tuple[bool, bool] = (False, False),
) -> Divergence:
    """The first position where `got` leaves `expected`, the target's top-2 margin there, and
    whether the target's own batched passes pick `got`'s token there. Where the runs' rounds are
    known their passes are replayed (the logits of both then are exactly those the runs saw);
    else the target alone's logits come as its prefill and one-token passes make them and the
    last 2..16 tokens are tried as one batch. A near-tie: both tokens within NEAR_TIE of the
    best. Under a grammar (`gbnf`) only the tokens it allows there compete, as they did in the
    runs: the margin, the best and the batched choice are taken among them. `ended`: whether
    `expected` and `got` stopped at an end-of-text token; one that stopped at `position` has
    there the end token the target weighs most, judged like any other token (a near-tie with its
    margin, not "a bug")."""
    differ = (i for i, (a, b) in enumerate(zip(expected, got, strict=False)) if a != b)
    position = next(differ, min(len(expected), len(got)))
    prefix = [*prompt, *expected[:position]]
    mask = allowed_mask(target, gbnf, expected[:position]) if gbnf is not None else None
    replayed = replayed_logits(target, prompt, expected, expected_rounds, position) if expected_rounds else None
    if replayed is None:  # the first token's row comes from the prefill's batch, as in the runs
        replayed = target.start(prompt)[0][0].copy() if position == 0 else logits_after(target, prefix)
    logits = _masked(replayed, mask)
    second, first = np.partition(logits, -2)[-2:]
    base = _token_at(target, expected, position, logits, ended[0])
    other = _token_at(target, got, position, logits, ended[1])
    # ties of 3+ too
    near = base is not None and other is not None and bool(max(first - logits[base], first - logits[other]) <= NEAR_TIE)
    if rounds:
        row = replayed_logits(target, prompt, got, rounds, position) if other is not None else None
        flip = row is not None and int(np.argmax(_masked(row, mask))) == other
    else:
        flip = other is not None and other in batched_choices(target, prefix, mask)
    return Divergence(
        position, base, other, _piece(target, base), _piece(target, other), float(first - second), near or flip, flip
    )


def allowed_mask(target: Model, gbnf: str, output: tuple[int, ...]) -> np.ndarray:
    """Which tokens the grammar allows after `output` (a bool per vocabulary id)."""
    with Grammar(target, gbnf) as grammar:
        grammar.accept(output)
        return grammar.round(()).allowed(0, np.arange(target.n_vocab))


def _masked(logits: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    return logits if mask is None else np.where(mask, logits, -np.inf)


def batched_choices(
    target: Model, tokens: list[int], mask: np.ndarray | None = None, sizes: tuple[int, ...] = (2, 4, 8, 16)
) -> set[int]:
    """The target's greedy choices (among `mask`'s tokens) after `tokens` when the last 2, 4, 8 or
    16 of them are decoded as one batch, as a verify pass does: batched kernels round differently
    from one-token ones."""
    choices = set()
    for size in (n for n in sizes if n < len(tokens)):
        target.sync(tokens[:-size])
        choices.add(int(np.argmax(_masked(target.forward(tokens[-size:], all_logits=True)[-1], mask))))
    return choices


def replayed_logits(
    target: Model, prompt: list[int], output: tuple[int, ...], rounds: Rounds, position: int
) -> np.ndarray | None:
    """The target's logits for output `position` with its passes replayed as the run made them:
    the same prefill (the prompt's last row from it), then each round's batch [last, drafted...]
    (the first round's: its draft alone, after that row), rolled back to what was kept. The
    cache then holds the numbers the run's did, computed by the same batch shapes, so the row is
    the one the run's verify saw (None past the rounds)."""
    target.truncate(0)
    first: np.ndarray | None = target.start(prompt)[0]
    last, start = prompt[-1], 0
    for drafted, kept in rounds:
        rows, first = round_rows(target, first, last, list(drafted)), None
        if start <= position <= start + kept:
            return rows[position - start].copy()
        target.truncate(len(target.tokens) - len(drafted) + kept)
        start += kept + 1
        if start > len(output):
            return None
        last = output[start - 1]
    return None


def _token_at(
    target: Model, output: tuple[int, ...], position: int, logits: np.ndarray, ended: bool = False
) -> int | None:
    """The output's token there. Where it ended: at an end-of-text token (`ended`), the end token
    the target weighs most there; else the end token the target chose if its best token is one,
    else None (the output was cut, at -n say)."""
    if position < len(output):
        return output[position]
    if ended:
        ends = [token for token in np.flatnonzero(np.isfinite(logits)).tolist() if target.is_eog(token)]
        if ends:
            return max(ends, key=lambda token: logits[token])
    top = int(np.argmax(logits))
    return top if target.is_eog(top) else None


def logits_after(target: Model, tokens: list[int]) -> np.ndarray:
    """The target's next-token logits after `tokens`, as the target alone computes them."""
    target.sync(tokens[:-1])
    return target.forward([tokens[-1]], all_logits=False)[0].copy()


def _piece(target: Model, token: int | None) -> str:
    if token is None or target.is_eog(token):
        return "(end)"
    return target.piece(token).decode("utf-8", errors="replace")
