"""Choose each round between plain decoding, the draft model at some K, and a copy of 0..64 tokens.

Every option is priced the same way: the tokens it yields on average (`kept`: one, plus the
chance that each prefix of its draft is kept) over the seconds it will take (`costs.RoundCosts`:
the measured step costs, the switch cost where the target's pass changes size, a time factor
learnt from the wall time such rounds took; and the Python time a weighed round takes, measured).
The option with the most tokens per second wins; plain decoding is the offer of length 0.

Where each estimate comes from:
- a copy: its source's record in this reply (`copy_rates`), which gives the chance that each
  prefix of the offer is kept from the match behind it, how the source's copies held before,
  the tokens that broke copies and the source's agreement. A copy that breaks sends the next
  pass to another size, so the chance that it breaks adds that switch cost.
- the draft model: its keep rate by draft position (`kept.Acceptance`), learnt from the rounds
  it drafted, and a gate (`gate`) that drops a token whose calibrated confidence would not pay
  for its extra verify. The model is judged only when used, so trying it while another choice
  looks better is exploration, allowed while its predicted cost stays under `_EXPLORE_SHARE` of
  the time spent so far and only when it could win.
- copy offers are judged every round for free: what each would have proposed is compared with
  the tokens the target then emitted, which has the same expectation as verifying it.
- where a change of pass size costs a switch, plain decoding's place may be taken by a held
  pass of two tokens (`hold`): the offer's first token, or a filler where there is none, drafted
  for a stretch of rounds while the rate at which offers' first tokens were kept pays for the
  switches (a decision round by round would never pay a switch for one token).

Two budgets bound what drafts may cost (`budgets`): a copy is drafted only where its loss, were
its first token refused, is covered by what this reply's copies saved plus a share of its plain
time, or where by the same estimates the chance that it loses more than that is small and its
expected loss is covered; held passes lose at most what they saved plus a share of their own;
and drafts are weighed only while the time spent weighing them stays within what they saved.

Queries (`choose`, `best_copy`, `speed`, `worth_looking`, `holds`) change nothing; what a round showed
is learnt in `observe`, which gets back the `Choice` the round made. Pure Python: no llama.cpp
here (tests/policysim.py replays cost profiles and acceptance traces through this code).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specgen.decoding.budgets import FORESEEN_RISK, RISK, LookBudget, LossBudget, reach_sums
from specgen.decoding.copy_rates import (
    PREDICTION_ODDS,
    CopyEvidence,
    CopyJudgement,
    CopyRates,
    StructureRates,
)
from specgen.decoding.costs import RoundCosts, StepCosts
from specgen.decoding.drafters.base import Source
from specgen.decoding.hold import STAY, HoldRate, worth_holding
from specgen.decoding.kept import Acceptance, expected_tokens

__all__ = [
    "FORESEEN_RISK",
    "K_MAX",
    "LOOKUP_MAX",
    "RISK",
    "Acceptance",
    "Choice",
    "ModelGate",
    "Outcome",
    "Policy",
    "expected_tokens",
]

K_MAX = 8
LOOKUP_MAX = 64
_MODEL_FORGET = 0.96  # per round, of the draft model's keep counts and gate calibration (25 rounds ago: a third)
_EXPLORE_SHARE = 0.03  # most of the time spent so far that exploration may take
_CONFIDENCE_BINS = 10  # the gate's calibration: bins of the draft's top probability
_GOOD_PAIR = 0.9  # per-token keep rate of a very well-matched draft model, the bound model_can_pay assumes
_NEGLIGIBLE = 1e-3  # a copy's longer prefixes kept with less chance than this add too little to price
STALE_ROUNDS = 16  # timed rounds that may show the calibration was measured on a busy machine
STALE_RATIO = 0.9  # ... when their median ran under this share of the calibrated one-token cost (the
# loop adds the grammar's and the policy's time to a pass, so a fresh calibration reads above 1)


@dataclass(frozen=True)
class Choice:
    """A round's choice: who drafts (Source.PLAIN, Source.MODEL or Source.LOOKUP) and how many tokens; whether it
    explores the draft model; whether the round is a held pass (`hold`), accounted apart from
    copies (told back to the policy with the round's `Outcome`; not part of the choice's identity)."""

    source: Source
    k: int = 0
    explore: bool = False
    holding: bool = field(default=False, compare=False)
    # a copy's loss were its first token refused, where that is more than the reply could bear (a bet)
    bet: float = field(default=0.0, compare=False)


@dataclass(frozen=True)
class Outcome:
    """What one round showed. `copies`: the copy offers this round's emitted tokens judged (made
    in this round or earlier ones). `dropped`: the confidence of a draft token the gate refused
    and, where known, whether the target then emitted it."""

    choice: Choice
    drafted: int
    accepted: int
    confidences: tuple[float, ...] = ()
    lag: int = 0
    dropped: tuple[float, bool] | None = None
    seconds: float | None = None  # wall time of drafting and verifying; None when untimed
    copies: tuple[CopyJudgement, ...] = ()
    looked: float = 0.0  # seconds spent weighing this round's drafts and learning from the last
    first_kept: bool = False  # whether the round's copy offer (drafted or not) had its first token kept


class ModelGate:
    """One round's gate on the draft model's tokens: keeps a token while its expected gain pays
    for its extra verify (it holds the round's running reach, tokens and seconds)."""

    def __init__(self, costs: StepCosts, calibration: list[list[float]]):
        self.costs, self.calibration = costs, calibration
        self.reach, self.tokens, self.seconds = 1.0, 1.0, costs.verify_cost(1)

    def __call__(self, position: int, confidence: float) -> bool:
        """Keep the draft token at `position` (0-based)?"""
        kept, seen = self.calibration[_confidence_bin(confidence)]
        gain = self.reach * kept / seen
        seconds = self.seconds + self.costs.draft_cost(1)
        extra = self.costs.verify_cost(position + 2) - self.costs.verify_cost(position + 1)
        if gain * seconds < self.tokens * extra:
            return False
        self.reach, self.tokens, self.seconds = gain, self.tokens + gain, seconds + extra
        return True


class Policy:
    """Running estimates of costs and acceptance, and the per-round choice drawn from them."""

    def __init__(self, costs: StepCosts, k_max: int = K_MAX, timed: bool = True, risk: float = RISK):
        """`risk`: the most of a reply's plain-decoding time that copies not yet paid for may lose;
        `timed`: learn from measured time (a seeded run does not, so it decides the same way every time)."""
        self.costs, self.k_max, self.timed, self.risk = costs, k_max, timed, risk
        self.rounds = RoundCosts(costs, timed)
        self.loss = LossBudget(risk)
        self.look = LookBudget()
        self.model = Acceptance(k_max)
        self.copies: dict[Source, CopyRates | StructureRates] = {Source.TEXT: CopyRates(), Source.PATTERN: CopyRates()}
        self.calibration = [[(i + 0.5) / _CONFIDENCE_BINS * 2.0, 2.0] for i in range(_CONFIDENCE_BINS)]  # [kept, seen]
        self.hold = HoldRate()
        # holding can pay only where switching out and back in costs more than one held pass's extra
        self.can_hold = 2.0 * costs.switch > costs.verify_cost(2) - costs.verify_cost(1)
        self.spent = self.explored = 0.0  # predicted seconds: all rounds, exploring rounds
        self.after_copy = False  # whether the target's last pass verified a copy

    # -- the parts' state, by the names callers read ---------------------------------------------

    @property
    def saved(self) -> float:
        return self.loss.saved

    @saved.setter
    def saved(self, seconds: float) -> None:
        self.loss.saved = seconds

    @property
    def plain(self) -> float:
        return self.loss.plain

    @plain.setter
    def plain(self, seconds: float) -> None:
        self.loss.plain = seconds

    @property
    def looked(self) -> float:
        return self.look.looked

    @property
    def factor(self) -> dict[Source, float]:
        return self.rounds.factor

    # -- predictions (queries: they change nothing) ---------------------------------------------

    def round_cost(self, choice: Choice, lag: int = 0) -> float:
        """Predicted seconds of one round, before the choice's learnt time factor."""
        return self.rounds.round_cost(choice.source, choice.k, lag)

    def pass_cost(self, size: int) -> float:
        """Predicted seconds of the target's next pass over `size` tokens, switch cost included."""
        return self.rounds.pass_cost(size)

    def speed(self, choice: Choice, lag: int = 0, optimistic: bool = False) -> float:
        """Expected tokens per second of a round of plain decoding or the draft model."""
        tokens = expected_tokens(self.model.rates(optimistic), choice.k) if choice.source == Source.MODEL else 1.0
        return tokens / (self.rounds.seconds(choice.source, choice.k, lag) + self.python_time())

    def python_time(self) -> float:
        """Measured seconds a weighed round spends in Python (finding offers, pricing them,
        learning from the round), on average this reply: every option of a round pays it, so it
        favours the options that make more tokens a round. 0 in a seeded run, which decides
        from no timing."""
        return self.look.looked / self.look.weighed if self.timed and self.look.weighed else 0.0

    def copy_reach(self, evidence: CopyEvidence | None, offer: tuple[int, ...]) -> list[float]:
        """The chance that at least j tokens of a copy offer are kept, j = 1..len(offer), up to
        the first under `_NEGLIGIBLE` (the longer prefixes are not priced: `_priced_copy`)."""
        if evidence is None or not offer:
            return []
        return self.copies.get(evidence.source, _fresh_record(evidence.source)).reach(evidence, offer, _NEGLIGIBLE)

    def best_copy(self, reach: list[float]) -> Choice | None:
        """The copy length with the most expected tokens per second, among those whose loss,
        should the first token be refused, the loss budget bears; None where the budget bears
        none. `reach`: the offer's chances that each prefix is kept (`copy_reach`), as long as the
        copy may be."""
        return self._priced_copy(reach)[0]

    def _priced_copy(
        self, reach: list[float], floor: float = 0.0, source: Source | None = None
    ) -> tuple[Choice | None, float]:
        """`best_copy`, and its expected tokens per second (0 where there is none), among the
        lengths faster than `floor` (a length no faster is not checked against the budget);
        `source`: whose record priced the offer (a prediction's allowance covers its own copies only)."""
        best, best_speed, tokens, bet = None, floor, 1.0, 0.0
        python = self.python_time()
        one = self.plain_pass()
        switch, step, sums = self.costs.switch, self.costs.verify_cost(1), reach_sums(reach)
        back = switch * self.rounds.switch_after_break()  # what a break costs the next pass, on average
        foreseen = self.loss.followed is None or source in (Source.PREDICTION, Source.ATTACHED)
        bearable = self.loss.bearable(foreseen)
        prices = self.rounds.copy_costs(len(reach))  # each length's pass and time factor
        for k, (chance, (verify, factor)) in enumerate(zip(reach, prices, strict=True), start=1):
            if chance < _NEGLIGIBLE:
                break
            tokens += chance
            # a copy that breaks may send the next pass to another size; one kept whole may repeat its size
            speed = tokens / ((verify + (1.0 - chance) * back) * factor + python)
            if speed <= best_speed:
                continue
            # refused at once: one token for the pass and the way back; each token kept saves a plain pass
            worst = verify + switch - one
            if self.loss.bears_copy(worst, step, reach, sums, k, bearable):
                best, best_speed, bet = Choice(Source.LOOKUP, k), speed, worst
        if best is None:
            return None, 0.0
        return Choice(Source.LOOKUP, best.k, bet=bet if self.loss.is_bet(bet, foreseen) else 0.0), best_speed

    def plain_pass(self) -> float:
        """What plain decoding would pay for this round's pass: one token's, plus the switch into
        that size where the pass before was not a copy's (after a prefill or a draft model's pass
        plain decoding switches too); the switch back from a copy is the copy's to pay."""
        switched = self.rounds.last_size != 1 and not self.after_copy
        return self.costs.verify_cost(1) + (self.costs.switch if switched else 0.0)

    def affordable(self) -> float:
        """The most predicted seconds a round may lose to a refused copy now (`LossBudget.bearable`)."""
        return self.loss.bearable()

    def worth_looking(self) -> bool:
        """Whether to weigh drafts this round (`LookBudget.worth_looking`); a seeded run always does."""
        return not self.timed or self.look.worth_looking(self.loss.foreseen > 0, self.loss.plain)

    def calibration_too_slow(self) -> bool:
        """Whether this reply's rounds ran well under their calibrated cost (the median of at
        least `STALE_ROUNDS` rounds' measured over predicted seconds under `STALE_RATIO`). The
        calibration keeps the fastest of several passes, so rounds in the loop, which also weigh
        drafts and mask rows, take at least as long, unless the machine was busy while the
        calibration measured: then its costs are too high, and a copy not yet timed is priced at
        them while plain decoding's learnt time factor follows the faster machine, so copies that
        would pay are passed over; or, where the busy spell flattened the curve, every copy looks
        nearly free and is drafted, refused or not. Every kind of round counts, so a reply that
        such a curve keeps drafting shows it as well as one that decodes plainly."""
        ratios = sorted(self.rounds.pass_ratios)
        return len(ratios) >= STALE_ROUNDS and ratios[len(ratios) // 2] < STALE_RATIO

    def model_can_pay(self) -> bool:
        """Could the draft model beat plain decoding by 15% if it were as good as a well-matched
        pair gets (each token kept with chance `_GOOD_PAIR`)? Where not, the model is neither
        prefilled nor kept in step, which saves the prefill of a model that would never run.
        Priced at steady costs: a model drafting every round keeps its pass size."""
        if not self.costs.draft:
            return False
        plain = 1.0 / self.costs.verify_cost(1)
        steady = [self.costs.verify_cost(k + 1) + k * self.costs.draft_cost(1) for k in range(1, self.k_max + 1)]
        return any(expected_tokens([_GOOD_PAIR] * k, k) / seconds > 1.15 * plain for k, seconds in enumerate(steady, 1))

    def choose(
        self, room: int, lookup: int, lag: int, evidence: CopyEvidence | None = None, offer: tuple[int, ...] = ()
    ) -> Choice:
        """The best choice for a round with `room` tokens to draft (the draft model at most its
        k_max of them, a copy at most LOOKUP_MAX), `lookup` tokens on offer with `evidence`
        (`offer`: the tokens), the draft model `lag` tokens behind; or a bounded exploration of
        the draft model."""
        length = min(lookup, room, LOOKUP_MAX)
        reach = self.copy_reach(evidence, offer[:length])
        models = [Choice(Source.MODEL, k) for k in range(1, min(room, self.k_max) + 1)] if self.costs.draft else []
        amortized = max(lag - 1, 0) // 8  # a catch-up is paid once, then serves the rounds after it
        best = max([Choice(Source.PLAIN), *models], key=lambda c: self.speed(c, amortized))
        best_speed = self.speed(best, amortized)
        if best.source == Source.PLAIN and room > 0 and self.holds(room):  # a held pass in plain decoding's place
            best, best_speed = Choice(Source.LOOKUP, 1, holding=True), self._held_speed(reach)
        copy, copy_speed = self._priced_copy(reach, best_speed, evidence.source if evidence is not None else None)
        if copy is not None:
            best, best_speed = copy, copy_speed
        if best.source == Source.MODEL or not models:
            return best
        probe = max(models, key=lambda c: self.speed(c, lag, optimistic=True))
        cost = self.rounds.seconds(Source.MODEL, probe.k, lag)
        if self.speed(probe, lag, optimistic=True) > best_speed and self.explored + cost <= _EXPLORE_SHARE * self.spent:
            return Choice(Source.MODEL, probe.k, explore=True)
        return best

    def holds(self, room: int) -> bool:
        """Whether to hold the target's pass at two tokens this round (a one-token draft: the
        offer's first token, or a filler where there is none) rather than decode plainly: only
        where two switches cost more than a two-token pass costs over a one-token one (`hold`),
        where the stretch pays, and where what held passes may lose (`LossBudget.bears_hold`)
        bears the round's draft refused (with the switch back, where it enters the hold)."""
        if not self.can_hold:
            return False
        switch, one, two = self.costs.switch, self.costs.verify_cost(1), self.costs.verify_cost(2)
        extra = (self.pass_cost(2) - two) - (self.pass_cost(1) - one) + switch
        if not worth_holding(one, two, self.hold.rate(), extra, min(STAY, room)):
            return False
        back = switch if self.rounds.last_size != 2 else 0.0
        return self.loss.bears_hold(self.pass_cost(2) + back - self.plain_pass())

    def _held_speed(self, reach: list[float]) -> float:
        """Expected tokens per second of a held round: a pass of two tokens whose draft (the
        offer's first token, or a filler) is kept with the offer's chance."""
        kept = reach[0] if reach else 0.0
        return (1.0 + kept) / (self.rounds.seconds(Source.LOOKUP, 1) + self.python_time())

    def gate(self) -> ModelGate:
        """A fresh gate for this round's draft model tokens (each round gets its own)."""
        return ModelGate(self.costs, self.calibration)

    # -- learning -----------------------------------------------------------------------------

    def prefilled(self) -> None:
        """The target's last pass was a prefill: the next pass switches size, whatever it drafts."""
        self.rounds.passed(0)
        self.after_copy = False

    def foresee(self, tokens: int, prediction: bool = False, share: float = FORESEEN_RISK, adds: bool = True) -> None:
        """A reply of about `tokens` tokens is foreseen (a prediction of that length, a schema's
        example, attached text): the loss budget allows `share` of their plain time, a schema's
        from the first round, a prediction's to its own copies as the reply follows it
        (`LossBudget.foreseen_time`), besides the share of its own plain time any reply may lose."""
        self.loss.foreseen = tokens * self.costs.verify_cost(1)
        self.loss.followed = 0.0 if prediction else None
        self.loss.share, self.loss.adds = share, adds

    def follow(self, tokens: int) -> None:
        """The reply has followed its prediction (as `foresee` was told) for `tokens` tokens so
        far (of attached text, reprinted them): the allowance counts on them (`LossBudget.foreseen_time`)."""
        if self.loss.followed is not None:
            self.loss.followed = tokens * self.costs.verify_cost(1)

    def observe(self, outcome: Outcome) -> None:
        """Learn from a round that weighed drafts: its `Choice` (as `choose` returned it), what
        was drafted and kept, how long it took, and the copy offers its tokens judged."""
        choice = outcome.choice
        self.model.forget(_MODEL_FORGET)
        for record in self.copies.values():
            record.forget()
        if choice.source == Source.MODEL:
            self._learn_model(outcome)
        self._learn_copies(outcome.copies)
        self.hold.add(outcome.first_kept)
        predicted = self.rounds.round_cost(choice.source, outcome.drafted, outcome.lag)
        one = self.costs.verify_cost(1) * (outcome.accepted + 1)
        reference = one + self.plain_pass() - self.costs.verify_cost(1)  # plain decoding's own switch too
        self.loss.plain += one
        if choice.holding:
            self.loss.held += reference - predicted
        elif choice.source != Source.MODEL:
            self.loss.saved += reference - predicted
        self.after_copy = choice.source == Source.LOOKUP and outcome.drafted > 0
        self.loss.bet = choice.bet or self.loss.bet
        self.look.weighed_round(outcome.looked, reference - predicted, outcome.drafted > 0 and outcome.accepted > 0)
        self.rounds.timed_round(choice.source, outcome.drafted, outcome.seconds, predicted)
        charged = predicted * self.rounds.factor_of(choice.source, outcome.drafted)
        broke = choice.source == Source.LOOKUP and outcome.accepted < outcome.drafted
        self.rounds.passed(outcome.drafted + 1, broke)
        self.spent += charged
        self.explored += charged if choice.explore else 0.0

    def decoded_plainly(self, outcome: Outcome) -> None:
        """A round that weighed no drafts (`worth_looking` said no): it adds to the reply's plain
        time (and a switch back to one-token passes to what copies lost), and judges the copy
        offers still open; nothing else is learnt or forgotten."""
        one = self.costs.verify_cost(1) * (outcome.accepted + 1)
        predicted = self.pass_cost(1)
        self.loss.plain += one
        self.loss.saved += one + self.plain_pass() - self.costs.verify_cost(1) - predicted
        self.after_copy = False
        if self.timed and outcome.seconds is not None:
            self.rounds.pass_ratios.append(outcome.seconds / predicted)
        self.spent += predicted * self.rounds.factor[Source.PLAIN]
        self.rounds.passed(1)
        self.look.looked += outcome.looked
        self._learn_copies(outcome.copies)

    def _learn_model(self, outcome: Outcome) -> None:
        """The draft model's keep counts by position, and its gate's calibration from the tokens
        judged (and the one the gate dropped, where the target showed whether it was right)."""
        self.model.add(min(outcome.drafted, outcome.accepted + 1), outcome.accepted)
        judged = [(c, i < outcome.accepted) for i, c in enumerate(outcome.confidences[: outcome.accepted + 1])]
        if outcome.dropped is not None:
            judged.append(outcome.dropped)
        for confidence, kept in judged:
            cell = self.calibration[_confidence_bin(confidence)]
            cell[0] = cell[0] * _MODEL_FORGET + kept
            cell[1] = cell[1] * _MODEL_FORGET + 1.0

    def _learn_copies(self, copies: tuple[CopyJudgement, ...]) -> None:
        for judgement in copies:
            if judgement.evidence is not None:
                self._record(judgement.evidence.source).learn(judgement)

    def _record(self, source: Source) -> CopyRates | StructureRates:
        """The copy record of a source, kept from its first judged offer on."""
        if source not in self.copies:
            self.copies[source] = _fresh_record(source)
        return self.copies[source]


def _fresh_record(source: Source) -> CopyRates | StructureRates:
    """A source's record before it has shown anything: with even prior odds, a prediction's
    (or an earlier identical request's reply's) with the odds that the output reprints it, a
    structure-aligned source's by what its tokens held."""
    if source == Source.STRUCTURE:
        return StructureRates()
    return CopyRates(PREDICTION_ODDS if source in (Source.PREDICTION, Source.REPEAT) else 0.0)


def _confidence_bin(confidence: float) -> int:
    return min(max(int(confidence * _CONFIDENCE_BINS), 0), _CONFIDENCE_BINS - 1)
