"""The drafter interface as the loop drives it, on real llama.cpp with the tiny models: what the
loop hands prepare, propose, observe and rollback each round, and that the draft model's cache
forgets what the target refused (directly, and after every round of a whole generation)."""

from __future__ import annotations

import numpy as np
import pytest
from fakeclock import FakeClock, PricedModel, fake_clock, pass_price

from specgen.decoding.auto import AutoDrafter
from specgen.decoding.costs import StepCosts
from specgen.decoding.drafters.base import NO_DRAFT, Draft, Drafter, Source, copied
from specgen.decoding.drafters.model import ModelDrafter, confidence
from specgen.decoding.drafters.prediction import Prediction
from specgen.decoding.events import Round
from specgen.decoding.loop import GenerationConfig, generate
from specgen.decoding.policy import LOOKUP_MAX, Policy
from specgen.decoding.sampling import SamplingParams

GREEDY = SamplingParams()
# verify nearly flat and a cheap draft step: the auto policy drafts with the model
DRAFT_PAYS = StepCosts({1: 1.0, 2: 1.02, 4: 1.05, 8: 1.1, 16: 1.3, 64: 3.0}, {1: 0.1, 8: 0.3})


def encode(model, text: str) -> list[int]:
    return model.tokenize(text, add_special=True, parse_special=False)


def test_model_drafter_rollback_forgets_the_positions_the_target_refused(draft_model):
    prompt = encode(draft_model, "def add(a, b):")
    drafter = ModelDrafter(draft_model)
    drafter.prepare(prompt[:-1])
    draft = drafter.propose(prompt[:-1], prompt[-1], 4, GREEDY, None)
    assert len(draft.tokens) == 4
    assert draft_model.tokens == [*prompt, *draft.tokens[:3]]  # it fed each drafted token but the last
    kept = [*prompt, draft.tokens[0]]  # the target kept the first and wrote its own second token
    drafter.rollback(kept)
    assert draft_model.tokens == kept
    own = (draft.tokens[1] + 1) % 100
    after_rollback = drafter.propose(kept, own, 4, GREEDY, None).tokens
    draft_model.truncate(0)
    drafter.prepare(kept)
    assert drafter.propose(kept, own, 4, GREEDY, None).tokens == after_rollback  # as from a fresh cache


@pytest.mark.parametrize("auto", [False, True], ids=["model", "auto"])
def test_after_every_round_the_draft_cache_holds_only_what_the_target_kept(target_model, draft_model, auto):
    prompt = encode(target_model, "the print of self")
    drafter = (
        AutoDrafter(ModelDrafter(draft_model), Policy(DRAFT_PAYS, 4, timed=False))
        if auto
        else ModelDrafter(draft_model)
    )
    draft_model.truncate(0)
    refused = 0
    for event in generate(target_model, drafter, prompt, GenerationConfig(max_tokens=60, draft_tokens=4)):
        if isinstance(event, Round):
            refused += event.accepted < len(event.drafted)
            held = draft_model.tokens
            assert held == target_model.tokens[: len(held)], "the draft model holds a token the target refused"
    assert refused >= 3, "the pair must disagree for the test to mean anything"


class Scripted(Drafter):
    """Proposes the token after `last` in a fixed script (right or not), and notes every call."""

    name = "scripted"

    def __init__(self, script: list[int]):
        self.script, self.calls = script, []

    def prepare(self, prefix):
        self.calls.append(("prepare", list(prefix)))

    def propose(self, history, last, k, params, draws, keep=None) -> Draft:
        self.calls.append(("propose", [*history, last], k))
        at = len(history) + 1
        return copied(self.script[at : at + min(k, 2)], params) if at < len(self.script) else NO_DRAFT

    def observe(self, draft, emitted, seconds, looked=0.0):
        self.calls.append(("observe", list(draft.tokens), list(emitted)))

    def rollback(self, history):
        self.calls.append(("rollback", list(history)))


def test_the_loop_drives_a_drafter_through_the_interface(target_model):
    prompt = encode(target_model, "x = 1\nfor i in")
    config = GenerationConfig(max_tokens=12, draft_tokens=3)
    plain = [t for e in list(generate(target_model, None, prompt, config))[:-1] for t in e.tokens]
    script = [*prompt, *plain[:4], (plain[4] + 1) % target_model.n_vocab, *plain[5:]]  # one wrong token
    drafter = Scripted(script)
    rounds = [e for e in generate(target_model, drafter, prompt, config) if isinstance(e, Round)]
    assert [t for r in rounds for t in r.tokens] == plain
    expected, written = [("prepare", prompt[:-1])], list(prompt)
    for r in rounds:
        room = min(3, config.max_tokens - (len(written) - len(prompt)) - 1)
        before, written = written, written + r.tokens
        rollback = ("rollback", written[:-1])  # the target's cache: all it kept but its newest token
        if room > 0:
            expected += [("propose", before, room), rollback, ("observe", list(r.drafted), r.tokens)]
        else:
            expected.append(rollback)
    assert drafter.calls == expected
    assert any(r.accepted < len(r.drafted) for r in rounds) and any(r.accepted == 2 for r in rounds)


class Slow(Drafter):
    """Drafts nothing; takes 4 ms to propose and 3 ms to observe (on `clock`), and notes what it
    is told it spent."""

    name = "slow"

    def __init__(self, clock: FakeClock):
        self.clock = clock
        self.looked: list[float] = []

    def propose(self, history, last, k, params, draws, keep=None) -> Draft:
        self.clock.advance(0.004)
        return NO_DRAFT

    def observe(self, draft, emitted, seconds, looked=0.0):
        self.looked.append(looked)
        self.clock.advance(0.003)


def test_the_loop_tells_the_drafter_what_its_propose_and_its_last_observe_took(target_model, monkeypatch):
    """On a fake clock: only the drafter's own work takes time, so what it is told is exact."""
    drafter = Slow(fake_clock(monkeypatch))
    list(generate(target_model, drafter, encode(target_model, "x = 1"), GenerationConfig(max_tokens=6, draft_tokens=3)))
    first, *later = drafter.looked
    assert first == pytest.approx(0.004)  # its propose; no observe before it
    assert later and all(looked == pytest.approx(0.007) for looked in later)  # a propose and the observe before it
    assert min(later) - first >= 0.002


def test_a_users_prediction_is_doubted_and_an_earlier_identical_replys_is_not():
    """The loss budget counts what the reply followed of a user's prediction (its allowance grows
    with it), and allows the whole of an earlier identical request's reply from the first round."""
    for name, followed in ((Source.PREDICTION, 0.0), (Source.REPEAT, None)):
        drafter = AutoDrafter(None, Policy(DRAFT_PAYS, 4), prediction=Prediction([5, 6, 7, 8], name=name))
        drafter.prepare([1, 2, 3])
        assert drafter.policy.loss.followed == followed and drafter.policy.loss.foreseen > 0.0, name


def test_attached_text_earns_its_allowance_by_the_tokens_reprinted_a_prediction_by_those_followed():
    """Twelve tokens of the text written in one run: a user's prediction counts all 12 toward its
    allowance, text the prompt attached only the 4 past the first 8 (`Prediction.reprinted`)."""
    text = list(range(100, 140))
    for name, counted in ((Source.PREDICTION, 12), (Source.ATTACHED, 12 - 8)):
        drafter = AutoDrafter(None, Policy(DRAFT_PAYS, 4, timed=False), prediction=Prediction(text, name=name))
        prompt = [1, 2, 3]
        drafter.prepare(prompt[:-1])
        history = list(prompt)
        for token in text[:12]:
            drafter.propose(history[:-1], history[-1], 4, SamplingParams(), None)
            history.append(token)
        drafter.propose(history[:-1], history[-1], 4, SamplingParams(), None)
        assert drafter.policy.loss.followed == pytest.approx(counted * DRAFT_PAYS.verify_cost(1)), name


def test_the_auto_drafter_lets_a_copy_run_past_k():
    assert AutoDrafter(None, Policy(DRAFT_PAYS, 4)).reach(4) == LOOKUP_MAX
    assert ModelDrafter(None).reach(4) == 4


def _top_probability(logits: np.ndarray) -> float:
    """The softmax's top probability over the whole row, in float64."""
    shifted = logits.astype(np.float64) - float(logits.max())
    return 1.0 / float(np.exp(shifted).sum())


@pytest.mark.parametrize("rest", [-10.0, 4.0], ids=["peaked", "flat"])
def test_the_gates_confidence_is_the_drafts_top_probability(rest):
    """A row shaped like a real model's (a top token, a few hundred 2-5 below it, 150,000 more
    than 16 below: summed near the top only) and a flat one (summed whole): the top probability
    to within the e^-16 bound the nearby sum allows."""
    rng = np.random.default_rng(7)
    logits = np.full(152_064, rest, dtype=np.float32) + rng.uniform(-1, 1, 152_064).astype(np.float32)
    logits[:300] = rng.uniform(5.0, 8.0, 300)
    logits[1234] = 10.0
    exact = _top_probability(logits)
    assert exact < 0.5  # the tokens near the top hold most of the mass
    assert confidence(logits) == pytest.approx(exact, rel=len(logits) * np.exp(-16.0))


class PricingFirst(ModelDrafter):
    """A draft model drafter that spends 2 ms of Python (on the fake clock) before drafting, as
    auto's pricing does."""

    def __init__(self, model, clock: FakeClock):
        super().__init__(model)
        self.clock = clock

    def propose(self, history, last, k, params, draws, keep=None):
        self.clock.advance(0.002)
        return super().propose(history, last, k, params, draws, keep)


def test_a_draft_model_rounds_python_is_counted_as_python_and_its_passes_as_drafting(
    target_model, draft_model, monkeypatch
):
    """On a fake clock where only the passes and the drafter's 2 ms of Python take time: a round
    the draft model drafted reports those 2 ms as Python, and drafting as them plus its passes."""
    clock = fake_clock(monkeypatch)
    drafter = PricingFirst(PricedModel(draft_model, clock), clock)
    target = PricedModel(target_model, clock)
    config = GenerationConfig(max_tokens=8, draft_tokens=2)
    rounds = [
        e for e in generate(target, drafter, encode(target_model, "def add(a, b):"), config) if isinstance(e, Round)
    ]
    drafted = [r for r in rounds if r.drafted]
    assert drafted
    for r in drafted:
        assert r.python_s == pytest.approx(0.002)
        assert r.draft_s >= 0.002 + len(r.drafted) * pass_price(1) - 1e-9
