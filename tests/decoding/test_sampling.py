"""The sampling math on four-element arrays: transforms, accept/reject, residual, verification."""

import numpy as np
import pytest

from specgen.decoding.sampling import (
    Dist,
    SamplingParams,
    accepts,
    distribution,
    draft_uniforms,
    one_hot,
    residual,
    sample,
    uniforms,
    verify_greedy,
    verify_sampled,
)

LOGITS = np.array([2.0, 1.0, 0.5, -1.0], dtype=np.float32)


def dense(dist: Dist, size: int = 4) -> np.ndarray:
    return dist.at(np.arange(size)).astype(np.float64)


def test_temperature_zero_is_one_hot_on_the_argmax():
    probs = dense(distribution(np.array([0.1, 3.0, 2.9, -1.0]), SamplingParams(temperature=0.0)))
    assert probs.tolist() == [0.0, 1.0, 0.0, 0.0]


def test_temperature_one_is_softmax():
    probs = dense(distribution(LOGITS, SamplingParams(temperature=1.0)))
    expected = np.exp(LOGITS - LOGITS.max()) / np.exp(LOGITS - LOGITS.max()).sum()
    np.testing.assert_allclose(probs, expected, rtol=1e-6)
    assert probs.sum() == pytest.approx(1.0)


def test_top_k_keeps_the_k_largest():
    probs = dense(distribution(LOGITS, SamplingParams(temperature=1.0, top_k=2)))
    assert probs[2] == probs[3] == 0.0
    assert probs[0] / probs[1] == pytest.approx(np.e)


def test_top_p_keeps_the_smallest_nucleus_reaching_p():
    probs = dense(distribution(np.log(np.array([0.5, 0.3, 0.15, 0.05])), SamplingParams(temperature=1.0, top_p=0.75)))
    np.testing.assert_allclose(probs, [0.5 / 0.8, 0.3 / 0.8, 0.0, 0.0], rtol=1e-6)


def test_top_p_is_applied_before_temperature_as_llama_cpp_does():
    """At temperature 1 tokens 0 and 1 are needed to reach 0.75; a low temperature must not
    shrink the nucleus (it would if temperature came first), only sharpen what is kept."""
    logits = np.log(np.array([0.5, 0.3, 0.15, 0.05]))
    probs = dense(distribution(logits, SamplingParams(temperature=0.25, top_p=0.75)))
    assert probs[1] > 0 and probs[2] == probs[3] == 0.0
    assert probs[0] / probs[1] == pytest.approx((0.5 / 0.3) ** 4, rel=1e-4)


def test_top_p_on_a_large_flat_vocabulary_equals_a_full_sort():
    """The partial selection grows its candidate set until the nucleus fits: same set as sorting all."""
    rng = np.random.default_rng(3)
    for scale in (0.01, 1.0, 8.0):  # nearly flat (needs thousands of candidates) to peaked
        logits = (rng.normal(size=20000) * scale).astype(np.float32)
        dist = distribution(logits, SamplingParams(temperature=0.8, top_p=0.9))
        probs = np.exp(logits.astype(np.float64) - logits.max())
        probs /= probs.sum()
        order = np.argsort(-probs, kind="stable")
        reference = np.sort(order[: int(np.searchsorted(np.cumsum(probs[order]), 0.9)) + 1])
        np.testing.assert_array_equal(dist.ids, reference)
        assert dist.probs.sum() == pytest.approx(1.0, abs=1e-5)


def test_distribution_lookups_outside_the_support_are_zero():
    dist = distribution(LOGITS, SamplingParams(temperature=1.0, top_k=2))
    assert dist.prob(3) == 0.0 and dist.prob(0) > dist.prob(1) > 0.0
    full = distribution(LOGITS, SamplingParams(temperature=1.0))
    assert full.prob(7) == 0.0  # a draft token id past the target's vocabulary


def test_accept_rule_is_p_over_q():
    p = Dist(np.array([0.1, 0.6, 0.2, 0.1]))
    q = Dist(np.array([0.4, 0.3, 0.2, 0.1]))
    assert accepts(p, q, 1, 0.999)  # p > q: always kept
    assert accepts(p, q, 0, 0.2) and not accepts(p, q, 0, 0.3)  # kept with probability 0.25
    assert not accepts(Dist(np.array([0.0, 1.0, 0.0, 0.0])), q, 0, 0.0)  # p = 0: never kept


def test_residual_is_normalised_positive_part():
    p = Dist(np.array([0.1, 0.6, 0.2, 0.1]))
    q = Dist(np.array([0.4, 0.3, 0.2, 0.1]))
    np.testing.assert_allclose(dense(residual(p, q)), [0.0, 1.0, 0.0, 0.0])
    p2 = Dist(np.array([0.3, 0.3, 0.3, 0.1]))
    q2 = Dist(np.array([0.1, 0.2, 0.3, 0.4]))
    np.testing.assert_allclose(dense(residual(p2, q2)), [2 / 3, 1 / 3, 0.0, 0.0])


def test_residual_of_sparse_distributions_lives_on_p_support():
    p = Dist(np.array([0.5, 0.5]), np.array([1, 3]))
    q = Dist(np.array([0.7, 0.2, 0.1]), np.array([0, 1, 2]))
    np.testing.assert_allclose(dense(residual(p, q)), [0.0, 0.3 / 0.8, 0.0, 0.5 / 0.8])
    np.testing.assert_allclose(dense(residual(p, one_hot(3))), [0.0, 1.0, 0.0, 0.0])


def test_residual_summing_to_zero_falls_back_to_p():
    p = Dist(np.array([0.25, 0.25, 0.25, 0.25]))
    assert residual(p, Dist(p.probs.copy())) is p


def test_residual_with_a_shorter_draft_vocabulary():
    p = Dist(np.array([0.2, 0.2, 0.2, 0.4]))
    q = Dist(np.array([0.5, 0.5, 0.0]))
    np.testing.assert_allclose(dense(residual(p, q)), [0.0, 0.0, 1 / 3, 2 / 3])


def test_sample_follows_the_distribution():
    rng = np.random.default_rng(0)
    dist = Dist(np.array([0.1, 0.2, 0.3, 0.4]))
    draws = np.bincount([sample(dist, rng.random()) for _ in range(20000)], minlength=4) / 20000
    np.testing.assert_allclose(draws, dist.probs, atol=0.015)


def test_sample_never_picks_a_zero_probability_token():
    rng = np.random.default_rng(1)
    dist = Dist(np.array([0.0, 0.5, 0.0, 0.5]))
    assert {sample(dist, rng.random()) for _ in range(2000)} == {1, 3}
    assert sample(Dist(np.array([0.5, 0.5]), np.array([7, 9])), 0.75) == 9


def test_uniforms_depend_only_on_seed_and_position():
    assert np.array_equal(uniforms(5, 3), uniforms(5, 3))
    assert not np.array_equal(uniforms(5, 3), uniforms(5, 4))
    assert not np.array_equal(uniforms(5, 3), uniforms(6, 3))
    draws = np.array([uniforms(1, t) for t in range(3000)])
    assert draws.min() >= 0 and draws.max() < 1 and abs(draws.mean() - 0.5) < 0.02


@pytest.mark.parametrize("seed", [0, 5, 2**40 + 5, 2**63 - 1])
def test_each_round_drafts_from_a_stream_of_its_own_apart_from_the_positions(seed):
    """No round's draft numbers repeat another round's or any position's accept test or target
    sample (a stream keyed by appending a round number to (seed, position) would: numpy pads
    short seeds with zeros, so (seed, 3, 0) is (seed, 3))."""
    assert np.array_equal(draft_uniforms(seed, 4, 6), draft_uniforms(seed, 4, 6))
    rounds = [draft_uniforms(seed, r, 2) for r in range(200)]
    positions = [uniforms(seed, t) for t in range(200)]
    seen = {float(x) for row in [*rounds, *positions] for x in row}
    assert len(seen) == 2 * 200 + 2 * 200
    draws = np.concatenate([draft_uniforms(seed, r, 8) for r in range(400)])
    assert draws.min() >= 0 and draws.max() < 1 and abs(draws.mean() - 0.5) < 0.02


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
    p = Dist(np.array([0.1, 0.5, 0.3, 0.1]))
    q = Dist(np.array([0.4, 0.2, 0.2, 0.2]))
    rng = np.random.default_rng(42)
    n = 40000
    out = np.zeros(4)
    accepted = 0
    for _ in range(n):
        token = sample(q, rng.random())
        checks = [rng.random(2), rng.random(2)]
        verdict = verify_sampled(lambda i: p, [q], [token], checks.__getitem__)
        out[token if verdict.accepted else verdict.token] += 1
        accepted += verdict.accepted
    np.testing.assert_allclose(out / n, p.probs, atol=0.01)
    assert accepted / n == pytest.approx(np.minimum(p.probs, q.probs).sum(), abs=0.01)
    assert abs(accepted / n - (p.probs * q.probs).sum()) > 0.2  # a match-only rule would be far off


def test_verify_sampled_builds_target_rows_and_uniforms_only_up_to_the_first_rejection():
    asked, drawn = [], []
    p = Dist(np.array([1.0, 0.0, 0.0, 0.0]))

    def p_row(i):
        asked.append(i)
        return p

    def checks(i):
        drawn.append(i)
        return np.zeros(2)

    q = one_hot(2)  # p(2) = 0: the first draft token is rejected for sure
    verdict = verify_sampled(p_row, [q, q, q], [2, 2, 2], checks)
    assert (verdict.accepted, verdict.token) == (0, 0)
    assert asked == [0] and drawn == [0]


def test_sampling_a_whole_vocabulary_block_by_block_equals_one_cumulative_sum():
    rng = np.random.default_rng(7)
    probs = rng.random(5000).astype(np.float32) * (rng.random(5000) > 0.3)  # a third are zero
    probs /= probs.sum()
    cdf = np.cumsum(probs.astype(np.float64))
    for u in rng.random(3000):
        expected = min(int(np.searchsorted(cdf, u * cdf[-1], side="right")), 4999)
        assert sample(Dist(probs), u) == expected
