"""Replay cost profiles and acceptance traces through the real auto policy, and through an
oracle that knows the truth, without any model.

A profile is what a machine's passes really cost (a 2-core CPU as measured for Qwen2.5-Coder
1.5B:0.5B, a GPU with a nearly flat verify); the policy only sees calibrated costs that are
off by the in-loop slowdown, plus noisy timings. A trace says, round by round, how often the
draft model's tokens are kept and how far prompt lookup's proposal would match. Each draft
token gets a confidence drawn around its keep chance, so the gate has something to read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from specgen.decoding.costs import StepCosts
from specgen.decoding.drafters.base import LOOKUP, MODEL, PLAIN
from specgen.decoding.drafters.suffix import Branch
from specgen.decoding.copy_rates import CopyJudgement
from specgen.decoding.auto import evidence
from specgen.decoding.copy_rates import TEXT
from specgen.decoding.policy import LOOKUP_MAX, RISK, Choice, Outcome, Policy, expected_tokens


@dataclass(frozen=True)
class Profile:
    name: str
    verify: dict[int, float]
    draft: dict[int, float]
    in_loop: float = 1.1  # true cost of a pass in the loop / its calibrated cost
    noise: float = 0.05

    def true(self) -> StepCosts:
        return StepCosts({n: s * self.in_loop for n, s in self.verify.items()},
                         {n: s * self.in_loop for n, s in self.draft.items()})


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


TRACES = {"steady": steady, "drifting": drifting, "collapsing": collapsing, "recovering": recovering,
          "copying": copying}


@dataclass
class Run:
    tokens: int = 0
    seconds: float = 0.0
    choices: dict | None = None

    def rate(self) -> float:
        return self.tokens / self.seconds


def _kept_run(rng, chances: list[float]) -> int:
    kept = 0
    for chance in chances:
        if rng.random() >= chance:
            break
        kept += 1
    return kept


def simulate(profile: Profile, trace: Trace, rounds: int = 3000, k_max: int = 8, seed: int = 0,
             oracle: bool = False, hiccup_at: int | None = None, skip: int = 0, risk: float = RISK) -> Run:
    """Tokens and seconds over `rounds` (the first `skip` rounds not counted); `risk`: the
    policy's loss bound (`math.inf`: none, to compare its pricing with an oracle that has none)."""
    rng = np.random.default_rng(seed)
    truth = profile.true()
    policy = Policy(StepCosts(dict(profile.verify), dict(profile.draft)), k_max, risk=risk)
    run, lag = Run(choices={PLAIN: 0, MODEL: 0, LOOKUP: 0}), 0
    for r in range(rounds):
        world = trace(r, rounds)
        offer = tuple(range(100 * r, 100 * r + world.offer))  # fresh tokens: no token is known to break
        choice = best_choice(truth, world, k_max, lag) if oracle else \
            policy.choose(LOOKUP_MAX, world.offer, lag, evidence(COPY_MATCH, TEXT), offer)
        match = min(_kept_run(rng, [world.lookup] * world.offer), world.offer)
        drafted, accepted, confidences, dropped = 0, 0, [], None
        if choice.source == MODEL:
            drafted, accepted, confidences, dropped = _model_round(rng, policy, choice.k, world.model,
                                                                   truth if oracle else None, lag)
        elif choice.source == LOOKUP:
            drafted, accepted = choice.k, min(match, choice.k)
        seconds = _seconds(truth, choice.source, drafted, lag) * rng.lognormal(0, profile.noise)
        if r == hiccup_at:
            seconds *= 10
        emitted = accepted + 1
        hits = min(match, emitted)  # the offer, judged in hindsight against the emitted tokens
        judged = CopyJudgement(evidence(COPY_MATCH, TEXT), offer, 0, min(world.offer, emitted, hits + 1), hits)
        outcome = Outcome(choice, drafted, accepted, tuple(confidences), lag, dropped, seconds,
                          (judged,) if world.offer else ())
        if not oracle:
            policy.observe(outcome)
        lag = 0 if choice.source == MODEL else lag + emitted
        if r >= skip:
            run.tokens += emitted
            run.seconds += seconds
            run.choices[choice.source] += 1
    return run


def _model_round(rng, policy: Policy, k: int, rate: float, truth: StepCosts | None, lag: int):
    """Draft up to k tokens; each has a confidence around `rate` and is kept with that chance.
    The policy's gate decides from its calibrated confidences; the oracle's (`truth` given) from
    the true chance and the true costs."""
    confidences, chances, dropped = [], [], None
    gate = _TrueGate(truth, lag) if truth is not None else None
    for position in range(k):
        chance = float(rng.beta(4 * rate + 0.1, 4 * (1 - rate) + 0.1))
        keeps = gate.keep(position, chance) if gate is not None else policy.keep(position, chance)
        if not keeps:
            dropped = (chance, bool(rng.random() < chance))
            break
        confidences.append(chance)
        chances.append(chance)
    accepted = _kept_run(rng, chances)
    if dropped is not None and accepted < len(chances):
        dropped = None  # the target never reached the dropped position
    return len(chances), accepted, confidences, dropped


class _TrueGate:
    """The oracle's gate: keep a draft token while its true chance, times the chance of reaching
    it, adds expected tokens faster than the round's true seconds grow."""

    def __init__(self, costs: StepCosts, lag: int):
        self.costs = costs
        self.reach, self.tokens, self.seconds = 1.0, 1.0, costs.verify_cost(1) + costs.draft_cost(lag + 1)

    def keep(self, position: int, chance: float) -> bool:
        gain = self.reach * chance
        extra = self.costs.verify_cost(position + 2) - self.costs.verify_cost(position + 1)
        extra += self.costs.draft_cost(1) if position else 0.0
        if gain * self.seconds < self.tokens * extra:
            return False
        self.reach, self.tokens, self.seconds = gain, self.tokens + gain, self.seconds + extra
        return True


def _seconds(costs: StepCosts, source: str, drafted: int, lag: int) -> float:
    verify = costs.verify_cost(drafted + 1)
    if source != MODEL:
        return verify
    return verify + costs.draft_cost(lag + 1) + max(drafted - 1, 0) * costs.draft_cost(1)


def best_choice(costs: StepCosts, world: World, k_max: int, lag: int) -> Choice:
    """The oracle: the choice with the most expected tokens per second under the true numbers.
    A catch-up is paid once and then serves every later round, so it does not count against
    the draft model here (the round is still charged for it); the oracle then gates the draft
    with the true chances."""
    options = [(1.0 / costs.verify_cost(1), Choice(PLAIN))]
    for k in range(1, k_max + 1):
        seconds = costs.verify_cost(k + 1) + k * costs.draft_cost(1)
        options.append((expected_tokens([world.model] * k, k) / seconds, Choice(MODEL, k)))
    for k in range(1, min(world.offer, LOOKUP_MAX) + 1):
        options.append((expected_tokens([world.lookup] * k, k) / costs.verify_cost(k + 1), Choice(LOOKUP, k)))
    return max(options, key=lambda o: o[0])[1]
