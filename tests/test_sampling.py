"""The sampling math on four-element arrays: transforms, accept/reject, residual, verification."""

import numpy as np
import pytest

from specgen.sampling import (
    SamplingParams,
    accepts,
    distribution,
    residual,
    sample,
    verify_greedy,
    verify_sampled,
)

LOGITS = np.array([2.0, 1.0, 0.5, -1.0], dtype=np.float32)


def test_temperature_zero_is_one_hot_on_the_argmax():
    probs = distribution(np.array([0.1, 3.0, 2.9, -1.0]), SamplingParams(temperature=0.0))
    assert probs.tolist() == [0.0, 1.0, 0.0, 0.0]


def test_temperature_one_is_softmax():
    probs = distribution(LOGITS, SamplingParams(temperature=1.0))
    expected = np.exp(LOGITS - LOGITS.max()) / np.exp(LOGITS - LOGITS.max()).sum()
    np.testing.assert_allclose(probs, expected, rtol=1e-6)
    assert probs.sum() == pytest.approx(1.0)


def test_top_k_keeps_the_k_largest():
    probs = distribution(LOGITS, SamplingParams(temperature=1.0, top_k=2))
    assert probs[2] == probs[3] == 0.0
    assert probs[0] / probs[1] == pytest.approx(np.e)


def test_top_p_keeps_the_smallest_nucleus_reaching_p():
    probs = distribution(np.log(np.array([0.5, 0.3, 0.15, 0.05])), SamplingParams(temperature=1.0, top_p=0.75))
    np.testing.assert_allclose(probs, [0.5 / 0.8, 0.3 / 0.8, 0.0, 0.0])


def test_transforms_apply_identically_to_p_and_q():
    params = SamplingParams(temperature=0.7, top_k=3, top_p=0.9)
    p = distribution(LOGITS, params)
    q = distribution(LOGITS + 0.0, params)
    np.testing.assert_array_equal(p, q)
    assert (p > 0).sum() <= 3


def test_accept_rule_is_p_over_q():
    p = np.array([0.1, 0.6, 0.2, 0.1])
    q = np.array([0.4, 0.3, 0.2, 0.1])
    assert accepts(p, q, 1, 0.999)  # p > q: always kept
    assert accepts(p, q, 0, 0.2) and not accepts(p, q, 0, 0.3)  # kept with probability 0.25
    assert not accepts(np.array([0.0, 1.0, 0.0, 0.0]), q, 0, 0.0)  # p = 0: never kept


def test_residual_is_normalised_positive_part():
    p = np.array([0.1, 0.6, 0.2, 0.1])
    q = np.array([0.4, 0.3, 0.2, 0.1])
    np.testing.assert_allclose(residual(p, q), [0.0, 1.0, 0.0, 0.0])
    p2 = np.array([0.3, 0.3, 0.3, 0.1])
    q2 = np.array([0.1, 0.2, 0.3, 0.4])
    np.testing.assert_allclose(residual(p2, q2), [2 / 3, 1 / 3, 0.0, 0.0])


def test_residual_summing_to_zero_falls_back_to_p():
    p = np.array([0.25, 0.25, 0.25, 0.25])
    np.testing.assert_array_equal(residual(p, p.copy()), p)


def test_residual_with_a_shorter_draft_vocabulary():
    p = np.array([0.2, 0.2, 0.2, 0.4])
    q = np.array([0.5, 0.5, 0.0])
    np.testing.assert_allclose(residual(p, q), [0.0, 0.0, 1 / 3, 2 / 3])


def test_sample_follows_the_distribution():
    rng = np.random.default_rng(0)
    probs = np.array([0.1, 0.2, 0.3, 0.4])
    draws = np.bincount([sample(probs, rng) for _ in range(20000)], minlength=4) / 20000
    np.testing.assert_allclose(draws, probs, atol=0.015)


def test_sample_never_picks_a_zero_probability_token():
    rng = np.random.default_rng(1)
    probs = np.array([0.0, 0.5, 0.0, 0.5])
    assert {sample(probs, rng) for _ in range(2000)} == {1, 3}


def test_verify_greedy_keeps_the_matching_prefix_and_corrects():
    argmax = np.array([5, 7, 9, 11])
    verdict = verify_greedy(argmax, [5, 7, 2])
    assert (verdict.accepted, verdict.token) == (2, 9)
    verdict = verify_greedy(argmax, [5, 7, 9])
    assert (verdict.accepted, verdict.token) == (3, 11)  # bonus token
    verdict = verify_greedy(argmax[:1], [])
    assert (verdict.accepted, verdict.token) == (0, 5)


def test_verify_sampled_preserves_the_target_distribution():
    """Speculative sampling's output is distributed as p, and its acceptance is sum(min(p, q))."""
    p = np.array([0.1, 0.5, 0.3, 0.1])
    q = np.array([0.4, 0.2, 0.2, 0.2])
    rng = np.random.default_rng(42)
    n = 40000
    out = np.zeros(4)
    accepted = 0
    for _ in range(n):
        token = sample(q, rng)
        verdict = verify_sampled([p, p], [q], [token], rng)
        first = token if verdict.accepted else verdict.token
        out[first] += 1
        accepted += verdict.accepted
    np.testing.assert_allclose(out / n, p, atol=0.01)
    assert accepted / n == pytest.approx(np.minimum(p, q).sum(), abs=0.01)
    assert abs(accepted / n - (p * q).sum()) > 0.2  # a match-only rule would be far off
