"""The auto policy's parts on their own: the kept-length distribution, a source's record on a
synthetic source whose keep law is known, the round costs, the loss budget, the copy chooser;
and that the policy's queries change nothing. Expected values are worked out here from the
numbers given, not by the parts' own formulas. Pure Python."""

from __future__ import annotations

import copy
import math
import pickle
import random

import pytest

from specgen.decoding.auto import AutoDrafter
from specgen.decoding.budgets import FOLLOWED_LOAN, FORESEEN_RISK, RISK, LossBudget, overshoot, reach_sums
from specgen.decoding.copy_rates import AGREE, GROUNDED, LOOSE, SPLIT, CopyEvidence, CopyJudgement, CopyRates
from specgen.decoding.costs import RoundCosts, StepCosts
from specgen.decoding.drafters.base import Source
from specgen.decoding.drafters.prediction import Prediction
from specgen.decoding.kept import expected_tokens, reach_of
from specgen.decoding.policy import _NEGLIGIBLE as NEGLIGIBLE
from specgen.decoding.policy import Choice, Outcome, Policy


def test_the_chance_of_keeping_each_prefix_and_the_tokens_a_round_yields():
    assert reach_of([0.9, 0.5, 0.2]) == pytest.approx([0.9, 0.45, 0.09])
    # drafting 2: one token always, the first with 0.9, both with 0.45
    assert expected_tokens([0.9, 0.5, 0.2], 2) == pytest.approx(1 + 0.9 + 0.45)


def synthetic(rates: CopyRates, rng: random.Random, grounded: bool, rounds: int) -> None:
    """Copies from a source whose keep law is known: in a reprinting text every copy of 24
    tokens at a 12-token match is kept whole; in a loose one each token is kept with chance
    0.3 once all before it were. Each round judges one fresh offer in full."""
    for n in range(rounds):
        offer = tuple(range(1000 * n, 1000 * n + 24))
        kept = 24 if grounded else next((i for i in range(24) if rng.random() >= 0.3), 24)
        rates.learn(CopyJudgement(CopyEvidence(12), offer, 0, min(kept + 1, 24), kept))
        rates.forget()


def test_a_record_of_a_source_whose_copies_always_hold_expects_long_copies_to_hold():
    """After 60 copies kept whole, a 48-token copy at a 12-token match is expected to be kept
    whole with a chance of 0.7 or more (the truth is 1; the record forgets and keeps its curves'
    prior), and even a fresh record's chance is far above what the same curves give mixed token
    by token, as if the kind of text were drawn anew at every token."""
    rates = CopyRates()
    synthetic(rates, random.Random(1), grounded=True, rounds=60)
    reach = rates.reach(CopyEvidence(12), tuple(range(5000, 5048)))
    assert reach[47] > 0.7
    per_token = 1.0
    for j in range(48):  # the tables mixed token by token at even odds: what independence would give
        index = sum(edge <= 12 + j for edge in (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)) - 1
        per_token *= 0.5 * GROUNDED[False][index] + 0.5 * LOOSE[False][index]
    assert CopyRates().reach(CopyEvidence(12), tuple(range(48)))[47] > 10 * per_token


def test_a_record_of_a_loose_source_expects_its_copies_to_break_as_they_do():
    """Copies kept token by token with chance 0.3 (so at least one token with 0.3, at least two
    with 0.09): after 200 of them the record expects about that, within the noise of a record
    that forgets (it weighs about the last 50 rounds)."""
    rates = CopyRates()
    synthetic(rates, random.Random(2), grounded=False, rounds=200)
    assert rates.grounded < 0.05
    reach = rates.reach(CopyEvidence(12), tuple(range(7000, 7004)))
    assert reach[0] == pytest.approx(0.3, abs=0.12)
    assert reach[1] == pytest.approx(0.09, abs=0.08)


def test_a_reach_cut_at_a_floor_is_the_uncut_reach_up_to_its_first_chance_under_the_floor():
    """The chooser asks for a copy's reach only down to the chance it still prices (`_NEGLIGIBLE`):
    the list then ends at the first prefix kept with less chance than that, and is otherwise the
    whole reach, number for number, whatever the agreement does to the first token (an odds factor
    over or under one) and the record to later ones. Priced, the cut reach and the whole one
    choose alike. A product of rates cut likewise: 0.9, 0.45, 0.225 stops under 0.3."""
    rates = CopyRates()
    synthetic(rates, random.Random(3), grounded=False, rounds=40)
    offer = tuple(range(7000, 7064))
    policy = Policy(StepCosts({1: 1.0, 2: 1.05, 8: 1.3, 64: 3.0}, {}), 8, timed=False)
    for evidence in (CopyEvidence(1, agreement=AGREE), CopyEvidence(1, agreement=SPLIT), CopyEvidence(12)):
        whole = rates.reach(evidence, offer)
        for floor in (1e-3, 0.05, 0.3):
            under = next(i for i, chance in enumerate(whole) if chance < floor)
            assert rates.reach(evidence, offer, floor) == whole[: under + 1]
        for saved in (0.0, 100.0):
            policy.saved = saved
            assert policy.best_copy(rates.reach(evidence, offer, NEGLIGIBLE)) == policy.best_copy(whole)
    assert reach_of([0.9, 0.5, 0.5, 0.9], floor=0.3) == pytest.approx([0.9, 0.45, 0.225])


def test_round_costs_charge_the_switch_where_the_pass_changes_size():
    costs = RoundCosts(StepCosts({1: 1.0, 2: 1.5, 4: 2.0}, {1: 0.25}, switch=0.3))
    assert costs.pass_cost(1) == pytest.approx(1.3)  # after the prefill every size switches
    costs.last_size = 1
    assert costs.pass_cost(1) == pytest.approx(1.0)
    assert costs.pass_cost(3) == pytest.approx(1.75 + 0.3)  # interpolated between 2 and 4, and a switch
    # the pass, a 2-token catch-up, two steps
    assert costs.round_cost(Source.MODEL, 3, lag=1) == pytest.approx(2.0 + 0.3 + 2 * 0.25 + 2 * 0.25)
    assert costs.seconds(Source.LOOKUP, 1) == costs.seconds(Source.PLAIN, 1)  # nothing learnt yet: one factor


def test_the_loss_budget_bears_what_copies_saved_plus_its_share_of_plain_time():
    budget = LossBudget(risk=0.03, saved=1.0, plain=10.0)
    assert budget.bears(1.3) and not budget.bears(1.31)
    budget.foreseen = 10.0  # a foreseen reply: its share from the first round, besides the reply's own
    assert budget.bearable() == pytest.approx(1.0 + 0.03 * 10.0 + FORESEEN_RISK * 10.0)
    unbounded = LossBudget(risk=math.inf)  # no budget: any loss, from the first round (no plain time yet)
    assert unbounded.bears(1e9)


def test_a_predictions_allowance_counts_the_tokens_the_reply_followed_and_covers_its_copies_only():
    """A schema's foreseen reply is allowed FORESEEN_RISK of its whole plain time; a prediction's,
    of FOLLOWED_LOAN times the plain time of the tokens the reply followed (here 2 seconds of
    them), at most the whole; and none of it for a copy the prediction did not offer."""
    schema = LossBudget(risk=0.03, saved=1.0, plain=10.0, foreseen=100.0)
    assert schema.bearable() == pytest.approx(1.0 + 0.3 + FORESEEN_RISK * 100.0)
    prediction = LossBudget(risk=0.03, saved=1.0, plain=10.0, foreseen=100.0, followed=2.0)
    assert prediction.bearable() == pytest.approx(1.0 + 0.3 + FORESEEN_RISK * FOLLOWED_LOAN * 2.0)
    assert prediction.bearable(foreseen=False) == pytest.approx(1.0 + 0.3)
    prediction.followed = 100.0  # followed for longer than the prediction's length: its whole
    assert prediction.bearable() == pytest.approx(1.0 + 0.3 + FORESEEN_RISK * 100.0)
    assert LossBudget(risk=0.03, plain=10.0, foreseen=100.0, followed=0.0).bearable() == pytest.approx(0.3)
    # attached text's allowance: counted alike, at the share it is given (`share`), standing for
    # the reply's own where larger, not added to it (`adds`)
    attached = LossBudget(risk=0.03, saved=1.0, plain=10.0, foreseen=100.0, followed=2.0, share=0.03, adds=False)
    assert attached.bearable() == pytest.approx(1.0 + 0.03 * FOLLOWED_LOAN * 2.0)
    assert attached.bearable(foreseen=False) == pytest.approx(1.0 + 0.3)
    attached.followed = 1.0  # 8 seconds counted, under the reply's own 10: its own share stands
    assert attached.bearable() == pytest.approx(1.0 + 0.3)


def test_a_copys_chance_of_overshooting_and_its_expected_loss_by_enumerating_its_kept_lengths():
    """Against the kept-length distribution written out: J tokens kept with chance
    P(J >= j) - P(J >= j + 1), each costing `worst - J step` (no gain counted)."""
    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(1, 40)
        reach = reach_of([rng.uniform(0.5, 1.0) for _ in range(n)])
        k = rng.randint(1, n)
        worst, step, bearable = rng.uniform(0.1, 8.0), rng.uniform(0.05, 1.0), rng.uniform(-1.0, 4.0)
        chances = [1.0, *reach[:k], 0.0]
        over = expected = 0.0
        for j in range(k + 1):
            p, loss = chances[j] - chances[j + 1], worst - j * step
            over += p if loss > bearable else 0.0
            expected += p * max(loss, 0.0)
        found = overshoot(worst, step, bearable, reach, reach_sums(reach), k)
        assert found == pytest.approx((over, expected), abs=1e-9)


def test_a_copy_the_budget_cannot_bear_at_worst_is_drafted_where_it_is_unlikely_to_overshoot():
    """A pass of 1 token costs 1 s, of 9 tokens 2.6 s; the reply can bear 0.5 s. An 8-token copy
    refused at once loses 1.6 s; kept for 2 tokens, 0.6 s; for 3, none. Its tokens each kept
    with chance 0.998 once those before were, it overshoots only when fewer than 2 are kept:
    1 - 0.998^2 = 0.4%, and its expected loss is 1.6 x 0.2% + 0.6 x 0.2% = 0.0044 s: it is
    drafted. Each kept with chance 0.9: 19% and 0.27 s: only copies whose worst case fits are
    (k <= 2: 0.2 s a token), though without the budget 7 tokens would be worth the most."""
    costs = StepCosts({1: 1.0, 9: 2.6}, {})
    for per_token, longest in ((0.998, 8), (0.9, 2)):
        policy = Policy(costs, 8, timed=False)
        policy.rounds.last_size = 1
        policy.after_copy = True  # plain decoding would not switch either
        policy.saved = 0.5
        choice = policy.best_copy(reach_of([per_token] * 8))
        assert choice is not None and choice.source == Source.LOOKUP
        assert choice.k == 8 if per_token > 0.99 else choice.k <= longest
        assert policy.best_copy(reach_of([per_token] * 8)) == choice  # a query: nothing changed


def test_a_reply_whose_bet_failed_copies_again_within_the_bets_worst_case_where_a_copy_almost_surely_pays():
    """A pass of 1 token costs 1 s, of 9 tokens 2.6 s (0.2 s a token between). With 0.5 s
    saved, an 8-token copy (worst case 1.6 s) is drafted as a bet; its first token refused, the
    reply has lost 1.1 s, and bears -1.1 + 3% of its 1 s of plain time = -1.07 s: within the
    bet's 1.6 s there is 0.53 s left. A copy whose tokens are each kept with chance 0.998 loses
    anything only if its first token is refused (0.2%), so 2 tokens (worst 0.4 s) are drafted
    and 3 (0.6 s) are not; at 0.9 (10%) none is. A reply that lost as much without a bet drafts
    nothing."""
    costs = StepCosts({1: 1.0, 9: 2.6}, {})
    policy = Policy(costs, 8, timed=False)
    policy.rounds.last_size, policy.after_copy, policy.saved = 1, True, 0.5
    bet = policy.best_copy(reach_of([0.998] * 8))
    assert bet is not None and bet.k == 8 and bet.bet == pytest.approx(1.6)
    policy.observe(Outcome(bet, drafted=8, accepted=0))
    assert (policy.saved, policy.plain) == pytest.approx((-1.1, 1.0))
    again = policy.best_copy(reach_of([0.998] * 8))
    assert again is not None and again.source == Source.LOOKUP and again.k == 2 and again.bet == 0.0
    assert policy.best_copy(reach_of([0.9] * 8)) is None
    unbet = Policy(costs, 8, timed=False)
    unbet.rounds.last_size, unbet.after_copy, unbet.saved, unbet.plain = 9, True, -1.1, 1.0
    assert unbet.best_copy(reach_of([0.998] * 8)) is None


def test_the_chooser_takes_the_copy_length_with_the_most_tokens_per_second():
    """A verify of k + 1 tokens costs 1 + 0.1 k, each copied token is kept with chance 0.9 once
    all before it were, and the loss budget does not bind: the length is the one that makes the
    most expected tokens per second, found here by trying each."""
    costs = StepCosts({1: 1.0, 65: 7.4}, {})
    policy = Policy(costs, 8, timed=False)
    policy.saved = 100.0
    reach = [0.9**j for j in range(1, 41)]
    speeds = {k: (1 + sum(0.9**j for j in range(1, k + 1))) / (1.0 + 0.1 * k) for k in range(1, 41)}
    assert policy.best_copy(reach) == Choice(Source.LOOKUP, max(speeds, key=speeds.get))


def test_a_copy_that_may_break_is_charged_the_switch_back_to_plain_passes():
    """Passes of 1 and 2 tokens cost 1.0 and 1.1, another size than the last 0.5 more. After a
    plain round a 1-token copy kept with chance 0.65 makes 1.65 tokens in 1.6 s, but 35% of the
    time it breaks and the next pass switches back (0.175 s): 0.93 tokens a second against plain
    decoding's 1.0. Kept with chance 0.95 it pays: 1.95 / (1.6 + 0.025) = 1.2."""
    costs = StepCosts({1: 1.0, 2: 1.1}, {}, switch=0.5)
    policy = Policy(costs, 8, timed=False)
    policy.saved = 100.0
    policy.observe(Outcome(Choice(Source.PLAIN), 0, 0))
    assert policy.best_copy([0.65]) is None or policy.choose(1, 1, 0, *_offer(policy, 0.65)) == Choice(Source.PLAIN)
    assert policy.choose(1, 1, 0, *_offer(policy, 0.95)) == Choice(Source.LOOKUP, 1)


def test_a_break_is_charged_the_switch_only_as_often_as_passes_after_breaks_changed_size():
    """Passes of 1 and 2 tokens cost 1.0 and 1.1, another size than the last 0.5 more. After a
    plain round a 1-token copy kept with chance 0.7 makes 1.7 tokens for 1.6 s plus, where every
    break sends the next pass back to one token, 0.3 x 0.5 s: 0.97 tokens a second, under plain
    decoding's 1.0. In a reply where nine passes after broken copies drafted again at their size
    and one went back (with the two returns the record starts from, 3 of 11), a break costs
    0.3 x 0.5 x 3/11 = 0.04 s: 1.7 / 1.64 = 1.04, and the copy is drafted."""
    costs = StepCosts({1: 1.0, 2: 1.1}, {}, switch=0.5)
    refused = Outcome(Choice(Source.LOOKUP, 1), 1, 0)
    for kept_size, drafted in ((True, True), (False, False)):
        policy = Policy(costs, 8, timed=False)
        for _ in range(9):
            policy.observe(refused)
            if not kept_size:
                policy.observe(Outcome(Choice(Source.PLAIN), 0, 0))
        policy.observe(Outcome(Choice(Source.PLAIN), 0, 0))
        policy.saved = 100.0
        choice = policy.choose(1, 1, 0, *_offer(policy, 0.7))
        assert choice == (Choice(Source.LOOKUP, 1) if drafted else Choice(Source.PLAIN))


def test_round_costs_count_the_passes_after_broken_copies_that_changed_size():
    """Only a pass right after a copy the target cut short counts; none seen: a break is
    assumed to switch, and the more passes keep their size after breaks, the less it is."""
    rounds = RoundCosts(StepCosts({1: 1.0}, {}, switch=0.5))
    assert rounds.switch_after_break() == 1.0
    rounds.passed(1)
    rounds.passed(5)  # a copy kept whole: the pass after it does not count
    rounds.passed(1)
    assert rounds.switch_after_break() == 1.0
    chances = []
    for _ in range(6):
        rounds.passed(5, broke=True)
        chances.append(rounds.switch_after_break())
    assert chances[0] == 1.0 and chances == sorted(chances, reverse=True) and chances[-1] < 0.5
    rounds.passed(1)  # after a broken copy, back to one token
    assert rounds.switch_after_break() > chances[-1]


def test_a_copy_not_yet_timed_is_priced_at_the_pace_plain_passes_run_at_now():
    """A pass of 1 token is calibrated at 1.0 s, of 2 at 2.0 s; plain passes in this reply take
    1.3 s. A 1-token copy kept with chance 0.9 makes 1.9 tokens a pass: at the same pace as plain
    passes 1.9 / 2.6 = 0.73 tokens a second against plain decoding's 1 / 1.3 = 0.77, so it does not
    pay; priced at its calibrated 2.0 s it would seem to (0.95). Once copies are timed at what
    they cost, their own pace counts: a copy round timed at 2.0 s (1.0 of its calibration, where
    it started from plain passes' 1.3) moves its factor down."""
    policy = Policy(StepCosts({1: 1.0, 2: 2.0}, {}), 8, timed=True)
    for _ in range(40):
        policy.observe(Outcome(Choice(Source.PLAIN), 0, 0, seconds=1.3))
    policy.saved = 100.0
    assert policy.rounds.factor_of(Source.LOOKUP, 1) == pytest.approx(1.3, abs=0.01)
    assert policy.choose(1, 1, 0, *_offer(policy, 0.9)) == Choice(Source.PLAIN)
    policy.observe(Outcome(Choice(Source.LOOKUP, 1), 1, 1, seconds=2.0))
    assert 1.0 < policy.rounds.factor_of(Source.LOOKUP, 1) < 1.3 - 0.03


def _offer(policy: Policy, chance: float) -> tuple[CopyEvidence, tuple[int, ...]]:
    """A one-token offer that the policy prices at `chance`: its record is replaced by one that says so."""

    class Fixed(CopyRates):
        def reach(self, evidence: CopyEvidence, offer: tuple[int, ...], floor: float = 0.0) -> list[float]:
            return [chance][: len(offer)]

    policy.copies[Source.TEXT] = Fixed()
    return CopyEvidence(12), (5,)


def test_choosing_weighing_and_pricing_change_nothing_in_the_policy():
    """Queries are queries: the policy's whole state is the same before and after them; what a
    round showed reaches it only through `observe`."""
    policy = Policy(StepCosts({1: 1.0, 2: 1.2, 8: 2.0, 64: 6.0}, {1: 0.3}, switch=0.1), 8)
    offer = tuple(range(100, 140))
    strong = CopyEvidence(40, False, AGREE, Source.TEXT)
    for n in range(20):  # some history: copies judged, rounds timed
        judged = CopyJudgement(strong, tuple(range(1000 * n, 1000 * n + 8)), 0, 8, 6)
        policy.observe(Outcome(Choice(Source.LOOKUP, 4), 4, 3, seconds=1.5, copies=(judged,), looked=1e-4))
    before = state(policy)
    policy.choose(64, len(offer), 0, strong, offer)
    policy.choose(8, 0, 3)
    policy.best_copy(policy.copy_reach(CopyEvidence(3, source="prediction"), offer))
    policy.worth_looking()
    policy.speed(Choice(Source.MODEL, 4), 2, optimistic=True)
    policy.gate()(0, 0.9)
    assert state(policy) == before


def state(policy: Policy) -> bytes:
    """Everything the policy holds, but the caches of values computed from it (interpolated
    costs, the draft model's rates by position), which a query may fill."""
    copied = copy.deepcopy(policy)
    copied.costs._memo.clear()
    copied.costs._tables.clear()
    copied.model._rates.clear()
    return pickle.dumps(copied.__dict__)


def test_a_plain_pass_after_a_copy_charges_its_switch_to_what_copies_saved():
    """Passes of 1 and 4 tokens cost 1.0 and 1.6, another size than the last 0.5 more. A copy of
    3 kept whole after a plain pass makes 4 tokens for 1.6 + 0.5 (1.9 saved against four plain
    passes); the plain pass after it switches back and costs 0.5 more than plain decoding would
    have (1.4 saved in all), weighed or not. The first pass after the prefill switches under plain
    decoding too, and so does a plain pass after a draft model's: neither is a copy's loss."""
    costs = StepCosts({1: 1.0, 2: 1.2, 4: 1.6}, {1: 0.1}, switch=0.5)
    for weighed in (True, False):
        policy = Policy(costs, 8, timed=False)
        policy.prefilled()
        policy.observe(Outcome(Choice(Source.PLAIN), 0, 0))  # after the prefill: plain decoding's switch too
        assert policy.saved == pytest.approx(0.0)
        policy.observe(Outcome(Choice(Source.LOOKUP, 3), 3, 3))
        assert policy.saved == pytest.approx(4.0 - 2.1)
        after = Outcome(Choice(Source.PLAIN), 0, 0)
        policy.observe(after) if weighed else policy.decoded_plainly(after)
        assert policy.saved == pytest.approx(1.9 - 0.5)
        policy.observe(Outcome(Choice(Source.MODEL, 1), 1, 1))  # a draft model's pass of 2: not a copy's
        after_model = Outcome(Choice(Source.PLAIN), 0, 0)
        policy.observe(after_model) if weighed else policy.decoded_plainly(after_model)
        assert policy.saved == pytest.approx(1.4)


def test_the_python_time_of_a_round_favours_the_options_that_make_more_tokens_a_round():
    """Passes of 1 and 2 tokens cost 1.0 and 1.2 s. A 1-token copy kept with chance 0.15 makes
    1.15 tokens in 1.2 s, under plain decoding's 1 a second. Where each weighed round has also
    taken 1.0 s of Python (measured), the copy makes 1.15 in 2.2 s against plain's 1 in 2.0: it
    pays. A seeded run decides from no timing, so it stays plain."""
    costs = StepCosts({1: 1.0, 2: 1.2}, {})
    for timed, expected in ((True, Choice(Source.LOOKUP, 1)), (False, Choice(Source.PLAIN))):
        policy = Policy(costs, 8, timed=timed)
        policy.saved = 100.0
        for _ in range(3):
            policy.observe(Outcome(Choice(Source.PLAIN), 0, 0, looked=1.0))
        assert policy.choose(1, 1, 0, *_offer(policy, 0.15)) == expected
    fresh = Policy(costs, 8)
    fresh.saved = 100.0
    assert fresh.choose(1, 1, 0, *_offer(fresh, 0.15)) == Choice(Source.PLAIN)  # no Python time measured yet


@pytest.mark.parametrize(
    ("source", "followed", "share", "adds"),
    [
        (Source.PREDICTION, 0.0, FORESEEN_RISK, True),
        (Source.ATTACHED, 0.0, RISK, False),
        (Source.REPEAT, None, FORESEEN_RISK, True),
    ],
)
def test_auto_foresees_a_followed_texts_reply_by_whose_text_it_is(source, followed, share, adds):
    """A user's prediction: FORESEEN_RISK besides the reply's own, counted on the tokens followed;
    text the prompt attached: RISK in the place of the reply's own where larger, counted alike
    (on the tokens reprinted); an earlier identical request's reply: as a schema's, whole."""
    drafter = AutoDrafter(None, Policy(StepCosts({1: 1.0, 64: 2.0}, {})), prediction=Prediction([5] * 40, name=source))
    drafter.prepare([1, 2, 3])
    loss = drafter.policy.loss
    assert (loss.foreseen, loss.followed, loss.share, loss.adds) == (40.0, followed, share, adds)
