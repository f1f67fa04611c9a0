"""Replay cost profiles and acceptance traces through the real auto policy, and find the best
rate any policy could have reached on the same rounds, without any model.

A profile is what a machine's passes really cost (a 2-core CPU as measured for Qwen2.5-Coder
1.5B:0.5B, a GPU with a nearly flat verify); the policy only sees calibrated costs that are
off by the in-loop slowdown, plus noisy timings. A trace says, round by round, how often the
draft model's tokens are kept and how far prompt lookup's proposal would match. `realize` draws
every round's outcome once, before anyone chooses: each draft position's confidence (around the
keep chance, so the gate has something to read) and whether the target keeps it, how far the
copy matches, the round's timing noise. The policy then plays those rounds (`simulate`), and
`oracle` knows them all: it picks, by dynamic programming over the rounds, the sequence of
choices with the most tokens per second under the true costs. Its rate is an upper bound on the
policy's on the same rounds, not a model of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from specgen.decoding.auto import evidence
from specgen.decoding.copy_rates import CopyJudgement
from specgen.decoding.costs import StepCosts
from specgen.decoding.drafters.base import Source
from specgen.decoding.drafters.suffix import Branch
from specgen.decoding.policy import LOOKUP_MAX, RISK, Outcome, Policy


@dataclass(frozen=True)
class Profile:
    name: str
    verify: dict[int, float]
    draft: dict[int, float]
    in_loop: float = 1.1  # true cost of a pass in the loop / its calibrated cost
    noise: float = 0.05

    def true(self) -> StepCosts:
        return StepCosts(
            {n: s * self.in_loop for n, s in self.verify.items()}, {n: s * self.in_loop for n, s in self.draft.items()}
        )


def _scaled(step: float, ratios: dict[int, float]) -> dict[int, float]:
    return {n: step * r for n, r in ratios.items()}


CPU_RATIOS = {1: 1.0, 2: 1.7, 3: 2.0, 4: 2.4, 6: 3.4, 8: 4.3, 12: 5.3, 16: 5.4}
CPU = Profile("cpu", _scaled(0.028, CPU_RATIOS), _scaled(0.014, CPU_RATIOS))
GPU_RATIOS = {1: 1.0, 2: 1.01, 3: 1.02, 4: 1.03, 6: 1.05, 8: 1.08, 12: 1.4, 16: 1.6}
GPU = Profile("gpu", _scaled(0.012, GPU_RATIOS), _scaled(0.0018, GPU_RATIOS))


@dataclass(frozen=True)
class World:
    """The truth at one round: draft model keep rate, lookup keep rate, lookup tokens on offer."""

    model: float
    lookup: float
    offer: int


Trace = Callable[[int, int], World]  # (round, rounds) -> World
COPY_MATCH = Branch(0, 0, 8)  # every copy offer comes from an 8-token match


def steady(r: int, n: int) -> World:
    return World(0.8, 0.5, 8 if r % 3 == 0 else 0)


def drifting(r: int, n: int) -> World:
    x = r / n
    return World(0.9 - 0.6 * x, 0.2 + 0.7 * x, 12)


def collapsing(r: int, n: int) -> World:
    return World(0.9, 0.2, 4) if r < n // 2 else World(0.1, 0.05, 4)


def recovering(r: int, n: int) -> World:
    return World(0.1, 0.1, 6) if r < n // 2 else World(0.9, 0.1, 6)


def copying(r: int, n: int) -> World:
    return World(0.6, 0.92, 16)


TRACES = {
    "steady": steady,
    "drifting": drifting,
    "collapsing": collapsing,
    "recovering": recovering,
    "copying": copying,
}


@dataclass
class Run:
    tokens: int = 0
    seconds: float = 0.0
    choices: dict | None = None

    def rate(self) -> float:
        return self.tokens / self.seconds


@dataclass(frozen=True)
class Realized:
    """One round's outcome, fixed before any choice: the world, the copy's match, each draft
    position's confidence and whether the target keeps it, and the timing's multiplier."""

    world: World
    match: int
    chances: tuple[float, ...]
    keeps: tuple[bool, ...]
    slowdown: float

    @property
    def model_run(self) -> int:
        """How many draft tokens in a row the target keeps, drafting as far as k_max."""
        return next((i for i, kept in enumerate(self.keeps) if not kept), len(self.keeps))


def realize(
    profile: Profile, trace: Trace, rounds: int = 3000, k_max: int = 8, seed: int = 0, hiccup_at: int | None = None
) -> list[Realized]:
    """Every round's outcome, drawn once from the trace; `hiccup_at`: a round timed ten times too slow."""
    rng = np.random.default_rng(seed)
    out = []
    for r in range(rounds):
        world = trace(r, rounds)
        match = next((i for i in range(world.offer) if rng.random() >= world.lookup), world.offer)
        chances = rng.beta(4 * world.model + 0.1, 4 * (1 - world.model) + 0.1, k_max)
        keeps = rng.random(k_max) < chances
        slowdown = rng.lognormal(0, profile.noise) * (10 if r == hiccup_at else 1)
        out.append(Realized(world, match, tuple(map(float, chances)), tuple(map(bool, keeps)), slowdown))
    return out


def simulate(profile: Profile, rounds: list[Realized], k_max: int = 8, skip: int = 0, risk: float = RISK) -> Run:
    """The real policy over realized rounds: tokens and seconds (the first `skip` rounds not
    counted); `risk`: the policy's loss bound (`math.inf`: none)."""
    truth = profile.true()
    policy = Policy(StepCosts(dict(profile.verify), dict(profile.draft)), k_max, risk=risk)
    run, lag = Run(choices={Source.PLAIN: 0, Source.MODEL: 0, Source.LOOKUP: 0}), 0
    for r, real in enumerate(rounds):
        offer = tuple(range(100 * r, 100 * r + real.world.offer))  # fresh tokens: no token is known to break
        choice = policy.choose(LOOKUP_MAX, real.world.offer, lag, evidence(COPY_MATCH, Source.TEXT), offer)
        drafted, accepted, confidences, dropped = 0, 0, (), None
        if choice.source == Source.MODEL:
            drafted, accepted, confidences, dropped = _model_round(policy, choice.k, real)
        elif choice.source == Source.LOOKUP:
            drafted, accepted = choice.k, min(real.match, choice.k)
        seconds = round_seconds(truth, choice.source, drafted, lag) * real.slowdown
        emitted = accepted + 1
        hits = min(real.match, emitted)  # the offer, judged in hindsight against the emitted tokens
        judged = CopyJudgement(
            evidence(COPY_MATCH, Source.TEXT), offer, 0, min(real.world.offer, emitted, hits + 1), hits
        )
        policy.observe(
            Outcome(
                choice, drafted, accepted, confidences, lag, dropped, seconds, (judged,) if real.world.offer else ()
            )
        )
        lag = 0 if choice.source == Source.MODEL else lag + emitted
        if r >= skip:
            run.tokens += emitted
            run.seconds += seconds
            run.choices[choice.source] += 1
    return run


def _model_round(policy: Policy, k: int, real: Realized):
    """Draft up to k tokens, as far as the policy's gate lets them through; the target keeps
    them as the realized round says."""
    drafted, dropped, keep = k, None, policy.gate()
    for position in range(k):
        if not keep(position, real.chances[position]):
            drafted, dropped = position, (real.chances[position], real.keeps[position])
            break
    accepted = min(real.model_run, drafted)
    if dropped is not None and accepted < drafted:
        dropped = None  # the target never reached the dropped position
    return drafted, accepted, real.chances[:drafted], dropped


def round_seconds(costs: StepCosts, source: str, drafted: int, lag: int) -> float:
    """What a round costs before its noise: the verify pass, and for the draft model its
    catch-up over the `lag` tokens it missed and a step per further token."""
    verify = costs.verify_cost(drafted + 1)
    if source != Source.MODEL:
        return verify
    return verify + costs.draft_cost(lag + 1) + max(drafted - 1, 0) * costs.draft_cost(1)


def never_drafting(profile: Profile, rounds: list[Realized]) -> Run:
    """Plain decoding over the same rounds: one token a round at the true one-token cost."""
    seconds = sum(profile.true().verify_cost(1) * real.slowdown for real in rounds)
    return Run(len(rounds), seconds, {Source.PLAIN: len(rounds), Source.MODEL: 0, Source.LOOKUP: 0})


LAG_CAP = 64  # the oracle pays a catch-up of more tokens as if it were this many (a lower bound)


def oracle(profile: Profile, rounds: list[Realized], k_max: int = 8, skip: int = 0) -> Run:
    """The most tokens per second any sequence of the policy's choices (plain; the draft model
    drafting 0..k_max tokens; a copy of 1..LOOKUP_MAX) reaches on these realized rounds, paying
    the true costs, catch-ups capped at LAG_CAP tokens (cheaper, as draft costs never fall with
    size: the bound only loosens). Dinkelbach's method: the best rate is the λ at which the most
    of sum(tokens - λ seconds), found exactly by dynamic programming over the lag, is zero."""
    truth = profile.true()
    catch_up = np.array([truth.draft_cost(lag + 1) for lag in range(LAG_CAP + 2)])
    assert np.all(np.diff(catch_up) >= 0), "the bound needs draft costs that never fall with size"
    best = _best_run(truth, rounds, k_max, skip, 0.0, catch_up[: LAG_CAP + 1])
    while True:  # each step's best run is faster than the last, until none is
        run = _best_run(truth, rounds, k_max, skip, best.rate(), catch_up[: LAG_CAP + 1])
        if run.rate() <= best.rate():
            return best
        best = run


def _options(costs: StepCosts, real: Realized, k_max: int) -> list[tuple[str, int, float, bool]]:
    """Each choice of a round worth weighing: (source, tokens emitted, seconds before any
    catch-up, resets the lag); of choices alike in tokens and lag, only the quickest."""
    out = [(Source.PLAIN, 1, costs.verify_cost(1), False)]
    out += [(Source.LOOKUP, min(d, real.match) + 1, costs.verify_cost(d + 1), False) for d in range(1, LOOKUP_MAX + 1)]
    out += [
        (Source.MODEL, min(d, real.model_run) + 1, costs.verify_cost(d + 1) + max(d - 1, 0) * costs.draft_cost(1), True)
        for d in range(k_max + 1)
    ]
    quickest: dict[tuple[int, bool], tuple[str, int, float, bool]] = {}
    for option in out:
        key = (option[1], option[3])
        if key not in quickest or option[2] < quickest[key][2]:
            quickest[key] = option
    return [(source, tokens, seconds * real.slowdown, resets) for source, tokens, seconds, resets in quickest.values()]


def _best_run(
    costs: StepCosts, rounds: list[Realized], k_max: int, skip: int, rate: float, catch_up: np.ndarray
) -> Run:
    """The choices with the most sum(tokens - rate * seconds) over the counted rounds: backward
    over the rounds with the value of each lag (0..LAG_CAP), then forward from lag 0."""
    lags = np.arange(len(catch_up))
    options = [_options(costs, real, k_max) for real in rounds]
    later, best = np.zeros(len(lags)), [None] * len(rounds)
    for r in range(len(rounds) - 1, -1, -1):
        weight, slowdown = float(r >= skip), rounds[r].slowdown
        values = [
            weight * (tokens - rate * (seconds + catch_up * slowdown)) + later[0]
            if resets
            else weight * (tokens - rate * seconds) + later[np.minimum(lags + tokens, lags[-1])]
            for _, tokens, seconds, resets in options[r]
        ]
        best[r] = np.argmax(values, axis=0)
        later = np.max(values, axis=0)
    run, lag = Run(choices={Source.PLAIN: 0, Source.MODEL: 0, Source.LOOKUP: 0}), 0
    for r, real in enumerate(rounds):
        source, tokens, seconds, resets = options[r][best[r][lag]]
        seconds += catch_up[lag] * real.slowdown if resets else 0.0
        if r >= skip:
            run.tokens, run.seconds = run.tokens + tokens, run.seconds + seconds
            run.choices[source] += 1
        lag = 0 if resets else min(lag + tokens, lags[-1])
    return run
