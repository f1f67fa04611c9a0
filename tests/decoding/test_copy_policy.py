"""How the auto policy sizes a copy: it learns from offers judged in hindsight whether this text
reprints its source (copies run on) or only repeats its own patterns (copies break early), and
which tokens broke copies before, and sizes the copy from that and the measured verify costs.
Pure Python, on a fixed cost profile with a cheap 16-token batch."""

from __future__ import annotations

import math

import pytest

from specgen.decoding.auto import OpenOffer, evidence
from specgen.decoding.budgets import FOLLOWED_LOAN
from specgen.decoding.copy_rates import (
    AGREE,
    AGREEMENT_BELOW,
    AGREEMENT_ODDS,
    SINGLE,
    SPLIT,
    TOKENS_MAX,
    CopyEvidence,
    CopyJudgement,
    CopyRates,
)
from specgen.decoding.costs import StepCosts
from specgen.decoding.drafters.base import Source
from specgen.decoding.drafters.suffix import Branch, SuffixIndex
from specgen.decoding.kept import reach_of
from specgen.decoding.policy import FORESEEN_RISK, Choice, Outcome, Policy

# a 2-core CPU's verify curve (ms): 16 tokens cost less per token than anything shorter
COSTS = StepCosts({1: 0.030, 2: 0.051, 4: 0.085, 8: 0.212, 12: 0.273, 16: 0.268, 32: 0.428, 64: 0.804}, {})
RENAMED = 99  # a token an edit renames: copies of the source run on past it, the output does not
MATCH = Branch(0, 100, 12)


def judge(policy: Policy, offer: tuple[int, ...], judged: int, kept: int, match: Branch = MATCH) -> None:
    """One round: the policy sees the offer, then learns how far the output followed it."""
    policy.choose(64, len(offer), 0, evidence(match, Source.TEXT), offer)
    judgement = CopyJudgement(evidence(match, Source.TEXT), offer, 0, judged, kept)
    policy.observe(Outcome(Choice(Source.PLAIN), 0, 0, copies=(judgement,)))


def edited_policy() -> Policy:
    """Forty copies of 10 to 25 new tokens each, kept up to the renamed token and missed there."""
    policy = Policy(COSTS, 8)
    for n in range(40):
        length = 10 + (n * 7) % 16
        offer = (*range(1000 + 100 * n, 1000 + 100 * n + length), RENAMED, *range(50, 60))
        judge(policy, offer, length + 1, length)
    policy.saved = 10.0  # a reply whose copies have paid: the loss bound does not bind
    return policy


def test_a_grounded_copy_runs_to_a_cheap_batch():
    policy = edited_policy()
    assert policy.copies[Source.TEXT].grounded > 0.95
    offer = tuple(range(5000, 5064))
    choice = policy.choose(64, len(offer), 0, evidence(MATCH, Source.TEXT), offer)
    assert choice.source == Source.LOOKUP and choice.k >= 15


def test_a_copy_stops_just_before_a_token_that_broke_copies_before():
    policy = edited_policy()
    offer = (*range(9000, 9012), RENAMED, *range(9100, 9150))  # new tokens, then the renamed one
    choice = policy.choose(64, len(offer), 0, evidence(MATCH, Source.TEXT), offer)
    assert choice.source == Source.LOOKUP and choice.k <= 12
    assert choice.k >= 3  # the twelve tokens before it are worth a batch


def test_copies_that_break_early_at_any_match_draft_nothing():
    policy = Policy(COSTS, 8)
    for n in range(40):
        offer = tuple(range(100 * n, 100 * n + 20))
        judge(policy, offer, 2, 1)
    assert policy.copies[Source.TEXT].grounded < 0.05
    offer = tuple(range(9000, 9020))
    assert policy.choose(16, len(offer), 0, evidence(MATCH, Source.TEXT), offer).source == Source.PLAIN


def test_the_kind_of_text_follows_a_document_that_changes():
    rates = CopyRates()
    for n in range(30):  # a long reprint
        rates.learn(CopyJudgement(CopyEvidence(12), tuple(range(100 * n, 100 * n + 16)), 0, 16, 16))
        rates.forget()
    assert rates.grounded > 0.95
    for n in range(30):  # then new text, where copies break at once
        rates.learn(CopyJudgement(CopyEvidence(12), tuple(range(9000 + 10 * n, 9000 + 10 * n + 8)), 0, 1, 0))
        rates.forget()
    assert rates.grounded < 0.05


def test_a_record_prices_a_copy_as_the_two_curves_runs_mixed_by_its_odds():
    """Keep chances worked out by hand from the GROUNDED and LOOSE tables in copy_rates, at the
    bin of each token's match (offer match + tokens before it), each kind's run multiplied out
    and the two runs weighted by the record's odds: a copy reprints its source or does not."""
    even = CopyRates().rates(CopyEvidence(1), tuple(range(64)))  # a fresh record: even odds, weight 0.5
    assert even[0] == pytest.approx(0.285)  # match 1, bin [1]: (0.32 + 0.25) / 2
    reach = CopyRates().reach(CopyEvidence(1), (7, 8, 9))
    assert reach[1] == pytest.approx(0.5 * 0.32 * 0.70 + 0.5 * 0.25 * 0.50)  # matches 1 and 2: 0.1745
    assert even[1] == pytest.approx(0.1745 / 0.285)  # kept once the first was: 0.612, not (0.70 + 0.50) / 2
    assert reach[2] == pytest.approx(0.5 * 0.32 * 0.70 * 0.85 + 0.5 * 0.25 * 0.50 * 0.50)  # match 3: 0.85, 0.50
    grounded_run = 0.32 * 0.70 * 0.85 * 0.92 * 0.92 * 0.93 * 0.93  # matches 1 to 7 (bins 1, 2, 3, 4, 4, 6, 6)
    loose_run = 0.25 * 0.50 * 0.50 * 0.60 * 0.60 * 0.62 * 0.62
    assert CopyRates().reach(CopyEvidence(1), tuple(range(7)))[6] == pytest.approx(0.5 * grounded_run + 0.5 * loose_run)
    long = CopyRates().rates(CopyEvidence(64), (1, 2))  # both at bin [64, ...): 0.99 and 0.65
    assert long[1] == pytest.approx((0.5 * 0.99**2 + 0.5 * 0.65**2) / (0.5 * 0.99 + 0.5 * 0.65))
    leaning = CopyRates(math.log(3)).rates(CopyEvidence(40), (7,))  # odds 3:1 grounded: weight 0.75
    assert leaning[0] == pytest.approx(0.8975)  # match 40, bin [32, 48): 0.75 * 0.98 + 0.25 * 0.65
    anchored = CopyRates().rates(CopyEvidence(2, anchored=True), (7,))
    assert anchored[0] == pytest.approx(0.6)  # short anchored bin [2, 3): (0.70 + 0.50) / 2


def test_an_offer_is_judged_over_the_rounds_that_emit_its_tokens():
    offer = OpenOffer(None, (1, 2, 3, 4, 5, 6))
    assert offer.judge([1, 2]) == CopyJudgement(None, (1, 2, 3, 4, 5, 6), 0, 2, 2)
    assert not offer.settled
    assert offer.judge([3, 9, 5]) == CopyJudgement(None, (1, 2, 3, 4, 5, 6), 2, 4, 3)
    assert offer.settled  # missed at position 3: nothing after it is judged
    whole = OpenOffer(None, (1, 2))
    assert whole.judge([1, 2, 3]) == CopyJudgement(None, (1, 2), 0, 2, 2) and whole.settled


def worst_case(
    risk: float,
    foreseen: int = 0,
    truth: StepCosts = COSTS,
    match: int = 12,
    judged: int = 1,
    prediction: bool = False,
    source: Source = Source.TEXT,
    share: float = FORESEEN_RISK,
    adds: bool = True,
) -> tuple[list[float], list[int], list[float]]:
    """Hindsight says every offer would have been kept, yet every drafted copy is refused at its
    first token: the seconds lost against plain decoding after each round, each round's draft
    length, and the worst case of each copy drafted as a bet (0 for the others), for a reply of
    300 tokens (`foreseen`: the tokens a prediction, where `prediction`, or a schema foresees;
    `truth`: what the passes really take, reported to the policy as each round's time; `match`:
    the offers' evidence; `judged`: how many tokens of an offer not drafted hindsight keeps;
    `source`: who offers them; the prediction's or the attached text's, followed by every round
    that drafts nothing; `share`, `adds`: what the foresight allows of the foreseen reply's plain
    time, and whether besides the reply's own share or in its place where larger)."""
    policy = Policy(COSTS, 8, risk=risk)
    if foreseen:
        policy.foresee(foreseen, prediction, share, adds)
    one, spent, plain, lost, lengths, bets, followed = truth.verify_cost(1), 0.0, 0.0, [], [], [], 0
    for n in range(300):
        offer = tuple(range(1000 * n, 1000 * n + 16))
        policy.follow(followed)
        choice = policy.choose(64, len(offer), 0, CopyEvidence(match, source=source), offer)
        k = choice.k if choice.source == Source.LOOKUP else 0
        seconds = truth.verify_cost(k + 1)  # the round's pass; it yields one token either way
        spent += seconds
        plain += one  # one token a round: a refused copy, or plain decoding
        hindsight = (CopyJudgement(CopyEvidence(match, source=source), offer, 0, judged, judged),) if not k else ()
        policy.observe(Outcome(choice, k, 0, seconds=seconds, copies=hindsight))
        lost.append(spent - plain)
        lengths.append(k)
        bets.append(choice.bet)
        followed += source in (Source.PREDICTION, Source.ATTACHED) and not k  # a refused copy left it
    return lost, lengths, bets


def test_a_reply_never_loses_more_than_its_risk_to_copies_however_they_go():
    """In the measured costs a reply whose copies all fail stays within RISK of plain decoding at
    every round; without the bound the same reply loses far more."""
    one, risk = COSTS.verify_cost(1), Policy(COSTS).risk
    lost, lengths, _ = worst_case(risk)
    assert sum(lengths) > 0, "the bound must be exercised: copies are drafted once affordable"
    assert all(loss <= risk * one * (n + 1) + 1e-9 for n, loss in enumerate(lost))
    unbounded, _, _ = worst_case(math.inf)
    assert unbounded[-1] > 0.5 * one * 300


def test_a_reply_bets_beyond_its_risk_once_and_loses_at_most_that_copys_worst_case_more():
    """The estimates are sure (hindsight keeps every offer whole at a long match), yet every
    drafted copy is refused: a copy beyond what the reply can bear is drafted as a bet (its chance
    to overshoot is under CHANCE) and fails; no other bet follows, and the copies drafted after it
    (the estimates still sure) fit in what is left of its worst case, so the reply stays within
    RISK of its plain time plus that one copy's worst case (at most 16 tokens' here: a pass of 17
    less the one-token pass it replaces)."""
    one, risk = COSTS.verify_cost(1), Policy(COSTS).risk
    lost, lengths, bets = worst_case(risk, match=64, judged=16)
    beyond = [loss - risk * one * (n + 1) for n, loss in enumerate(lost)]
    assert max(beyond) > 0, "a copy beyond the worst-case bound should have been drafted"
    made = [n for n, bet in enumerate(bets) if bet]
    assert len(made) == 1, made
    assert max(beyond) <= bets[made[0]] + 1e-9 <= COSTS.verify_cost(17) - one + 1e-9
    again = [n for n in range(made[0] + 1, len(lengths)) if lengths[n] and beyond[n - 1] > 0]
    assert again, "copies are drafted again while the reply is beyond its risk, within what is left of the bet"


def test_a_copy_is_priced_by_the_time_its_own_verify_size_took():
    """Copies of 1 token verified at their calibrated time, copies of 3 at twice theirs: the
    next offer is drafted 1 token long. By the calibration (a 4-token pass 1.2 times a 2-token
    one) 3 tokens would pay more, and so they would under one time factor for all copies."""
    costs = StepCosts({1: 0.030, 2: 0.050, 4: 0.060, 8: 0.200}, {})
    policy = Policy(costs, 8, risk=math.inf)
    match = evidence(Branch(0, 100, 40), Source.TEXT)
    for n in range(40):
        k = 1 + 2 * (n % 2)
        offer = tuple(range(100 * n, 100 * n + k))
        policy.choose(64, k, 0, match, offer)
        seconds = costs.verify_cost(k + 1) * (2.0 if k == 3 else 1.0)
        policy.observe(Outcome(Choice(Source.LOOKUP, k), k, k, seconds=seconds))
    offer = tuple(range(9000, 9003))
    rates = policy.copies[Source.TEXT].rates(match, offer)
    one_token = (1 + rates[0]) / costs.verify_cost(2)
    three = (1 + rates[0] + rates[0] * rates[1] + rates[0] * rates[1] * rates[2]) / costs.verify_cost(4)
    assert three > one_token > three / 2.0  # by the calibration 3 pay more; at twice the time, 1 does
    assert policy.choose(64, 3, 0, match, offer) == Choice(Source.LOOKUP, 1)


def test_a_foreseen_reply_drafts_from_its_first_round_and_loses_at_most_its_foreseen_share():
    """A reply foreseen at 200 tokens (a prediction of that length, a schema's example) may lose
    FORESEEN_RISK of their plain time from the first round, besides RISK of its own plain time:
    with every copy refused it drafts at once, where the bound alone drafts nothing yet, and its
    loss stays within the two shares."""
    one, risk = COSTS.verify_cost(1), Policy(COSTS).risk
    lost, lengths, _ = worst_case(risk, foreseen=200)
    assert lengths[0] > 0 == worst_case(risk)[1][0]
    assert all(loss <= risk * one * (n + 1) + FORESEEN_RISK * one * 200 + 1e-9 for n, loss in enumerate(lost))
    assert max(lost) > 0.5 * FORESEEN_RISK * one * 200  # the share is used, not merely allowed


def test_a_foreseen_reply_whose_share_is_spent_drafts_again_as_its_own_share_grows():
    """Every copy refused: once the foreseen share is spent, the reply's own share (RISK of its
    plain time) still grows by RISK of a one-token pass a round, so a 1-token copy, whose worst
    case is a 2-token pass less a 1-token one, fits again every (that worst case) / (RISK one)
    rounds. Were the foreseen share the larger of the two instead, the reply would draft nothing
    until its plain time had outgrown the 200 foreseen tokens' twice over, past these 300 rounds."""
    one, risk = COSTS.verify_cost(1), Policy(COSTS).risk
    lost, lengths, _ = worst_case(risk, foreseen=200)
    spent = next(n for n, loss in enumerate(lost) if loss > FORESEEN_RISK * one * 200 - (COSTS.verify_cost(2) - one))
    every = (COSTS.verify_cost(2) - one) / (risk * one)  # rounds of plain time a 1-token copy's worst case takes
    later = [n for n in range(spent + 1, len(lengths)) if lengths[n]]
    assert spent < 150 and len(later) >= (len(lengths) - spent) / every / 2, (spent, later)


def test_a_reply_that_does_not_follow_its_prediction_loses_no_more_than_a_reply_without_one():
    """A prediction of 200 tokens that the reply never follows (a short answer beside a file):
    the text's copies, which look sure and are all refused, get none of the prediction's
    allowance, so the reply loses exactly what it would without a prediction; a schema's
    foresight, which the grammar holds the reply to, lets the same copies spend its share."""
    one, risk = COSTS.verify_cost(1), Policy(COSTS).risk
    alone = worst_case(risk)
    assert worst_case(risk, foreseen=200, prediction=True)[:2] == alone[:2]
    schema, _, _ = worst_case(risk, foreseen=200)
    assert max(schema) > max(alone[0]) + 0.5 * FORESEEN_RISK * one * 200


def test_only_the_predictions_own_copies_spend_its_allowance():
    """A reply that has followed its 200-token prediction for 20 rounds: the prediction's copy of
    16 tokens is drafted on its allowance, which the reply's own share could not bear; the same
    offer priced by the same record, but offered by the text, gets only the reply's own share."""
    policy = Policy(COSTS, 8)
    policy.foresee(200, prediction=True)
    for n in range(20):  # plain rounds whose token followed the prediction, as its offer foresaw
        offer = tuple(range(1000 * n, 1000 * n + 16))
        foresaw = CopyJudgement(CopyEvidence(12, source=Source.PREDICTION), offer, 0, 1, 1)
        policy.observe(Outcome(Choice(Source.PLAIN), 0, 0, seconds=COSTS.verify_cost(1), copies=(foresaw,)))
        policy.follow(n + 1)
    policy.copies[Source.TEXT] = policy.copies[Source.PREDICTION]  # one record prices both
    offer = tuple(range(9000, 9016))
    predicted = policy.choose(64, 16, 0, CopyEvidence(12, source=Source.PREDICTION), offer)
    copied = policy.choose(64, 16, 0, CopyEvidence(12, source=Source.TEXT), offer)
    own = policy.loss.bearable(foreseen=False)
    assert predicted.source == Source.LOOKUP and COSTS.verify_cost(predicted.k + 1) - COSTS.verify_cost(1) > own
    assert copied.source != Source.LOOKUP or COSTS.verify_cost(copied.k + 1) - COSTS.verify_cost(1) <= own


def test_a_predictions_allowance_grows_with_the_tokens_the_reply_followed():
    """Every offer is the prediction's, and the reply follows the prediction in every round that
    drafts nothing (hindsight keeps each offer's first 4 tokens), yet every drafted copy is
    refused: the reply may lose FORESEEN_RISK of the plain time of FOLLOWED_LOAN tokens for each
    token it followed (at most the prediction's 200), besides RISK of its own, and one bet's
    worst case. It drafts nothing in its first round, where it has followed nothing, and spends
    the allowance later."""
    one, risk = COSTS.verify_cost(1), Policy(COSTS).risk
    lost, lengths, bets = worst_case(risk, foreseen=200, judged=4, prediction=True, source=Source.PREDICTION)
    followed, bound = 0, []
    for k in lengths:  # after each round: what the reply followed before it, and its own share then
        bound.append(risk * one * (len(bound) + 1) + FORESEEN_RISK * one * min(200, FOLLOWED_LOAN * followed))
        followed += not k
    assert lengths[0] == 0 and sum(lengths) > 0
    assert all(loss <= limit + max(bets) + 1e-9 for loss, limit in zip(lost, bound, strict=True))
    assert max(lost) > max(worst_case(risk)[0]) + FORESEEN_RISK * one * 100  # the allowance is used


def test_attached_texts_allowance_is_the_share_any_reply_may_lose_of_the_tokens_followed():
    """As the prediction's test above, with the text the prompt attached offering every copy: the
    reply may lose RISK (not FORESEEN_RISK) of the plain time of FOLLOWED_LOAN tokens for each
    token it followed, at most the text's 200, where that is more than RISK of its own (in its
    place, not besides), and one bet's worst case; and it does spend that allowance."""
    one, risk = COSTS.verify_cost(1), Policy(COSTS).risk
    lost, lengths, bets = worst_case(
        risk, foreseen=200, judged=4, prediction=True, source=Source.ATTACHED, share=risk, adds=False
    )
    followed, bound = 0, []
    for k in lengths:
        bound.append(risk * one * max(len(bound) + 1, min(200, FOLLOWED_LOAN * followed)))
        followed += not k
    assert lengths[0] == 0 and sum(lengths) > 0
    assert all(loss <= limit + max(bets) + 1e-9 for loss, limit in zip(lost, bound, strict=True))
    alone = worst_case(risk)[0]  # the same reply with nothing attached
    assert max(a - b for a, b in zip(lost, alone, strict=True)) > risk * one * 100  # the allowance is spent early


def test_copies_grow_as_they_pay():
    """Copies that are kept fund longer ones: the first is short, later ones reach a cheap batch."""
    policy = edited_policy()
    policy.saved = 0.0
    lengths = []
    for n in range(12):
        offer = tuple(range(7000 + 100 * n, 7000 + 100 * n + 64))
        choice = policy.choose(64, len(offer), 0, evidence(MATCH, Source.TEXT), offer)
        lengths.append(choice.k if choice.source == Source.LOOKUP else 0)
        kept = choice.k if choice.source == Source.LOOKUP else 0
        policy.observe(
            Outcome(choice, kept, kept, copies=(CopyJudgement(evidence(MATCH, Source.TEXT), offer, 0, 64, 64),))
        )
    assert lengths[0] < 15 <= lengths[-1], lengths


def test_the_source_s_agreement_prices_the_first_token_of_a_short_match():
    rates = CopyRates()
    offer = (1, 2, 3)
    single, agree, split = (rates.rates(CopyEvidence(2, agreement=a), offer) for a in (SINGLE, AGREE, SPLIT))
    assert split[0] < single[0] < agree[0]
    assert single[1:] == agree[1:] == split[1:], "only the first token is judged by the source's agreement"
    odds = single[0] / (1 - single[0])
    assert agree[0] / (1 - agree[0]) == pytest.approx(odds * AGREEMENT_ODDS[AGREE])
    long = [rates.rates(CopyEvidence(AGREEMENT_BELOW, agreement=a), offer)[0] for a in (SINGLE, AGREE, SPLIT)]
    assert long[0] == long[1] == long[2], "a long match is specific enough on its own"


def test_the_index_counts_how_the_occurrences_of_a_context_went_on():
    tokens = [7, 8, 1, 3, 7, 8, 2, 4, 7, 8, 1, 5, 7, 8]  # "7 8" went on as 1, 2, 1
    index = SuffixIndex(tokens)
    branches = index.find(index)
    by_token = {index.tokens[b.position]: b for b in branches}
    assert (by_token[1].agreeing, by_token[1].occurrences) == (2, 3)
    assert (by_token[2].agreeing, by_token[2].occurrences) == (1, 3)
    assert evidence(by_token[1], Source.TEXT).agreement == SPLIT
    assert evidence(Branch(0, 5, 2, agreeing=3, occurrences=3), Source.TEXT).agreement == AGREE
    assert evidence(Branch(0, 5, 2), Source.TEXT).agreement == SINGLE


def test_each_copy_source_is_priced_from_its_own_record():
    policy = Policy(COSTS, 8)
    for n in range(30):  # the record pattern's offers all miss at once
        offer = tuple(range(100 * n, 100 * n + 16))
        policy.choose(64, len(offer), 0, CopyEvidence(12, source=Source.PATTERN), offer)
        missed = CopyJudgement(CopyEvidence(12, source=Source.PATTERN), offer, 0, 1, 0)
        policy.observe(Outcome(Choice(Source.PLAIN), 0, 0, copies=(missed,)))
    fresh = CopyRates()
    assert policy.copies[Source.PATTERN].grounded < 0.05
    text_now = policy.copies[Source.TEXT].rates(CopyEvidence(12), (5000, 5001))
    assert text_now == pytest.approx(fresh.rates(CopyEvidence(12), (5000, 5001)), rel=1e-9), (
        "the text's copies keep their own (untouched) record"
    )


def test_a_token_s_record_fades_and_the_records_are_bounded():
    rates = CopyRates()
    evidence_12 = CopyEvidence(12)
    rates.learn(CopyJudgement(evidence_12, (RENAMED,), 0, 1, 0))  # RENAMED broke a copy once
    right_after = rates.rates(evidence_12, (RENAMED,))[0] / rates.rates(evidence_12, (RENAMED + 1,))[0]
    assert right_after == pytest.approx(0.5)  # (0 kept + 1) / (1 judged + 1)
    for _ in range(50):
        rates.forget()
    faded = rates.rates(evidence_12, (RENAMED,))[0] / rates.rates(evidence_12, (RENAMED + 1,))[0]
    assert faded == pytest.approx(1 / (1 + 0.98**50))  # the miss weighs 0.98^50 now
    for token in range(TOKENS_MAX + 500):
        rates.learn(CopyJudgement(evidence_12, (10_000 + token,), 0, 1, 1))
    assert len(rates.tokens) <= TOKENS_MAX


# an H100's curve for a 1.5B target (ms, each pass after one of its size), and what a pass of
# another size costs more there (benchmarks/results/2026-11-27-h100-4)
GRAPHS = StepCosts({1: 2.2e-3, 2: 2.3e-3, 4: 3.1e-3, 8: 4.0e-3, 16: 5.2e-3, 64: 1e-2}, {}, switch=1.1e-3)


class ThirtyPercent(Policy):
    """The policy with a copy offer whose first token is kept 30% of the time, the rest 5%."""

    def copy_reach(self, evidence, offer: tuple[int, ...]) -> list[float]:
        return reach_of([0.3, *[0.05] * (len(offer) - 1)])


def after(costs: StepCosts, drafted: int) -> Choice:
    """The choice for a 30% offer after a round whose pass was `drafted` + 1 tokens."""
    policy = ThirtyPercent(costs, 8)
    policy.saved = 1.0  # the loss bound does not bind
    policy.observe(Outcome(Choice(Source.LOOKUP if drafted else Source.PLAIN, drafted), drafted, 0))
    offer = tuple(range(7000, 7010))
    return policy.choose(64, len(offer), 0, evidence(MATCH, Source.TEXT), offer)


def test_a_change_of_pass_size_is_charged_so_a_weak_copy_waits_for_a_pass_of_its_size():
    """On a GPU a pass that repeats the size before it replays a captured graph; another size costs
    1.1 ms more on a 2.2 ms pass. A copy of one token kept 30% of the time loses after plain
    rounds (1.3 tokens for 2.3 + 1.1 ms, and 70% of a switch back, against 2.2 ms a token) and
    wins after a 2-token pass (plain decoding would switch back: 3.3 ms a token)."""
    assert after(GRAPHS, 0) == Choice(Source.PLAIN)
    assert after(GRAPHS, 1) == Choice(Source.LOOKUP, 1)
    assert after(StepCosts(GRAPHS.verify, {}), 0) == Choice(Source.LOOKUP, 1)  # no switch cost: it pays anyway
