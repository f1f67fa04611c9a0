"""How the auto policy sizes a copy: it learns where copies of this text break (at a token, or
after one) from offers judged in hindsight over as many rounds as they take, and stops a copy
just before such a place. Pure Python, on a fixed cost profile with a cheap 16-token batch."""

from __future__ import annotations

from specgen.decoding.costs import StepCosts
from specgen.decoding.drafters.adaptive import OpenOffer
from specgen.decoding.drafters.base import LOOKUP, PLAIN
from specgen.decoding.drafters.suffix import Branch
from specgen.decoding.policy import Choice, CopyJudgement, Outcome, Policy, match_bin

# a 2-core CPU's verify curve (ms): 16 tokens cost less per token than anything shorter
COSTS = StepCosts({1: 0.030, 2: 0.051, 4: 0.085, 8: 0.212, 12: 0.273, 16: 0.268, 32: 0.428, 64: 0.804}, {})
END = 99  # "end of a sentence": copies of the source run on past it, the output does not
MATCH = Branch(0, 100, 12)


def sentence(start: int, length: int = 12) -> tuple[int, ...]:
    return (*range(start, start + length), END, *range(start + 50, start + 60))


def trained_policy() -> Policy:
    """Forty copies of 6 to 21 new tokens each, kept up to END and missed just after it: the
    position does not tell where copies break, the token does."""
    policy = Policy(COSTS, 8)
    for n in range(40):
        length = 6 + (n * 7) % 16
        offer = sentence(1000 + 100 * n, length)
        policy.choose(16, len(offer), 0, MATCH, (7, offer))
        judged = CopyJudgement(match_bin(MATCH), 7, offer, 0, length + 2, length + 1)
        policy.observe(Outcome(Choice(PLAIN), 0, 0, copies=(judged,)))
    return policy


def test_a_copy_stops_just_before_the_token_after_which_copies_broke():
    policy = trained_policy()
    offer = sentence(9000)  # tokens never seen: only END is known
    choice = policy.choose(64, len(offer), 0, MATCH, (7, offer))
    # the twelve tokens and END; past END only as far as a batch that costs no more (the dip at 16)
    assert choice.source == LOOKUP and choice.k >= 13
    assert COSTS.verify_cost(choice.k + 1) <= COSTS.verify_cost(14)
    assert choice.k < 20  # not on into the next sentence


def test_without_a_known_break_the_same_copy_runs_to_a_cheap_batch():
    policy = trained_policy()
    offer = tuple(range(5000, 5064))
    choice = policy.choose(64, len(offer), 0, MATCH, (7, offer))
    assert choice.source == LOOKUP and choice.k >= 15


def test_copies_that_fail_anywhere_draft_nothing():
    policy = Policy(COSTS, 8)
    for n in range(40):
        offer = tuple(range(100 * n, 100 * n + 20))
        policy.choose(16, len(offer), 0, MATCH, (7, offer))
        policy.observe(Outcome(Choice(PLAIN), 0, 0, copies=(CopyJudgement(match_bin(MATCH), 7, offer, 0, 2, 1),)))
    offer = tuple(range(9000, 9020))
    assert policy.choose(16, len(offer), 0, MATCH, (7, offer)).source == PLAIN


def test_an_offer_is_judged_over_the_rounds_that_emit_its_tokens():
    offer = OpenOffer(None, 7, (1, 2, 3, 4, 5, 6))
    assert offer.judge([1, 2]) == CopyJudgement(None, 7, (1, 2, 3, 4, 5, 6), 0, 2, 2)
    assert not offer.settled
    assert offer.judge([3, 9, 5]) == CopyJudgement(None, 7, (1, 2, 3, 4, 5, 6), 2, 4, 3)
    assert offer.settled  # missed at position 3: nothing after it is judged
    whole = OpenOffer(None, 7, (1, 2))
    assert whole.judge([1, 2, 3]) == CopyJudgement(None, 7, (1, 2), 0, 2, 2) and whole.settled
