"""A constrained row asks the constraint about a few of its most likely tokens only, and comes
out as if the whole row had been masked: the same argmax (ties too) and the same top-k
distribution, checked against masking the whole row with numpy."""

from __future__ import annotations

import numpy as np
import pytest

from specgen.decoding.constraint import masked_argmax, masked_distribution
from specgen.decoding.sampling import SamplingParams

VOCAB = 5000


class Fixed:
    """Masks from a fixed set of allowed tokens; counts the tokens it was asked about."""

    def __init__(self, allowed: np.ndarray):
        self.mask, self.asked = allowed, 0

    def allowed(self, row: int, tokens: np.ndarray) -> np.ndarray:
        self.asked += tokens.shape[0]
        return self.mask[tokens]


def cases(seed: int, ties: bool = False):
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 3, VOCAB).astype(np.float32)
    if ties:  # the lowest id wins among equals; which of equals top-k keeps is left open
        logits[rng.choice(VOCAB, 40)] = logits.max()
    for share in (0.9, 0.05, 0.001):
        yield logits, rng.random(VOCAB) < share


@pytest.mark.parametrize("seed", range(5))
def test_the_masked_argmax_is_the_argmax_of_the_whole_masked_row(seed):
    for logits, allowed in cases(seed, ties=True):
        masks = Fixed(allowed)
        assert masked_argmax(logits, 0, masks) == int(np.argmax(np.where(allowed, logits, -np.inf)))


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("params", [SamplingParams(1.0, 8), SamplingParams(0.7, 40, 0.9), SamplingParams(1.2, 0, 0.95)])
def test_a_masked_distribution_is_that_of_the_whole_masked_row(seed, params):
    for logits, allowed in cases(seed):
        got = masked_distribution(logits, 0, Fixed(allowed), params).at(np.arange(VOCAB))
        masked = np.where(allowed, logits, -np.inf)
        expected = np.exp(masked - masked.max())
        if params.top_k:
            expected[np.argsort(-masked, kind="stable")[params.top_k :]] = 0.0
        if params.top_p < 1.0:
            order = np.argsort(-expected, kind="stable")
            cumulative = np.cumsum(expected[order]) / expected.sum()
            expected[order[np.searchsorted(cumulative, params.top_p) + 1 :]] = 0.0
        expected = expected ** (1 / params.temperature)
        assert np.allclose(got, expected / expected.sum(), atol=1e-6)


def test_greedy_and_top_k_ask_about_few_tokens_where_the_top_ones_are_allowed():
    logits, allowed = next(cases(0))
    masks = Fixed(allowed)
    masked_argmax(logits, 0, masks)
    masked_distribution(logits, 0, masks, SamplingParams(1.0, 8))
    assert masks.asked < 100
