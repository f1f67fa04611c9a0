"""Turn benchmark runs into the reported numbers: rates, speedups, acceptance, predictions, verdict.

Pure arithmetic over the runs' Summaries, apart from llama.cpp, so every reported figure can be
checked by hand. Runs are grouped per prompt, per prompt kind and overall. A group's rate in one
repeat is its tokens over its decode time; the reported rate is the median over repeats (with
min and max); a speedup is always the ratio of two reported medians. The predicted speedup is
Leviathan et al.'s (1 - a^(K+1)) / ((1 - a)(K c + v)) with a, K, c and v measured (docs/bench-json.md).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

BASELINE = "target"


@dataclass(frozen=True)
class Spread:
    median: float
    min: float
    max: float

    @classmethod
    def of(cls, values: list[float]) -> Spread:
        return cls(statistics.median(values), min(values), max(values))


@dataclass(frozen=True)
class Prediction:
    """Leviathan et al.'s speedup from the measured acceptance and step costs (docs/bench-json.md)."""

    alpha: float  # per-token acceptance: accepted / (accepted + rounds that ended in a rejection)
    mean_draft: float  # K-bar: tokens drafted per round
    draft_cost: float  # c: seconds per drafted token / seconds per target-alone token
    round_cost: float  # v: verify + other seconds per round / seconds per target-alone token
    expected_tokens_per_round: float  # (1 - alpha^(K-bar + 1)) / (1 - alpha)
    speedup: float  # expected_tokens_per_round / (K-bar c + v)


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
    prediction: Prediction | None  # None for the target alone
    acceptance_rate: float  # accepted / drafted
    tokens_per_round: float
    acceptance_by_position: tuple[float, ...]
    decode_s: float
    draft_s: float
    verify_s: float
    other_s: float
    prefill_s: Spread  # per run

    def time_split(self) -> dict[str, float]:
        total = self.decode_s or 1.0
        return {"draft": self.draft_s / total, "verify": self.verify_s / total, "other": self.other_s / total}


@dataclass(frozen=True)
class Verdict:
    """The best configuration overall, and whether it beats the target alone in every repeat."""

    best: str
    speedup: float | None
    outcome: str  # "pays", "noise" or "costs"
    best_rate: float
    baseline_rate: float


def summarize(records, configs, prompts) -> list[Stats]:
    """Stats per prompt, per kind and overall, for each configuration (bench.Config)."""
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
            stats.append(runs.stats(group, key, config, base))
    return stats


class _Totals:
    """Sums over a list of runs of one configuration."""

    def __init__(self, runs):
        summaries = [r.summary for r in runs]
        self.runs = len(runs)
        for name in ("tokens", "rounds", "drafted", "accepted", "decode_s", "draft_s", "verify_s", "other_s"):
            setattr(self, name, sum(getattr(s, name) for s in summaries))
        self.rejections = sum(r.rejections for r in runs)
        width = max((len(s.drafted_by_position) for s in summaries), default=0)
        self.drafted_at = [sum(_at(s.drafted_by_position, i) for s in summaries) for i in range(width)]
        self.accepted_at = [sum(_at(s.accepted_by_position, i) for s in summaries) for i in range(width)]
        self.rate = Spread.of(_rates_by_repeat(runs))
        self.prefill = Spread.of([s.prefill_s for s in summaries])

    def stats(self, group: str, key: str, config, base: _Totals) -> Stats:
        return Stats(
            group=group, key=key, config=config.name, drafter=config.drafter, k=config.k,
            adaptive=config.adaptive, runs=self.runs,
            tokens=self.tokens, rounds=self.rounds, drafted=self.drafted, accepted=self.accepted,
            tokens_per_second=self.rate,
            speedup=self.rate.median / base.rate.median if base.rate.median else None,
            prediction=self._predicted(base) if config.k else None,
            acceptance_rate=self.accepted / self.drafted if self.drafted else 0.0,
            tokens_per_round=self.tokens / self.rounds if self.rounds else 0.0,
            acceptance_by_position=tuple(a / d if d else 0.0 for a, d in zip(self.accepted_at, self.drafted_at)),
            decode_s=self.decode_s, draft_s=self.draft_s, verify_s=self.verify_s, other_s=self.other_s,
            prefill_s=self.prefill,
        )

    def _predicted(self, base: _Totals) -> Prediction | None:
        """Expected tokens per round over the round's cost, both in target-alone steps."""
        if not (base.tokens and self.rounds):
            return None
        step = base.decode_s / base.tokens
        tested = self.accepted + self.rejections
        alpha = self.accepted / tested if tested else 0.0
        k = self.drafted / self.rounds
        c = (self.draft_s / self.drafted) / step if self.drafted else 0.0
        v = (self.verify_s + self.other_s) / self.rounds / step
        expected = expected_tokens_per_round(alpha, k)
        return Prediction(alpha, k, c, v, expected, expected / (k * c + v))


def expected_tokens_per_round(alpha: float, k: float) -> float:
    """Leviathan et al. (2023), eq. 1: (1 - alpha^(k+1)) / (1 - alpha), k + 1 at alpha = 1."""
    return k + 1 if alpha >= 1.0 else (1 - alpha ** (k + 1)) / (1 - alpha)


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
    """Best overall speedup; it pays only if each of its repeats beats the baseline's median rate."""
    overall = [s for s in stats if s.group == "overall"]
    base = next(s for s in overall if s.config == BASELINE)
    best = max((s for s in overall if s.config != BASELINE), key=lambda s: s.speedup or 0.0)
    if best.tokens_per_second.min > base.tokens_per_second.median:
        outcome = "pays"
    elif best.tokens_per_second.max < base.tokens_per_second.median:
        outcome = "costs"
    else:
        outcome = "noise"
    return Verdict(best.config, best.speedup, outcome, best.tokens_per_second.median, base.tokens_per_second.median)


def csv_rows(stats: list[Stats]) -> list[dict]:
    """One flat row per Stats for --csv."""
    rows = []
    for s in stats:
        split, p = s.time_split(), s.prediction
        rows.append({
            "group": s.group, "key": s.key,
            "config": s.config, "drafter": s.drafter, "k": s.k, "adaptive": s.adaptive, "runs": s.runs,
            "tokens": s.tokens,
            "tokens_per_second": s.tokens_per_second.median, "tokens_per_second_min": s.tokens_per_second.min,
            "tokens_per_second_max": s.tokens_per_second.max, "speedup": s.speedup,
            "predicted_speedup": p.speedup if p else None, "acceptance_rate": s.acceptance_rate,
            "alpha": p.alpha if p else None, "expected_tokens_per_round": p.expected_tokens_per_round if p else None,
            "tokens_per_round": s.tokens_per_round,
            "acceptance_by_position": ";".join(f"{a:.4f}" for a in s.acceptance_by_position),
            "draft_fraction": split["draft"], "verify_fraction": split["verify"], "other_fraction": split["other"],
            "prefill_s": s.prefill_s.median,
        })
    return rows
