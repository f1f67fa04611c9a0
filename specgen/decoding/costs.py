"""What one forward pass costs, as the policy and the bench's predictions read it.

Whether speculation pays depends on the shape of the target's verify cost over batch size
(nearly flat on a GPU, close to linear on two CPU cores, with plateaus where the kernels tile)
and on what a draft step costs next to it. `StepCosts` holds the measured seconds by batch size
(measured by `specgen.llama.calibrate`) and interpolates between them. `RoundCosts` is what the
auto policy predicts a round to take: the steady cost of its passes, the switch cost where the
target's pass changes size, and a time factor per choice learnt from the wall time its rounds
really took (so in-loop slowdowns, rollbacks and catch-ups are charged to the choice that
caused them). Pure Python: no timing and no files here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specgen.decoding.drafters.base import Source


@dataclass(frozen=True)
class StepCosts:
    """Seconds of one target pass by batch size, and of the draft model's passes likewise. The
    measured sizes are kept as they are, dips included (a 16-token batch may cost less than a
    12-token one where the kernels tile well); sizes in between are interpolated once, then
    looked up, because the policy prices every draft length each round."""

    verify: dict[int, float]
    draft: dict[int, float]
    # seconds a target pass costs more when its batch size differs from the pass before it's:
    # llama.cpp builds its compute graph again, and on CUDA replays a captured graph only after two
    # passes of one shape (benchmarks/results/2026-11-27-h100-4); `verify` holds the costs of
    # passes that repeat the size before them
    switch: float = 0.0
    _memo: dict[tuple[str, int], float] = field(default_factory=dict, compare=False, repr=False)
    _tables: dict[int, tuple[float, ...]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def draft_step(self) -> float | None:
        return self.draft.get(1)

    def verify_cost(self, n: int) -> float:
        key = ("v", n)
        if key not in self._memo:
            self._memo[key] = _interpolate(self.verify, n)
        return self._memo[key]

    def verify_table(self, longest: int) -> tuple[float, ...]:
        """`verify_cost(n)` for n = 0..longest (0 priced as 1), for pricing every length of a copy in one round."""
        table = self._tables.get(longest)
        if table is None:
            table = self._tables[longest] = tuple(self.verify_cost(max(n, 1)) for n in range(longest + 1))
        return table

    def scaled(self, factors: dict[int, float]) -> StepCosts:
        """These costs with each target pass's cost times its size's factor (interpolated between
        the sizes `factors` holds, the largest's past it): the costs after a context, where
        `calibrate.depth_factors` measured how much dearer each size is there against a
        one-token pass. Themselves where `factors` is empty."""
        if not factors:
            return self
        largest = max(factors)  # past it, its factor holds
        scaled = {n: s * _interpolate(factors, min(n, largest)) for n, s in self.verify.items()}
        return StepCosts(scaled, self.draft, self.switch)

    def copy_ceiling(self, longest: int) -> tuple[int, float]:
        """The most a copy can gain here: the batch size up to `longest` at which n tokens kept
        whole in one pass beat n single passes by most, and that speedup over plain decoding."""
        one = self.verify_cost(1)
        return max(((n, n * one / self.verify_cost(n)) for n in range(1, longest + 1)), key=lambda pair: pair[1])

    def draft_cost(self, n: int) -> float:
        """A draft pass over n tokens (n > 1 when it catches up on tokens it skipped)."""
        if not self.draft:
            return 0.0
        key = ("d", n)
        if key not in self._memo:
            self._memo[key] = _interpolate(self.draft, n)
        return self._memo[key]


def _interpolate(table: dict[int, float], n: int) -> float:
    """Piecewise linear between measured sizes; past the largest, its cost per token."""
    if n in table:
        return table[n]
    sizes = sorted(table)
    if n > sizes[-1]:
        return table[sizes[-1]] * n / sizes[-1]
    if n < sizes[0]:
        return table[sizes[0]]
    hi = next(s for s in sizes if s > n)
    lo = max(s for s in sizes if s < n)
    return table[lo] + (table[hi] - table[lo]) * (n - lo) / (hi - lo)


RETURN_PRIOR = 2.0  # pseudo-passes after a broken copy that changed size, before a reply shows its own
FACTOR_STEP = 0.15  # weight of one round in a choice's time factor
FACTOR_CLIP = (0.5, 3.0)  # one round's measured/predicted ratio is clipped to this


class RoundCosts:
    """Predicted seconds of the next round by choice, and what rounds really took.

    A copy's time factor is learnt per verify size too: the calibration keeps the fastest of a
    few isolated passes, and on a few shared CPU cores a batch pass can take much longer than
    that while a one-token pass does not, so a copy is priced by what passes of its size took
    in this reply, or by all copies' factor until one was timed, and before any copy was timed by
    plain decoding's factor (as is the draft model before its first timed round). A seeded run (`timed` False)
    learns nothing from timings, so it decides the same way every time."""

    def __init__(self, costs: StepCosts, timed: bool = True):
        self.costs, self.timed = costs, timed
        self.last_size = 0  # tokens in the target's last pass (0: a prefill): another size pays costs.switch
        self.broke = False  # whether the last pass verified a copy that the target cut short
        self.returns = [0.0, 0.0]  # passes after such a copy: [of another size than it, all]
        self.factor = {Source.PLAIN: 1.0, Source.MODEL: 1.0, Source.LOOKUP: 1.0}
        self.copy_factor: dict[int, float] = {}  # a copy's learnt time factor by its verify size (else Source.LOOKUP's)
        self.paced: set[Source] = set()  # the choices whose rounds were timed (until then: plain decoding's factor)
        self.pass_ratios: list[float] = []  # each timed round's measured / predicted seconds, whatever it drafted

    def pass_cost(self, size: int) -> float:
        """The target's pass over `size` tokens next: its steady cost, plus the switch cost where
        the last pass had another size."""
        return self.costs.verify_cost(size) + (self.costs.switch if size != self.last_size else 0.0)

    def passed(self, size: int, broke: bool = False) -> None:
        """The target's pass just made had `size` tokens (0: a prefill); `broke`: it verified a
        copy the target cut short. Counts whether a pass after such a copy changed size."""
        if self.broke and size > 0:
            self.returns[0] += size != self.last_size
            self.returns[1] += 1.0
        self.last_size, self.broke = size, broke

    def switch_after_break(self) -> float:
        """The chance that the pass after a copy the target cuts short has another size (and pays
        the switch): learnt in this reply from such passes, from `RETURN_PRIOR` passes that did.
        Where offers go on at every position, the next round may draft as many tokens again, and a
        broken copy costs no switch; where they do not, it returns to one-token passes."""
        return (self.returns[0] + RETURN_PRIOR) / (self.returns[1] + RETURN_PRIOR)

    def copy_costs(self, longest: int) -> list[tuple[float, float]]:
        """For a copy of k = 1..longest tokens: its pass's cost (`pass_cost(k + 1)`) and its time
        factor (`factor_of(Source.LOOKUP, k)`), read at once: the policy prices every length of an
        offer each round, and a call per length for each would cost more than the pricing."""
        table, switch, last = self.costs.verify_table(longest + 1), self.costs.switch, self.last_size
        factors, untimed = self._copy_factors()
        return [
            (table[size] + (switch if size != last else 0.0), factors.get(size, untimed))
            for size in range(2, longest + 2)
        ]

    def round_cost(self, source: Source, k: int, lag: int = 0) -> float:
        """A round of `source` drafting k, before its time factor: the verify pass, and for the
        draft model its catch-up over `lag` skipped tokens and a step per further token."""
        verify = self.pass_cost(k + 1)
        if source != Source.MODEL:
            return verify
        return verify + self.costs.draft_cost(lag + 1) + (k - 1) * self.costs.draft_cost(1)

    def factor_of(self, source: Source, k: int) -> float:
        """The learnt time factor of `source` drafting k: a copy's by its verify size, where timed.
        A choice not yet timed in this reply takes plain decoding's: how the machine runs against
        its calibration now is the best guess for a pass not yet seen (priced at 1, a copy would
        look cheap beside plain passes that run slower than calibrated, and be drafted where it
        cannot pay)."""
        if source == Source.LOOKUP:
            factors, untimed = self._copy_factors()
            return factors.get(k + 1, untimed)
        return self.factor[source] if source in self.paced else self.factor[Source.PLAIN]

    def _copy_factors(self) -> tuple[dict[int, float], float]:
        """A copy's learnt time factors by verify size, and the factor of a size not among them:
        all copies' once a copy was timed, plain decoding's (and no sizes) before (`factor_of`)."""
        if Source.LOOKUP not in self.paced:
            return {}, self.factor[Source.PLAIN]
        return self.copy_factor, self.factor[Source.LOOKUP]

    def seconds(self, source: Source, k: int, lag: int = 0) -> float:
        """Predicted seconds of a round: its cost times its learnt factor."""
        return self.round_cost(source, k, lag) * self.factor_of(source, k)

    def timed_round(self, source: Source, drafted: int, seconds: float | None, predicted: float) -> None:
        """A round of `source` that drafted `drafted` took `seconds` (None: untimed) where
        `predicted` were expected before its factor: the factors move toward the ratio."""
        if not self.timed or seconds is None:
            return
        self.pass_ratios.append(seconds / predicted)
        ratio = min(max(seconds / predicted, FACTOR_CLIP[0]), FACTOR_CLIP[1])
        if source not in self.paced:  # its first timed round: it starts from the machine's pace
            self.factor[source] = self.factor[Source.PLAIN]
            self.paced.add(source)
        if source == Source.LOOKUP:
            size = self.copy_factor.setdefault(drafted + 1, self.factor[Source.LOOKUP])
            self.copy_factor[drafted + 1] = size + FACTOR_STEP * (ratio - size)
        self.factor[source] += FACTOR_STEP * (ratio - self.factor[source])
