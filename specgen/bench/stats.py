"""Turn benchmark runs into the reported numbers: rates, speedups and their intervals, predictions, verdict.

Pure arithmetic over the runs' Summaries, apart from llama.cpp, so every reported figure can be
checked by hand. Runs are grouped per prompt, per prompt kind and overall. A group's rate in one
repeat is its tokens over its decode time; the reported rate is the median over repeats (with
min and max); a speedup is always the ratio of two reported medians. Its 95% interval comes from
a seeded bootstrap over prompts and repeats, and a configuration is called faster (or slower)
only when that interval excludes 1 and a permutation test of the same runs rejects "as fast as
the target alone" at 5%: on a few runs a percentile bootstrap is far too narrow (one prompt run
twice each way called 30% of equal configurations faster or slower), while the permutation
test's level holds for any number of runs, so few runs are called "unclear", as they are. The
predicted speedup is the paper's formula with isolated step costs (a calibration outside the
loop) and the measured acceptance by position, so that its gap to the measured speedup is the
loop's own overhead (docs/bench-json.md).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from specgen.decoding.costs import StepCosts

BASELINE = "target"
ENDPOINT = "endpoint"  # the drafter of a configuration that is another server (bench.endpoint)
CONFIDENCE = 0.95
RESAMPLES = 2000
BOOTSTRAP_SEED = 2023  # fixed: the same runs always give the same interval


@dataclass(frozen=True)
class Spread:
    median: float
    min: float
    max: float

    @classmethod
    def of(cls, values: list[float]) -> Spread:
        return cls(statistics.median(values), min(values), max(values))


@dataclass(frozen=True)
class Interval:
    low: float
    high: float


@dataclass(frozen=True)
class Prediction:
    """The speedup that isolated step costs predict for the rounds that really ran.

    Costs are in single-token target passes, v(1), all from the calibration. A round that drafts
    m tokens costs v(m + 1), plus m c where the draft model drafted them (copies cost no draft
    steps), averaged over the measured mix of draft lengths; the tokens
    per round are the measured ones (with auto, long drafts come where copies are kept, so
    acceptance by position alone would mispredict them; docs/bench-json.md). Measured ÷
    predicted shows what the loop costs beyond the isolated passes.
    """

    mean_draft: float  # tokens drafted per round
    draft_cost: float  # c: one draft step / v(1) (0 without a draft model)
    round_cost: float  # mean of m c + v(m + 1) over rounds, in v(1)
    expected_tokens_per_round: float
    speedup: float  # expected_tokens_per_round / round_cost
    realized: float | None  # measured speedup / this: below 1 is the loop's own overhead


@dataclass(frozen=True)
class Stats:
    """One configuration over one group of prompts; seconds are sums over the group's runs."""

    group: str  # "prompt", "kind" or "overall"
    key: str  # the prompt's name, the kind, or "all"
    config: str
    drafter: str
    k: int  # with adaptive, the most K a round may choose
    adaptive: bool
    runs: int
    tokens: int
    rounds: int
    drafted: int
    accepted: int
    tokens_per_second: Spread
    speedup: float | None
    speedup_interval: Interval | None  # 95% bootstrap interval; None for the target, or a single run
    outcome: str | None  # "faster", "slower" or "unclear" (the interval holds 1 or p >= 0.05); None for the target
    prediction: Prediction | None  # None for the target alone, an endpoint, or without step costs
    acceptance_rate: float  # accepted / drafted
    tokens_per_round: float
    acceptance_by_position: tuple[float, ...]
    decode_s: float
    draft_s: float
    verify_s: float
    other_s: float
    prefill_s: Spread  # per run
    python_s: float = 0.0  # of the decode time, the rounds' own Python: drafting, policy, bookkeeping
    drafted_by_position: tuple[int, ...] = ()  # tokens drafted at each position, over the group's runs
    p_value: float | None = None  # the permutation test's, of "as fast as the target alone"; None as the interval
    constraint_s: float = 0.0  # of python_s: a JSON schema's grammar (masking verify rows, following the output)
    missed_copy_rounds: int = 0  # copy rounds whose first token the target refused, over the group's runs
    least_p: float | None = None  # the least p these runs' permutation test can give (`least_p`)
    repeats_to_tell: int | None = None  # the fewest repeats a prompt at which it can go under 1 - CONFIDENCE

    def time_split(self) -> dict[str, float]:
        total = self.decode_s or 1.0
        return {
            "draft": self.draft_s / total,
            "verify": self.verify_s / total,
            "other": self.other_s / total,
            "python": self.python_s / total,
            "grammar": self.constraint_s / total,
        }


@dataclass(frozen=True)
class Verdict:
    """The best configuration overall, and what its speedup's interval says."""

    best: str
    speedup: float | None
    interval: Interval | None
    outcome: str  # "pays", "noise" or "costs"
    best_rate: float
    baseline_rate: float
    p_value: float | None  # the named configuration's permutation test against the target alone
    least_p: float | None = None  # the least p its runs allow the test, however large the difference
    repeats_to_tell: int | None = None  # the fewest repeats a prompt with which the test could tell


def summarize(records, configs, prompts, costs=None, prompt_costs: Sequence[StepCosts] = ()) -> list[Stats]:
    """Stats per prompt, per kind and overall, for each configuration (bench.Config).

    `costs` (a costs.StepCosts: isolated pass times) feeds the predicted speedups; None leaves them out.
    `prompt_costs`: where given, the costs after each prompt (`StepCosts.scaled` by
    `calibrate.depth_factors`), which price that prompt's rounds.
    """
    kinds = [p.kind for p in prompts]
    groups = [("prompt", p.name, {i}) for i, p in enumerate(prompts)]
    groups += [("kind", kind, {i for i, k in enumerate(kinds) if k == kind}) for kind in dict.fromkeys(kinds)]
    groups.append(("overall", "all", set(range(len(kinds)))))
    stats = []
    for group, key, members in groups:
        chosen = [r for r in records if r.prompt in members]
        base = _Totals([r for r in chosen if r.config == BASELINE])
        for config in configs:
            runs = _Totals([r for r in chosen if r.config == config.name])
            stats.append(runs.stats(group, key, config, base, costs, prompt_costs))
    return stats


class _Totals:
    """Sums over a list of runs of one configuration."""

    tokens: int
    rounds: int
    drafted: int
    accepted: int
    lookup_rounds: int
    model_drafted: int
    missed_copy_rounds: int
    decode_s: float
    draft_s: float
    verify_s: float
    other_s: float
    python_s: float
    constraint_s: float

    def __init__(self, runs):
        summaries = [r.summary for r in runs]
        self.records = runs
        self.runs = len(runs)
        for name in (
            "tokens",
            "rounds",
            "drafted",
            "accepted",
            "decode_s",
            "draft_s",
            "verify_s",
            "other_s",
            "lookup_rounds",
            "model_drafted",
            "python_s",
            "constraint_s",
            "missed_copy_rounds",
        ):
            setattr(self, name, sum(getattr(s, name) for s in summaries))
        width = max((len(s.drafted_by_position) for s in summaries), default=0)
        self.drafted_at = [sum(_at(s.drafted_by_position, i) for s in summaries) for i in range(width)]
        self.accepted_at = [sum(_at(s.accepted_by_position, i) for s in summaries) for i in range(width)]
        self.rate = Spread.of(_rates_by_repeat(runs))
        self.prefill = Spread.of([s.prefill_s for s in summaries])

    def stats(
        self, group: str, key: str, config, base: _Totals, costs, prompt_costs: Sequence[StepCosts] = ()
    ) -> Stats:
        drafting = config.name != BASELINE
        speedup = self.rate.median / base.rate.median if base.rate.median else None
        interval = speedup_interval(self.records, base.records) if drafting else None
        p = permutation_p(self.records, base.records) if drafting else None
        shape = run_shape(self.records, base.records) if drafting else None
        return Stats(
            group=group,
            key=key,
            config=config.name,
            drafter=config.drafter,
            k=config.k,
            adaptive=config.adaptive,
            runs=self.runs,
            tokens=self.tokens,
            rounds=self.rounds,
            drafted=self.drafted,
            accepted=self.accepted,
            tokens_per_second=self.rate,
            speedup=speedup,
            speedup_interval=interval,
            outcome=outcome(interval, p) if drafting else None,
            p_value=p,
            prediction=self._predicted(config, costs, speedup, prompt_costs)
            if drafting and costs is not None and config.drafter != ENDPOINT
            else None,
            acceptance_rate=self.accepted / self.drafted if self.drafted else 0.0,
            tokens_per_round=self.tokens / self.rounds if self.rounds else 0.0,
            acceptance_by_position=tuple(
                a / d if d else 0.0 for a, d in zip(self.accepted_at, self.drafted_at, strict=True)
            ),
            decode_s=self.decode_s,
            draft_s=self.draft_s,
            verify_s=self.verify_s,
            other_s=self.other_s,
            prefill_s=self.prefill,
            python_s=self.python_s,
            drafted_by_position=tuple(self.drafted_at),
            constraint_s=self.constraint_s,
            missed_copy_rounds=self.missed_copy_rounds,
            least_p=least_p(*shape) if shape else None,
            repeats_to_tell=repeats_to_tell(*shape) if shape else None,
        )

    def _predicted(
        self, config, costs, measured: float | None, prompt_costs: Sequence[StepCosts] = ()
    ) -> Prediction | None:
        """Expected tokens per round over the round's cost, both in single target passes v(1):
        each run's rounds priced at the costs after its prompt (`prompt_costs`), else `costs`."""
        uses_model = config.drafter == "model"
        if not self.rounds or (uses_model and costs.draft_step is None):
            return None
        c = (costs.draft_step or 0.0) / costs.verify_cost(1) if uses_model else 0.0
        tokens, cost = float(self.tokens), self.model_drafted * c
        for run in self.records:
            at = prompt_costs[run.prompt] if run.prompt < len(prompt_costs) else costs
            step, summary = at.verify_cost(1), run.summary
            for m, rounds in enumerate(length_mix(summary.rounds, list(summary.drafted_by_position))):
                cost += rounds * at.verify_cost(m + 1) / step
        speedup = tokens / cost
        realized = measured / speedup if measured is not None else None
        return Prediction(self.drafted / self.rounds, c, cost / self.rounds, tokens / self.rounds, speedup, realized)


def length_mix(rounds: int, drafted_at: list[int]) -> list[int]:
    """Rounds that drafted exactly m tokens, m = 0, 1, ...; drafted_at[i] counts rounds drafting more than i."""
    at = [rounds, *drafted_at, 0]
    return [at[m] - at[m + 1] for m in range(len(at) - 1)]


def speedup_interval(runs, base_runs, resamples: int = RESAMPLES, seed: int = BOOTSTRAP_SEED) -> Interval | None:
    """95% percentile-bootstrap interval of the speedup (the ratio of median rates over repeats).

    Each resample draws prompts with replacement, the same for the configuration and the baseline
    (prompts differ far more than runs do), then repeats with replacement for each side apart:
    pairing repeats too would make three repeats look like more evidence than they are.
    None when there is only one run: nothing to resample.
    """
    cells = _cells(runs, base_runs)
    if cells is None:
        return None
    tokens, seconds = cells  # shape (2, prompts, repeats): [configuration, baseline]
    rng = np.random.default_rng(seed)
    n_prompts, n_repeats = tokens.shape[1:]
    side = np.arange(2).reshape(2, 1, 1, 1)
    prompts = rng.integers(n_prompts, size=(1, resamples, n_prompts, 1))
    repeats = rng.integers(n_repeats, size=(2, resamples, n_prompts, n_repeats))
    rates = tokens[side, prompts, repeats].sum(axis=2) / seconds[side, prompts, repeats].sum(axis=2)
    medians = np.median(rates, axis=2)
    usable = medians[1] > 0  # a resample of runs that all ended at once has no baseline rate
    if not usable.any():
        return None
    tail = (1 - CONFIDENCE) / 2
    low, high = np.quantile(medians[0][usable] / medians[1][usable], [tail, 1 - tail])
    return Interval(float(low), float(high))


def _cells(runs, base_runs) -> tuple[np.ndarray, np.ndarray] | None:
    """Tokens and decode seconds by [configuration/baseline, prompt, repeat], over the cells both ran."""
    mine = {(r.prompt, r.repeat): r.summary for r in runs}
    theirs = {(r.prompt, r.repeat): r.summary for r in base_runs}
    shared = mine.keys() & theirs.keys()
    prompts = sorted({p for p, _ in shared})
    repeats = sorted({r for _, r in shared})
    if len(prompts) * len(repeats) < 2 or len(shared) < len(prompts) * len(repeats):
        return None
    tokens = np.array([[[side[p, r].tokens for r in repeats] for p in prompts] for side in (mine, theirs)], float)
    seconds = np.array([[[side[p, r].decode_s for r in repeats] for p in prompts] for side in (mine, theirs)])
    if (tokens.sum(axis=(1, 2)) == 0).any():
        return None
    return tokens, seconds


def permutation_p(runs, base_runs, resamples: int = RESAMPLES, seed: int = BOOTSTRAP_SEED) -> float | None:
    """Two-sided p-value of "the configuration runs as fast as the baseline": under it the two
    sides' runs of one prompt are exchangeable, so the statistic (the mean over prompts of the
    log ratio of the sides' rates, each side's tokens over its seconds summed over its runs of
    that prompt) is recomputed over `resamples` random relabellings within each prompt, and p
    is the share at least as far from 0 as the observed, counting the observed (Phipson and
    Smyth 2010: never 0, and its level holds at any number of runs). Sums, not the reported
    medians, because a median ignores which side holds the extreme runs; each prompt apart,
    because runs of one round are not exchangeable across prompts. One prompt run twice each
    way cannot go under 1/3; three times, 1/10; four times, 1/35. None where there is no interval."""
    cells = _cells(runs, base_runs)
    if cells is None:
        return None
    tokens, seconds = (np.concatenate(side, axis=1) for side in cells)  # (prompts, 2 x repeats): mine, then theirs
    n_prompts, both = tokens.shape
    rng = np.random.default_rng(seed)
    labels = np.argsort(rng.random((resamples, n_prompts, both)), axis=2)
    shuffled = [np.take_along_axis(np.broadcast_to(a, labels.shape), labels, axis=2) for a in (tokens, seconds)]
    far = np.abs(_log_gaps(*shuffled))
    observed = abs(_log_gaps(tokens[None], seconds[None])[0])
    return float((1 + np.count_nonzero(far >= observed * (1 - 1e-9))) / (resamples + 1))


def run_shape(runs, base_runs) -> tuple[int, int] | None:
    """How many prompts both sides ran, and how many times each (as `permutation_p` reads them)."""
    cells = _cells(runs, base_runs)
    return None if cells is None else cells[0].shape[1:3]


def least_p(prompts: int, repeats: int) -> float:
    """The least p `permutation_p` can give `prompts` prompts run `repeats` times each way, however
    far apart the two sides are: of the C(2r, r) ways to split a prompt's 2r runs between the sides,
    at most two (the split as run and its mirror) are as extreme as a difference every run shows,
    so p is at least 2 / C(2r, r)^prompts (three prompts run once each way: 2/8)."""
    return min(1.0, 2.0 / math.comb(2 * repeats, repeats) ** prompts)


def repeats_to_tell(prompts: int, repeats: int) -> int:
    """The fewest repeats, at least `repeats`, with which `least_p` goes under 1 - CONFIDENCE."""
    while least_p(prompts, repeats) >= 1 - CONFIDENCE:
        repeats += 1
    return repeats


def _log_gaps(tokens: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    """For each (resample, prompt, mine + theirs) table: the mean over prompts of the log ratio of
    the first half's rate to the second half's (a side that made no token counts one)."""
    half = tokens.shape[2] // 2
    rate = [
        np.maximum(tokens[..., s].sum(axis=2), 1.0) / seconds[..., s].sum(axis=2)
        for s in (slice(None, half), slice(half, None))
    ]
    return np.log(rate[0] / rate[1]).mean(axis=1)


def outcome(interval: Interval | None, p: float | None = None) -> str:
    """ "faster" or "slower" only when the interval excludes 1 and the permutation test's p is
    under 1 - CONFIDENCE; else "unclear"."""
    if interval is None or p is None or p >= 1 - CONFIDENCE:
        return "unclear"
    if interval.low > 1.0:
        return "faster"
    if interval.high < 1.0:
        return "slower"
    return "unclear"


def _rates_by_repeat(runs) -> list[float]:
    """Per repeat: tokens over decode seconds of that repeat's runs (one per prompt in the group)."""
    tokens: dict[int, int] = {}
    seconds: dict[int, float] = {}
    for r in runs:
        tokens[r.repeat] = tokens.get(r.repeat, 0) + r.summary.tokens
        seconds[r.repeat] = seconds.get(r.repeat, 0.0) + r.summary.decode_s
    return [tokens[i] / seconds[i] for i in sorted(tokens)] or [0.0]


def _at(values: tuple[int, ...], i: int) -> int:
    return values[i] if i < len(values) else 0


def verdict(stats: list[Stats]) -> Verdict:
    """Speculation pays when some configuration is faster (its interval above 1): the fastest such
    one is named; it costs when every configuration is slower; otherwise it is noise. Endpoints,
    other servers, count only in a bench that has nothing else to compare."""
    overall = [s for s in stats if s.group == "overall"]
    base = next(s for s in overall if s.config == BASELINE)
    others = [s for s in overall if s.config != BASELINE]
    others = [s for s in others if s.drafter != ENDPOINT] or others
    faster = [s for s in others if s.outcome == "faster"]
    best = max(faster or others, key=lambda s: s.speedup or 0.0)
    if faster:
        result = "pays"
    elif all(s.outcome == "slower" for s in others):
        result = "costs"
    else:
        result = "noise"
    return Verdict(
        best.config,
        best.speedup,
        best.speedup_interval,
        result,
        best.tokens_per_second.median,
        base.tokens_per_second.median,
        best.p_value,
        best.least_p,
        best.repeats_to_tell,
    )


def csv_rows(stats: list[Stats]) -> list[dict]:
    """One flat row per Stats for --csv."""
    rows = []
    for s in stats:
        split, p, ci = s.time_split(), s.prediction, s.speedup_interval
        rows.append(
            {
                "group": s.group,
                "key": s.key,
                "config": s.config,
                "drafter": s.drafter,
                "k": s.k,
                "adaptive": s.adaptive,
                "runs": s.runs,
                "tokens": s.tokens,
                "tokens_per_second": s.tokens_per_second.median,
                "tokens_per_second_min": s.tokens_per_second.min,
                "tokens_per_second_max": s.tokens_per_second.max,
                "speedup": s.speedup,
                "speedup_low": ci.low if ci else None,
                "speedup_high": ci.high if ci else None,
                "p_value": s.p_value,
                "outcome": s.outcome,
                "predicted_speedup": p.speedup if p else None,
                "acceptance_rate": s.acceptance_rate,
                "expected_tokens_per_round": p.expected_tokens_per_round if p else None,
                "tokens_per_round": s.tokens_per_round,
                "acceptance_by_position": ";".join(f"{a:.4f}" for a in s.acceptance_by_position),
                "draft_fraction": split["draft"],
                "verify_fraction": split["verify"],
                "other_fraction": split["other"],
                "prefill_s": s.prefill_s.median,
            }
        )
    return rows
