"""Choose each round between plain decoding, the draft model at some K, and a copy of 0..64 tokens.

The policy predicts each choice's tokens per second and takes the best. Tokens: a round that
drafts k tokens yields E(k) = 1 + sum_{i<k} prod_{j<=i} a_j (a_j: the chance that draft
position j is kept once every earlier one was; Leviathan et al. 2023). Seconds: the step costs
measured by `costs.calibrate` (k draft steps, the draft model's catch-up on tokens it skipped,
one target pass over k + 1 tokens, plus `costs.switch` where the last pass had another size:
llama.cpp builds its graph again, and CUDA replays a captured one only after two passes of one
shape, so on a GPU a pass after one of its size costs far less), times a factor per choice
learnt from the wall time its rounds really took, so in-loop slowdowns, rollbacks and
catch-ups are charged to the choice that caused them. A copy's factor is learnt per verify size
too: the calibration keeps the fastest of a few isolated passes, and on a few shared CPU cores
a batch pass can take much longer than that while a one-token pass does not (on the 2-vCPU
EPYC, the median 4-token pass 1.48 times the calibrated time, the one-token pass 0.98 times),
so a copy is priced by what passes of its size took in this reply, or by all copies' factor
until one was timed.
Every estimate forgets at a fixed rate per round, so the policy follows text that changes
character; a one-off slow round moves a factor only a little.

Prompt lookup is judged every round for free: what it would have proposed is compared with the
tokens the target then emitted, which has the same expectation as verifying it (a copied token
x is kept with probability p(x), the chance that the target emits x). The draft model is only
judged when used, so trying it while another choice looks better is exploration, allowed only
while its predicted cost stays under 3% of the time spent so far and only when it could win.

A copy is priced by its source's `CopyRates` (the chance of each copied token, from the match
behind it, how the source's other occurrences of the context went on, the kind of text seen so
far and the tokens that broke copies before), a JSON reply's copy of an earlier record by
`StructureRates` (from what each copied token held: a key, a value of some key); the k with the most tokens per second over the
measured verify costs wins, so a long exact match drafts to a batch size the machine verifies
cheaply, and a weak one drafts nothing.

A reply never bets more than it can lose: a copy of k tokens whose first token the target
refuses costs one pass over k + 1 tokens for one token, on this machine's curve `verify(k+1) -
verify(1)` more than plain decoding. Such a copy is drafted only where that loss is covered by
what copies have already saved in this reply plus `RISK` of the reply's plain-decoding time so
far. So a reply is never slower than plain decoding by more than `RISK` of its time (in the
measured costs), however its copies go: a short answer drafts only once its own copies have
paid, and a text that reprints its source grows its copies as they pay (on a GPU, where a
longer verify costs almost nothing more, the bound hardly binds). Where the user gave a
prediction, the reply is foreseen to be about as long as it, and the bound allows `FORESEEN_RISK`
of that reply's plain time from the start (`foresee`): a good prediction drafts long at once, a
bad one loses at most that. A reply held to a JSON schema is foreseen the same way, to be about
as long as the schema's example document (two elements an array, one-character values): the
first record's keys, which only the example can offer, are copied whole from the start.
Weighing drafts costs Python time each round (finding copy offers, pricing them, learning from
the round): about 0.2 ms on a 2-core EPYC or a 16-core Xeon. Against a 60 ms CPU pass that is
nothing; against a 2 ms GPU pass of a small model it is a tenth of the time, so a reply that
drafts nothing would come out a tenth slower than plain decoding. So the policy weighs drafts
only while the time spent weighing them (measured) stays within what drafted rounds have saved
(predicted) plus `LOOK_SHARE` of the reply's plain-decoding time, after its first `FIRST_LOOKS`
rounds, in a reply a prediction or a schema foresees, after a round whose drafts were kept
and after one whose copy only the loss bound held back, which are always weighed (a reply that
opens by reprinting its source must find its first copy, a foreseen one is expected to copy, and
a copy grows as it pays); other rounds decode plainly without looking. On a CPU the share
covers every round; on a fast GPU a reply that finds nothing to draft looks about every tenth
round after its first 16, and one whose drafts pay looks every round.
Pure Python: no llama.cpp here, so the decisions are testable on given numbers
(tests/policysim.py replays cost profiles and acceptance traces through this code).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from specgen.decoding.copy_rates import (
    PREDICTION_ODDS,
    CopyEvidence,
    CopyJudgement,
    CopyRates,
    StructureRates,
)
from specgen.decoding.costs import StepCosts
from specgen.decoding.drafters.base import Source

K_MAX = 8
LOOKUP_MAX = 64
_MODEL_FORGET = 0.96  # per round, of the draft model's keep counts and gate calibration (25 rounds ago: a third)
_SHRINK = 3.0  # pseudo-observations pulling a thin position toward the pooled rate
_EXPLORE_SHARE = 0.03  # most of the time spent so far that exploration may take
_FACTOR_STEP = 0.15  # weight of one round in a choice's time factor
_FACTOR_CLIP = (0.5, 3.0)  # one round's measured/predicted ratio is clipped to this
_CONFIDENCE_BINS = 10  # the gate's calibration: bins of the draft's top probability
_GOOD_PAIR = 0.9  # per-token keep rate of a very well-matched draft model, the bound model_can_pay assumes
RISK = 0.03  # the most of a reply's plain-decoding time that copies not yet paid for may lose
FORESEEN_RISK = 0.06  # the most of the plain-decoding time of a foreseen reply (a prediction's, a schema's) copies may lose
LOOK_SHARE = 0.01  # the most of a reply's plain-decoding time that weighing drafts may take beyond what drafts saved
FIRST_LOOKS = 16  # rounds a reply always weighs, so that one that opens by reprinting its source finds its first copy
STALE_ROUNDS = 16  # timed one-token passes that may show the calibration was measured on a busy machine
STALE_RATIO = 0.9  # ... when their median ran under this share of the calibrated one-token cost (after a fresh
# calibration the median is 1.06-1.16 on the 2-vCPU EPYC: the loop adds the grammar's and the policy's time)


@dataclass(frozen=True)
class Choice:
    source: str  # Source.PLAIN, Source.MODEL or Source.LOOKUP
    k: int = 0
    explore: bool = False


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


@dataclass
class Acceptance:
    """Per-position keep rates with forgetting, shrunk toward the pooled rate where data are thin."""

    size: int
    prior: float = 0.5
    kept: list[float] = field(default_factory=list)
    reached: list[float] = field(default_factory=list)
    pool: list[float] = field(default_factory=list)  # [kept, reached] over all positions
    _rates: dict = field(default_factory=dict)  # rates(optimistic) until the counts change

    def __post_init__(self) -> None:
        self.kept, self.reached = [0.0] * self.size, [0.0] * self.size
        self.pool = [self.prior * 2.0, 2.0]

    def forget(self, factor: float) -> None:
        self._rates.clear()
        self.kept = [x * factor for x in self.kept]
        self.reached = [x * factor for x in self.reached]
        self.pool = [x * factor for x in self.pool]

    def add(self, judged: int, kept: int, start: int = 0) -> None:
        """Positions start..judged-1 were judged (those before `start` earlier); those before
        `kept` were kept."""
        self._rates.clear()
        for i in range(start, min(judged, self.size)):
            self.reached[i] += 1.0
            self.kept[i] += i < kept
        self.pool[0] += max(min(kept, judged) - start, 0)
        self.pool[1] += max(judged - start, 0)

    def pooled(self) -> float:
        return (self.pool[0] + 0.1) / (self.pool[1] + 0.2)

    def rates(self, optimistic: bool = False) -> list[float]:
        """Keep rate by position (with `optimistic`, an upper bound); computed once per round."""
        if optimistic not in self._rates:
            self._rates[optimistic] = self._compute(optimistic)
        return self._rates[optimistic]

    def _compute(self, optimistic: bool) -> list[float]:
        base = self.pooled()
        out = []
        for kept, reached in zip(self.kept, self.reached):
            rate = (kept + _SHRINK * base) / (reached + _SHRINK)
            if optimistic:
                rate = min(1.0, rate + 2.0 * math.sqrt(rate * (1 - rate) / (reached + _SHRINK)) + 1.0 / (reached + 2.0))
            out.append(rate)
        return out


def expected_tokens(rates: list[float], k: int) -> float:
    """Tokens a round drafting k yields on average: 1 + sum of the chances to keep each prefix."""
    total, reach = 1.0, 1.0
    for rate in rates[:k]:
        reach *= rate
        total += reach
    return total


class Policy:
    """Running estimates of costs and acceptance, and the per-round choice drawn from them."""

    def __init__(self, costs: StepCosts, k_max: int = K_MAX, timed: bool = True, risk: float = RISK):
        """`risk`: the most of a reply's plain-decoding time that copies not yet paid for may lose."""
        self.costs, self.k_max, self.timed, self.risk = costs, k_max, timed, risk
        self.model = Acceptance(k_max)
        # each copy source's own record
        self.copies: dict[str, CopyRates | StructureRates] = {Source.TEXT: CopyRates(), Source.PATTERN: CopyRates()}
        self._evidence: CopyEvidence | None = None  # this round's copy offer: what is known of it
        self._offer: tuple[int, ...] = ()  # this round's copy offer: its tokens
        self.saved = 0.0  # predicted seconds this reply's copies saved over plain decoding (< 0: lost)
        self.plain = 0.0  # predicted seconds plain decoding would have taken for this reply's tokens
        self.foreseen = 0.0  # predicted seconds of plain decoding for the reply a prediction or schema foresees
        self.earned = 0.0  # predicted seconds this reply's drafted rounds (copies and the model) saved
        self.looked = 0.0  # measured seconds this reply spent weighing drafts and learning from rounds
        self.weighed = 0  # rounds that weighed drafts
        self.kept_last = False  # whether the last weighed round drafted tokens the target kept
        self.held_back = False  # whether the last copy priced would have paid but for the loss bound
        self.last_size = 0  # tokens in the target's last pass (0: a prefill): another size pays costs.switch
        self.factor = {Source.PLAIN: 1.0, Source.MODEL: 1.0, Source.LOOKUP: 1.0}
        self.copy_factor: dict[int, float] = {}  # a copy's learnt time factor by its verify size (else Source.LOOKUP's)
        self.calibration = [[(i + 0.5) / _CONFIDENCE_BINS * 2.0, 2.0] for i in range(_CONFIDENCE_BINS)]  # [kept, seen]
        self.spent = self.explored = 0.0  # predicted seconds: all rounds, exploring rounds
        self.plain_ratios: list[float] = []  # each timed plain round's measured / predicted seconds
        self._round: tuple[float, float, float] = (1.0, 1.0, 0.0)  # gate state: reach, tokens, seconds

    # -- predictions --------------------------------------------------------------------------

    def round_cost(self, choice: Choice, lag: int = 0) -> float:
        """Predicted seconds of one round, before the choice's learnt time factor."""
        verify = self.pass_cost(choice.k + 1)
        if choice.source != Source.MODEL:
            return verify
        return verify + self.costs.draft_cost(lag + 1) + (choice.k - 1) * self.costs.draft_cost(1)

    def pass_cost(self, size: int) -> float:
        """Predicted seconds of the target's pass over `size` tokens next: its steady cost, plus
        the switch cost where the last pass had another size."""
        return self.costs.verify_cost(size) + (self.costs.switch if size != self.last_size else 0.0)

    def speed(self, choice: Choice, lag: int = 0, optimistic: bool = False) -> float:
        if choice.source == Source.PLAIN:
            tokens = 1.0
        else:
            rates = self.model.rates(optimistic) if choice.source == Source.MODEL else self._copy_rates(choice.k)
            tokens = expected_tokens(rates, choice.k)
        return tokens / (self.round_cost(choice, lag) * self._factor(choice.source, choice.k))

    def best_copy(self, offer: int) -> Choice | None:
        """The copy length with the most expected tokens per second, among the 1..offer whose
        loss, should its first token be refused, this reply can bear (`affordable`). Notes in
        `held_back` whether a length that would beat plain decoding was left out for its loss."""
        best, best_speed, tokens, reach = None, 0.0, 1.0, 1.0
        one = self.pass_cost(1)
        bearable = self.affordable()
        self.held_back = False
        for k, rate in enumerate(self._copy_rates(offer), start=1):
            reach *= rate
            if reach < 1e-3:  # the longer drafts add under 0.064 tokens: not worth pricing
                break
            tokens += reach
            cost = self.pass_cost(k + 1)
            speed = tokens / (cost * self._factor(Source.LOOKUP, k))
            if cost - one > bearable:
                self.held_back = self.held_back or speed > 1.0 / (one * self.factor[Source.PLAIN])
                continue
            if speed > best_speed:
                best, best_speed = Choice(Source.LOOKUP, k), speed
        return best

    def _factor(self, source: str, k: int) -> float:
        """The learnt time factor of a choice of `source` drafting k: a copy's by its verify size,
        where that size was timed."""
        if source == Source.LOOKUP:
            return self.copy_factor.get(k + 1, self.factor[Source.LOOKUP])
        return self.factor[source]

    def affordable(self) -> float:
        """The most predicted seconds a round may lose to a refused copy now: what this reply's
        copies saved, plus `risk` of its plain-decoding time (or, while that is less,
        `FORESEEN_RISK` of the plain time of the reply a prediction or a schema foresees)."""
        return self.saved + max(self.risk * self.plain, FORESEEN_RISK * self.foreseen)

    def worth_looking(self) -> bool:
        """Whether to weigh drafts this round: in a reply's first `FIRST_LOOKS` rounds, in a reply
        a prediction or a schema foresees (it is expected to copy), after a round whose
        drafted tokens were kept (drafting is under way: a copy grows as it pays) or whose copy
        offer would have paid but for the loss bound (it will be drafted once the reply can bear
        its loss), and else while the time spent weighing drafts stays within what drafted
        rounds saved plus `LOOK_SHARE` of the reply's plain-decoding time."""
        if not self.timed or self.weighed < FIRST_LOOKS or self.foreseen or self.kept_last \
                or self.held_back:
            return True  # (a seeded run decides the same way every time: never from timings)
        return self.looked <= max(self.earned, 0.0) + LOOK_SHARE * self.plain

    def calibration_too_slow(self) -> bool:
        """Whether this reply's one-token passes ran well under their calibrated cost (the median
        of at least `STALE_ROUNDS` under `STALE_RATIO` of it). The calibration keeps the fastest
        of several passes, so passes in the loop, which also weigh drafts and mask rows, take at
        least as long, unless the machine was busy while the calibration measured: then its
        costs are too high, and a copy not yet timed is priced at them while plain decoding's
        learnt time factor follows the faster machine, so copies that would pay are passed over."""
        ratios = sorted(self.plain_ratios)
        return len(ratios) >= STALE_ROUNDS and ratios[len(ratios) // 2] < STALE_RATIO

    def prefilled(self) -> None:
        """The target's last pass was a prefill: the next pass switches size, whatever it drafts."""
        self.last_size = 0

    def foresee(self, tokens: int) -> None:
        """A reply of about `tokens` tokens is foreseen (a prediction of that length, a schema's
        example): the loss bound allows `FORESEEN_RISK` of their plain-decoding time from the
        first round."""
        self.foreseen = tokens * self.costs.verify_cost(1)

    def _copy_rates(self, length: int) -> list[float]:
        """Keep rates of this round's copy offer by position, `length` of them."""
        if self._evidence is None:
            return [0.0] * length
        return self._record(self._evidence.source).rates(self._evidence, self._offer[:length])

    def _record(self, source: str) -> CopyRates:
        """The copy record of a source, made on first use: with even prior odds, a prediction's
        with the odds that the output reprints it, a structure-aligned source's by what its
        tokens held."""
        if source not in self.copies:
            self.copies[source] = StructureRates() if source == Source.STRUCTURE else \
                CopyRates(PREDICTION_ODDS if source == Source.PREDICTION else 0.0)
        return self.copies[source]

    def model_can_pay(self) -> bool:
        """Could the draft model beat plain decoding by 15% if it were as good as a well-matched
        pair gets (each token kept with chance `_GOOD_PAIR`)? Where not, the model is neither
        prefilled nor kept in step: on a few CPU cores, where a draft step costs half a target
        pass, that saves a third of the prompt's prefill time on a model that would never run.
        Priced at steady costs: a model drafting every round keeps its pass size."""
        if not self.costs.draft:
            return False
        plain = 1.0 / self.costs.verify_cost(1)
        steady = [self.costs.verify_cost(k + 1) + k * self.costs.draft_cost(1) for k in range(1, self.k_max + 1)]
        return any(expected_tokens([_GOOD_PAIR] * k, k) / seconds > 1.15 * plain for k, seconds in enumerate(steady, 1))

    # -- the choice ---------------------------------------------------------------------------

    def choose(self, room: int, lookup: int, lag: int, evidence: CopyEvidence | None = None,
               offer: tuple[int, ...] = ()) -> Choice:
        """The best choice for a round with `room` tokens to draft (the draft model at most its
        k_max of them, lookup at most LOOKUP_MAX), `lookup` tokens on offer with `evidence`
        (`offer`: the tokens, when known), the draft model `lag` tokens behind; or a bounded
        exploration of the draft model."""
        self._round = (1.0, 1.0, self.costs.verify_cost(1))
        self._offer = offer
        self._evidence = evidence if lookup and offer else None
        options = [Choice(Source.PLAIN)]
        copy = self.best_copy(min(lookup, room, LOOKUP_MAX))
        options += [copy] if copy is not None else []
        models = [Choice(Source.MODEL, k) for k in range(1, min(room, self.k_max) + 1)] if self.costs.draft else []
        amortized = max(lag - 1, 0) // 8  # a catch-up is paid once, then serves the rounds after it
        best = max(options + models, key=lambda c: self.speed(c, amortized))
        if best.source == Source.MODEL or not models:
            return best
        probe = max(models, key=lambda c: self.speed(c, lag, optimistic=True))
        cost = self.round_cost(probe, lag) * self.factor[Source.MODEL]
        if self.speed(probe, lag, optimistic=True) > self.speed(best) and \
                self.explored + cost <= _EXPLORE_SHARE * self.spent:
            return Choice(Source.MODEL, probe.k, explore=True)
        return best

    def keep(self, position: int, confidence: float) -> bool:
        """Keep the draft token at `position` (0-based) if its expected gain pays its extra verify."""
        reach, tokens, seconds = self._round
        gain = reach * self._calibrated(confidence)
        seconds += self.costs.draft_cost(1)
        extra = self.costs.verify_cost(position + 2) - self.costs.verify_cost(position + 1)
        if gain * seconds < tokens * extra:
            return False
        self._round = (gain, tokens + gain, seconds + extra)
        return True

    def _calibrated(self, confidence: float) -> float:
        kept, seen = self.calibration[_confidence_bin(confidence)]
        return kept / seen

    # -- learning -----------------------------------------------------------------------------

    def observe(self, outcome: Outcome) -> None:
        choice = outcome.choice
        self.model.forget(_MODEL_FORGET)
        for record in self.copies.values():
            record.forget()
        if choice.source == Source.MODEL:
            self.model.add(min(outcome.drafted, outcome.accepted + 1), outcome.accepted)
            judged = [(c, i < outcome.accepted) for i, c in enumerate(outcome.confidences[: outcome.accepted + 1])]
            if outcome.dropped is not None:
                judged.append(outcome.dropped)
            for confidence, kept in judged:
                self._calibrate(confidence, kept)
        self._learn_copies(outcome.copies)
        self._evidence, self._offer = None, ()
        predicted = self.round_cost(Choice(choice.source, outcome.drafted), outcome.lag)
        one = self.costs.verify_cost(1) * (outcome.accepted + 1)
        self.plain += one
        self.saved += one - predicted if choice.source == Source.LOOKUP else 0.0
        self.earned += one - predicted
        self.looked += outcome.looked
        self.weighed += 1
        self.kept_last = outcome.drafted > 0 and outcome.accepted > 0
        if self.timed and outcome.seconds is not None:
            if choice.source == Source.PLAIN:
                self.plain_ratios.append(outcome.seconds / predicted)
            ratio = min(max(outcome.seconds / predicted, _FACTOR_CLIP[0]), _FACTOR_CLIP[1])
            if choice.source == Source.LOOKUP:
                size = self.copy_factor.setdefault(outcome.drafted + 1, self.factor[Source.LOOKUP])
                self.copy_factor[outcome.drafted + 1] = size + _FACTOR_STEP * (ratio - size)
            self.factor[choice.source] += _FACTOR_STEP * (ratio - self.factor[choice.source])
        charged = predicted * self._factor(choice.source, outcome.drafted)
        self.last_size = outcome.drafted + 1
        self.spent += charged
        self.explored += charged if choice.explore else 0.0

    def decoded_plainly(self, outcome: Outcome) -> None:
        """A round that weighed no drafts (`worth_looking` said no): it adds to the reply's plain
        time, and judges the copy offers still open; nothing else is learnt or forgotten."""
        self.plain += self.costs.verify_cost(1) * (outcome.accepted + 1)
        predicted = self.pass_cost(1)
        if self.timed and outcome.seconds is not None:
            self.plain_ratios.append(outcome.seconds / predicted)
        self.spent += predicted * self.factor[Source.PLAIN]
        self.last_size = 1
        self.looked += outcome.looked
        self._learn_copies(outcome.copies)

    def _learn_copies(self, copies: tuple[CopyJudgement, ...]) -> None:
        for judgement in copies:
            if judgement.evidence is not None:
                self._record(judgement.evidence.source).learn(judgement)

    def _calibrate(self, confidence: float, kept: bool) -> None:
        cell = self.calibration[_confidence_bin(confidence)]
        cell[0] = cell[0] * _MODEL_FORGET + kept
        cell[1] = cell[1] * _MODEL_FORGET + 1.0


def _confidence_bin(confidence: float) -> int:
    return min(max(int(confidence * _CONFIDENCE_BINS), 0), _CONFIDENCE_BINS - 1)
