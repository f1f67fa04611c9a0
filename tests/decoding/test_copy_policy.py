"""How the auto policy sizes a copy: it learns from offers judged in hindsight whether this text
reprints its source (copies run on) or only repeats its own patterns (copies break early), and
which tokens broke copies before, and sizes the copy from that and the measured verify costs.
Pure Python, on a fixed cost profile with a cheap 16-token batch."""

from __future__ import annotations

from specgen.decoding.copy_rates import GROUNDED, LOOSE, CopyJudgement, CopyRates
from specgen.decoding.costs import StepCosts
from specgen.decoding.auto import OpenOffer
from specgen.decoding.drafters.base import LOOKUP, PLAIN
from specgen.decoding.drafters.suffix import Branch
from specgen.decoding.policy import Choice, Outcome, Policy, match_key

# a 2-core CPU's verify curve (ms): 16 tokens cost less per token than anything shorter
COSTS = StepCosts({1: 0.030, 2: 0.051, 4: 0.085, 8: 0.212, 12: 0.273, 16: 0.268, 32: 0.428, 64: 0.804}, {})
RENAMED = 99  # a token an edit renames: copies of the source run on past it, the output does not
MATCH = Branch(0, 100, 12)


def judge(policy: Policy, offer: tuple[int, ...], judged: int, kept: int, match: Branch = MATCH) -> None:
    """One round: the policy sees the offer, then learns how far the output followed it."""
    policy.choose(64, len(offer), 0, match, offer)
    judgement = CopyJudgement(match_key(match), offer, 0, judged, kept)
    policy.observe(Outcome(Choice(PLAIN), 0, 0, copies=(judgement,)))


def edited_policy() -> Policy:
    """Forty copies of 10 to 25 new tokens each, kept up to the renamed token and missed there."""
    policy = Policy(COSTS, 8)
    for n in range(40):
        length = 10 + (n * 7) % 16
        offer = (*range(1000 + 100 * n, 1000 + 100 * n + length), RENAMED, *range(50, 60))
        judge(policy, offer, length + 1, length)
    return policy


def test_a_grounded_copy_runs_to_a_cheap_batch():
    policy = edited_policy()
    assert policy.copies.grounded > 0.95
    offer = tuple(range(5000, 5064))
    choice = policy.choose(64, len(offer), 0, MATCH, offer)
    assert choice.source == LOOKUP and choice.k >= 15


def test_a_copy_stops_just_before_a_token_that_broke_copies_before():
    policy = edited_policy()
    offer = (*range(9000, 9012), RENAMED, *range(9100, 9150))  # new tokens, then the renamed one
    choice = policy.choose(64, len(offer), 0, MATCH, offer)
    assert choice.source == LOOKUP and choice.k <= 12
    assert choice.k >= 3  # the twelve tokens before it are worth a batch


def test_copies_that_break_early_at_any_match_draft_nothing():
    policy = Policy(COSTS, 8)
    for n in range(40):
        offer = tuple(range(100 * n, 100 * n + 20))
        judge(policy, offer, 2, 1)
    assert policy.copies.grounded < 0.05
    offer = tuple(range(9000, 9020))
    assert policy.choose(16, len(offer), 0, MATCH, offer).source == PLAIN


def test_the_kind_of_text_follows_a_document_that_changes():
    rates = CopyRates()
    for n in range(30):  # a long reprint
        rates.learn(CopyJudgement((False, 12), tuple(range(100 * n, 100 * n + 16)), 0, 16, 16))
        rates.forget()
    assert rates.grounded > 0.95
    for n in range(30):  # then new text, where copies break at once
        rates.learn(CopyJudgement((False, 12), tuple(range(9000 + 10 * n, 9000 + 10 * n + 8)), 0, 1, 0))
        rates.forget()
    assert rates.grounded < 0.05


def test_rates_rise_with_the_match_and_stay_between_the_curves():
    rates = CopyRates()
    offer = tuple(range(64))
    short, long = rates.rates((False, 1), offer), rates.rates((False, 40), offer)
    assert short[0] < long[0] and short[0] < short[20]
    for rate, key in zip(long, range(40, 104)):
        assert LOOSE[False][-1] <= rate <= GROUNDED[False][-1]


def test_an_offer_is_judged_over_the_rounds_that_emit_its_tokens():
    offer = OpenOffer(None, (1, 2, 3, 4, 5, 6))
    assert offer.judge([1, 2]) == CopyJudgement(None, (1, 2, 3, 4, 5, 6), 0, 2, 2)
    assert not offer.settled
    assert offer.judge([3, 9, 5]) == CopyJudgement(None, (1, 2, 3, 4, 5, 6), 2, 4, 3)
    assert offer.settled  # missed at position 3: nothing after it is judged
    whole = OpenOffer(None, (1, 2))
    assert whole.judge([1, 2, 3]) == CopyJudgement(None, (1, 2), 0, 2, 2) and whole.settled
