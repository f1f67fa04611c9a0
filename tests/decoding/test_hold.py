"""Holding the pass at two tokens where a change of size costs a switch (`decoding.hold`): the
stretch rule, the rate it reads, the policy's choice and its budget, and the filler the auto
drafter drafts where nothing is offered. Expected values are worked out here from the numbers
given. Pure Python."""

from __future__ import annotations

import pytest
from holding import HoldsEveryRound

from specgen.decoding.auto import AutoDrafter
from specgen.decoding.budgets import HOLD_RISK
from specgen.decoding.costs import StepCosts
from specgen.decoding.drafters.base import Source
from specgen.decoding.drafters.prediction import Prediction
from specgen.decoding.hold import HoldRate, worth_holding
from specgen.decoding.policy import Choice, Outcome, Policy
from specgen.decoding.sampling import SamplingParams

# a GPU's curve: 2.2 ms a one-token pass, 2.3 ms two tokens, 1.1 ms more for another size than the last
GRAPHS = StepCosts({1: 2.2e-3, 2: 2.3e-3, 4: 3.1e-3, 8: 4.0e-3, 64: 1e-2}, {}, switch=1.1e-3)
STEADY = StepCosts(GRAPHS.verify, {})  # the same passes, no switch cost


def test_a_stretch_of_held_passes_is_weighed_against_the_switches_it_adds():
    """16 rounds at 2.2 and 2.3 ms: a draft kept a fifth of the time saves 16 x (2.64 - 2.3) =
    5.44 ms, more than the two switches (2.2 ms) of entering and leaving; kept a tenth, 1.6 ms,
    less; already held (no switch added), any rate above 2.3 / 2.2 - 1 = 4.5% pays."""
    assert worth_holding(2.2, 2.3, 0.2, 2.2, 16)
    assert not worth_holding(2.2, 2.3, 0.1, 2.2, 16)
    assert worth_holding(2.2, 2.3, 0.05, 0.0, 16)
    assert not worth_holding(2.2, 2.3, 0.04, 0.0, 16)
    assert not worth_holding(2.2, 2.3, 0.2, 2.2, 2)  # two rounds left: 0.68 ms does not pay 2.2


def test_the_hold_rate_is_the_faded_share_of_rounds_whose_offer_kept_its_first_token():
    """Each round's weight fades by 0.94 a round, and two pseudo-rounds of nothing kept stand
    behind the rate: written out for a round kept, two not, repeated."""
    rate = HoldRate()
    pattern = [True, False, False] * 10
    for first_kept in pattern:
        rate.add(first_kept)
    ages = range(len(pattern) - 1, -1, -1)
    kept = sum(0.94**age for age, hit in zip(ages, pattern, strict=True) if hit)
    rounds = sum(0.94**age for age in ages)
    assert rate.rate() == pytest.approx(kept / (rounds + 2.0))
    assert 0.25 < rate.rate() < 1 / 3


def observed(costs: StepCosts, hits: list[bool]) -> Policy:
    """A policy after plain rounds whose copy offers had their first token kept as `hits` says."""
    policy = Policy(costs, 8, timed=False)
    for hit in hits:
        policy.observe(Outcome(Choice(Source.PLAIN), 0, 0, first_kept=hit))
    return policy


def test_a_reply_whose_offers_keep_their_first_token_holds_two_token_passes_where_a_switch_costs():
    """After 120 plain rounds a third of whose offers had their first token kept, a round with no
    offer holds the pass at two tokens (a filler) on the GPU's curve: 16 rounds save 16 x (2.2 x
    4/3 - 2.3) = 10.1 ms against 2.2 ms of switches, and the budget (1% of 264 ms of plain time)
    bears the hold refused at once, 2.3 + 1.1 + 1.1 - 2.2 = 2.3 ms. Without a switch cost, or
    where no offer kept its first token, it decodes plainly."""
    third = [n % 3 == 0 for n in range(120)]
    held = observed(GRAPHS, third).choose(64, 0, 0)
    assert held == Choice(Source.LOOKUP, 1) and held.holding
    assert observed(STEADY, third).choose(64, 0, 0) == Choice(Source.PLAIN)
    assert observed(GRAPHS, [False] * 120).choose(64, 0, 0) == Choice(Source.PLAIN)
    assert observed(GRAPHS, third[:60]).choose(64, 0, 0) == Choice(Source.PLAIN)  # 1% of 132 ms < 2.3 ms


def test_held_passes_that_keep_nothing_stop_within_the_hold_s_share_of_the_reply():
    """After 120 rounds whose offers all kept their first token, every held pass is refused: the
    first loses its pass and the switch into it (2.3 + 1.1 - 2.2 ms), each later one 0.1 ms, and
    the rate alone would go on holding for about 48 rounds (0.9 x 0.94^m falls under 2.3 / 2.2 -
    1). The budget stops the hold first: before each held pass its worst case must fit in 1% of
    the reply's plain time less what held passes lost, so the loss never passes that 1%."""
    policy = observed(GRAPHS, [True] * 120)
    plain, lost, held = 120 * 2.2e-3, 0.0, 0
    while (choice := policy.choose(64, 0, 0)).holding:
        lost += 2.3e-3 - 2.2e-3 + (1.1e-3 if held == 0 else 0.0)
        plain += 2.2e-3
        held += 1
        policy.observe(Outcome(choice, 1, 0, first_kept=False))
        assert lost <= HOLD_RISK * plain + 1e-12, (held, lost, plain)
    assert 5 < held < 30, held  # it held, and the budget, not the rate, ended it


def test_a_held_pass_with_nothing_offered_drafts_the_token_before_as_a_filler():
    """From the second round on: the first round's token comes from the prefill's row, where a
    draft could only lose, so auto drafts nothing there, not even a held pass's filler."""
    drafter = AutoDrafter(None, HoldsEveryRound(GRAPHS, 8, timed=False), sources=[])
    drafter.prepare([1, 2, 3])
    assert drafter.propose([1, 2, 3], 4, 64, SamplingParams(), None).tokens == []
    draft = drafter.propose([1, 2, 3, 4], 7, 64, SamplingParams(), None)
    assert draft.tokens == [7] and draft.source == Source.FILLER


def test_auto_tells_its_policy_whether_each_round_s_offer_kept_its_first_token():
    """A prediction 5 6 7 8 of the reply to the prompt 1 2 3 4, and the new reply's budget bears
    no draft: the prefill's row gives 5 (the first round, where auto weighs nothing), then the
    target emits 6 (the offer's first token), then 9 where 7 was offered. The rate is
    0.94 / (0.94 + 1 + 2), though nothing was drafted."""
    policy = Policy(GRAPHS, 8, timed=False)
    drafter = AutoDrafter(None, policy, prediction=Prediction([5, 6, 7, 8]))
    drafter.prepare([1, 2, 3])
    assert drafter.propose([1, 2, 3], 4, 64, SamplingParams(), None).tokens == []  # the loop observes no such round
    for history, last, emitted in (([1, 2, 3, 4], 5, 6), ([1, 2, 3, 4, 5], 6, 9)):
        draft = drafter.propose(history, last, 64, SamplingParams(), None)
        assert draft.tokens == []
        drafter.observe(draft, [emitted], 0.0)
    assert policy.hold.rate() == pytest.approx(0.94 / (0.94 + 1 + 2))


def test_no_hold_where_two_switches_cost_less_than_a_held_pass_s_extra():
    """Two CPU cores: a two-token pass 70% more than a one-token one, a switch 2% of one. Even
    with every offer's first token kept, a round without an offer is cheaper left and entered
    again (2 x 0.8 ms against 28 ms), so plain decoding's place is not held; with a switch of
    15 ms (30 ms for two) it is, once 1% of the reply's plain time (200 x 40 ms) bears the hold
    refused at once (68 + 15 + 15 - 40 = 58 ms)."""
    cpu = StepCosts({1: 40e-3, 2: 68e-3, 4: 100e-3}, {}, switch=0.8e-3)
    assert observed(cpu, [True] * 200).choose(64, 0, 0) == Choice(Source.PLAIN)
    assert observed(StepCosts(cpu.verify, {}, switch=15e-3), [True] * 200).choose(64, 0, 0).holding
