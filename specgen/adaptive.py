"""Choose each round's draft length from what this machine and this text have shown so far.

A round that drafts k tokens yields E(k) = 1 + sum_{i<=k} prod_{j<i} a_j tokens on average
(a_j: the chance that draft position j is kept once every earlier one was) and costs
k * c (one draft step each) + v(k + 1) (one target pass over k + 1 tokens). The planner picks
the k, zero included, with the most expected tokens per second, using running averages of
the measured step costs and acceptance. While drafting, a token is kept only if its expected
gain (its calibrated acceptance, from the draft's own confidence) pays for the extra verify
cost, which gives the "stop when the draft is unsure" threshold from the same numbers.
A prompt-lookup proposal (free to make) is taken instead when it promises more per second.
Pure Python: no llama.cpp here, so the decisions are testable on given numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

K_MAX = 8
_BINS = 10
_SMOOTHING = 0.15  # weight of a new cost measurement in the running averages
_EXPLORE_EVERY = 24  # plain rounds in a row before drafting again to re-check acceptance


@dataclass(frozen=True)
class Plan:
    """What to draft this round: `k` tokens from the draft model, or the lookup proposal."""

    k: int
    lookup: bool = False


class AdaptivePlanner:
    """Running cost and acceptance estimates, and the decisions drawn from them."""

    def __init__(self, k_max: int = K_MAX):
        self.k_max = k_max
        self.verify: dict[int, float] = {}  # batch size -> seconds
        self.draft_step: float | None = None
        self.kept = [2.0] * k_max  # per-position Beta counts: kept / reached, prior 2/3
        self.reached = [3.0] * k_max
        self.bin_kept = [(i + 0.5) / _BINS * 2 for i in range(_BINS)]  # prior: confidence is calibrated
        self.bin_seen = [2.0] * _BINS
        self.lookup_kept, self.lookup_reached = 1.0, 2.0
        self.plain_streak = 0
        self._gain = self._expected = 1.0

    # -- costs ------------------------------------------------------------------------------

    def verify_cost(self, size: int) -> float:
        """Measured, or interpolated from the nearest measured batch sizes (verify grows ~linearly)."""
        if size in self.verify:
            return self.verify[size]
        if not self.verify:
            return 1.0 + 0.25 * (size - 1)
        below = [s for s in self.verify if s < size]
        above = [s for s in self.verify if s > size]
        if below and above:
            lo, hi = max(below), min(above)
            return self.verify[lo] + (self.verify[hi] - self.verify[lo]) * (size - lo) / (hi - lo)
        near = max(below) if below else min(above)
        return self.verify[near] * (1.0 + 0.25 * (size - 1)) / (1.0 + 0.25 * (near - 1))

    def draft_cost(self) -> float:
        return self.draft_step if self.draft_step is not None else 0.4 * self.verify_cost(1)

    def record_costs(self, size: int, verify_s: float, draft_steps: int, draft_s: float) -> None:
        self.verify[size] = _blend(self.verify.get(size), verify_s)
        if draft_steps:
            self.draft_step = _blend(self.draft_step, draft_s / draft_steps)

    # -- planning ---------------------------------------------------------------------------

    def expected_tokens(self, k: int, rates: list[float]) -> float:
        total, reach = 1.0, 1.0
        for i in range(k):
            reach *= rates[i]
            total += reach
        return total

    def best_model_k(self, perfect: bool = False) -> tuple[int, float]:
        """The K with the most expected tokens per second (with `perfect`, as if every draft were kept)."""
        rates = [1.0 if perfect else kept / reached for kept, reached in zip(self.kept, self.reached)]
        step = self.draft_cost()
        speeds = [self.expected_tokens(k, rates) / (k * step + self.verify_cost(k + 1)) for k in range(self.k_max + 1)]
        best = max(range(self.k_max + 1), key=speeds.__getitem__)
        return best, speeds[best]

    def plan(self, lookup_available: int) -> Plan:
        """This round's choice; also resets the per-round state of the confidence gate."""
        self._gain = self._expected = 1.0
        k, speed = self.best_model_k()
        if lookup_available:
            n = min(lookup_available, self.k_max)
            rate = self.lookup_kept / self.lookup_reached
            lookup_speed = self.expected_tokens(n, [rate] * n) / self.verify_cost(n + 1)
            if lookup_speed > speed:
                return Plan(n, lookup=True)
        if k == 0:
            self.plain_streak += 1
            if self.plain_streak >= _EXPLORE_EVERY and self.best_model_k(perfect=True)[0] > 0:
                self.plain_streak = 0
                return Plan(2)
            return Plan(0)
        self.plain_streak = 0
        return Plan(k)

    def keep(self, position: int, confidence: float) -> bool:
        """Keep the token just drafted at `position` if its expected gain pays for its verify cost."""
        index = min(int(confidence * _BINS), _BINS - 1)
        gain = self._gain * self.bin_kept[index] / self.bin_seen[index]
        cost_before = (position + 1) * self.draft_cost() + self.verify_cost(position + 1)
        extra = self.verify_cost(position + 2) - self.verify_cost(position + 1)
        if gain * cost_before < self._expected * extra:
            return False
        self._gain, self._expected = gain, self._expected + gain
        return True

    # -- learning ---------------------------------------------------------------------------

    def record_model_round(self, confidences: list[float], accepted: int) -> None:
        """Acceptance by position and by confidence, for the positions the target really judged."""
        for i, confidence in enumerate(confidences[: accepted + 1]):
            kept = i < accepted
            self.reached[i] += 1
            self.kept[i] += kept
            index = min(int(confidence * _BINS), _BINS - 1)
            self.bin_seen[index] += 1
            self.bin_kept[index] += kept

    def record_lookup_round(self, drafted: int, accepted: int) -> None:
        judged = min(drafted, accepted + 1)
        self.lookup_reached += judged
        self.lookup_kept += accepted


def _blend(old: float | None, new: float) -> float:
    return new if old is None else old + _SMOOTHING * (new - old)
