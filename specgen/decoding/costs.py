"""What one forward pass costs, as the policy and the bench's predictions read it.

Whether speculation pays depends on the shape of the target's verify cost over batch size
(nearly flat on a GPU, close to linear on two CPU cores, with plateaus where the kernels tile)
and on what a draft step costs next to it. `StepCosts` holds the measured seconds by batch size
(measured by `specgen.llama.calibrate`) and interpolates between them. Pure Python: no timing
and no files here.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
    # passes of one shape (an H100 with a 1.5B target: 1.1 ms on a 2.2 ms pass); `verify` holds
    # the costs of passes that repeat the size before them
    switch: float = 0.0
    _memo: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def draft_step(self) -> float | None:
        return self.draft.get(1)

    def verify_cost(self, n: int) -> float:
        key = ("v", n)
        if key not in self._memo:
            self._memo[key] = _interpolate(self.verify, n)
        return self._memo[key]

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
