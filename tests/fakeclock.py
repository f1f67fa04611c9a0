"""A fake clock, for tests whose verdict rests on timings: the loop's rounds and the calibration
read `specgen.decoding.clock.now()`, and `fake_clock` points it at a clock that moves only when a
test moves it, so a busy machine (or an idle one) changes no verdict. The models stay real:
`PricedModel` runs the real pass, then moves the clock by the pass's planted price.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from specgen.decoding import clock as clock_module


class FakeClock:
    """Seconds that pass only by `advance`."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def __call__(self) -> float:
        return self.seconds

    def advance(self, seconds: float) -> None:
        self.seconds += seconds


def fake_clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """A fake clock that the loop and the calibration read until the test ends."""
    fake = FakeClock()
    monkeypatch.setattr(clock_module, "source", fake)
    return fake


def pass_price(n: int) -> float:
    """What an n-token pass costs on the fake clock: 1 ms, and 0.25 ms a token."""
    return 0.001 + 0.00025 * n


class PricedModel:
    """A real model whose every pass moves `clock` by `price(n)` for n tokens, and by `switch`
    more when n differs from the size of the pass before it (a switch cost, as CUDA's graph
    replay and llama.cpp's graph reuse make one)."""

    def __init__(
        self, model: Any, clock: FakeClock, switch: float = 0.0, price: Callable[[int], float] = pass_price
    ) -> None:
        self.model, self.clock, self.switch, self.price, self.last = model, clock, switch, price, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def forward(self, tokens: list[int], all_logits: bool) -> np.ndarray:
        rows = self.model.forward(tokens, all_logits)
        self.clock.advance(self.price(len(tokens)) + (self.switch if len(tokens) != self.last else 0.0))
        self.last = len(tokens)
        return rows
