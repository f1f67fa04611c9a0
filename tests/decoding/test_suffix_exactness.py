"""Copying from the suffix index keeps the output the target's, with a memory of past outputs in
play, with learnt rewrites carried in the copies, and with copies by the output's record
pattern, and with copies that go on through the text they write (a period repeated): greedy
token for token, sampled in distribution; and a copy drafter that peeks at the accept test's
uniform (a planted bias) fails the same statistical test, rewriting or not, by pattern or not,
overlapping or not.

Real llama.cpp on the tiny models. The memory holds earlier samples that begin with the whole
prompt, so its match is the longest and its continuations are what gets copied.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from holding import HoldsEveryRound
from recording import RecordingAutoDrafter
from stathelp import PeeksAtTheAcceptTest, accept_uniform, keeps_more, position_pvalues

from specgen.decoding.auto import AutoDrafter
from specgen.decoding.costs import StepCosts
from specgen.decoding.drafters.base import NO_DRAFT, Source, Vocabulary, copied
from specgen.decoding.drafters.lookup import PromptLookupDrafter
from specgen.decoding.drafters.pattern import PatternSource, RecordPattern
from specgen.decoding.drafters.suffix import LookupMemory
from specgen.decoding.loop import GenerationConfig, generate
from specgen.decoding.policy import Policy
from specgen.decoding.sampling import SamplingParams

N = 1200
DEPTH = 5
ALPHA = 0.001
PROMPT = "a b c a b c a b c a b"
TOP_K = SamplingParams(temperature=1.0, top_k=8)
CHEAP = StepCosts({1: 1.0, 2: 1.02, 4: 1.05, 8: 1.1, 16: 1.2}, {})  # copies pay at any length


def tokens_of(target, drafter, prompt, config) -> list[int]:
    return [t for e in list(generate(target, drafter, prompt, config))[:-1] for t in e.tokens]


def samples(target, make_drafter, prompt, params, k, seeds) -> list[tuple[int, ...]]:
    out = []
    for seed in seeds:
        config = GenerationConfig(DEPTH, k, SamplingParams(params.temperature, params.top_k, params.top_p, seed))
        got = tokens_of(target, make_drafter(), prompt, config)
        out.append(tuple(got + [-1] * (DEPTH - len(got))))  # -1: generation had ended
    return out


@pytest.fixture(scope="module")
def setting(target_model):
    """The prompt, target-alone samples, and a memory of earlier sampled outputs of the prompt."""
    prompt = target_model.tokenize(PROMPT, add_special=True, parse_special=False)
    memory = LookupMemory(10_000)
    for seed in range(5):
        config = GenerationConfig(12, 0, SamplingParams(1.0, 8, 1.0, 10**7 + seed))
        memory.add([*prompt, *tokens_of(target_model, None, prompt, config)])
    baseline = samples(target_model, lambda: None, prompt, TOP_K, 0, range(10**6, 10**6 + N))
    return prompt, memory, baseline


def test_the_memory_is_what_gets_copied(setting):
    prompt, memory, _ = setting
    offer = PromptLookupDrafter((memory.index,)).copier.offer(prompt[:-1], prompt[-1], 8)
    assert offer.branch.source == 1 and offer.branch.match == len(prompt) and offer.tokens


def test_greedy_copying_from_the_memory_equals_the_target_alone(target_model, setting):
    prompt, _, _ = setting
    config = GenerationConfig(max_tokens=40)
    plain = tokens_of(target_model, None, prompt, config)
    memory = LookupMemory(10_000)
    wrong = (plain[25] + 1) % target_model.n_vocab
    memory.add([*prompt, *plain[:25], wrong, *plain[25:]])  # the answer, with one wrong token in it
    fixed = tokens_of(
        target_model, PromptLookupDrafter((memory.index,)), prompt, GenerationConfig(max_tokens=40, draft_tokens=16)
    )
    auto_config = GenerationConfig(max_tokens=40, draft_tokens=8)
    events = list(
        generate(target_model, AutoDrafter(None, Policy(CHEAP, 8, timed=False), (memory.index,)), prompt, auto_config)
    )
    auto, summary = [t for e in events[:-1] for t in e.tokens], events[-1]
    assert fixed == plain and auto == plain
    assert summary.lookup_rounds > 0 and summary.accepted >= 20  # the memory really was copied


def same_distribution(target_model, setting, make_drafter, k, n: int = N):
    """Whether `n` samples with the drafter match as many of the target alone's, position by
    position (a planted bias that only shows from the second token on, where drafting starts,
    needs more than N to be seen)."""
    prompt, _, baseline = setting
    if n > len(baseline):
        baseline = [*baseline, *samples(target_model, lambda: None, prompt, TOP_K, 0, range(10**6 + N, 10**6 + n))]
    pvalues = position_pvalues(samples(target_model, make_drafter, prompt, TOP_K, k, range(n)), baseline)
    return min(pvalues) > ALPHA / len(pvalues), pvalues


def test_copying_with_the_memory_samples_the_target_distribution(target_model, setting):
    memory = setting[1]
    ok, pvalues = same_distribution(target_model, setting, lambda: PromptLookupDrafter((memory.index,)), 3)
    assert ok, pvalues


def test_the_auto_policy_copying_with_the_memory_samples_the_target_distribution(target_model, setting):
    memory, drafters = setting[1], []

    def make():
        drafters.append(RecordingAutoDrafter(None, Policy(CHEAP, 4, timed=False), (memory.index,)))
        return drafters[-1]

    ok, pvalues = same_distribution(target_model, setting, make, 4)
    assert ok, pvalues
    chosen = [draft.source for drafter in drafters for draft in drafter.drafts]
    assert sum(source.copied for source in chosen) > N // 2, "the policy should have copied"


class Rewriting(PromptLookupDrafter):
    """Copies carrying a planted rewrite (old span -> new span), as if learnt from the output;
    counts the drafts that carried it."""

    def __init__(self, shared, old: tuple[int, ...], new: tuple[int, ...]):
        super().__init__(shared)
        self.rule, self.rewritten = (old, new), 0

    def prepare(self, prefix):
        super().prepare(prefix)
        self.copier.rewrites.learn(*self.rule, [])

    def propose(self, history, last, k, params, draws, keep=None):
        offer = self.copier.offer(history, last, k)
        self.rewritten += len(offer.rewrites) > 0
        return copied(offer.tokens, params, len(offer.rewrites))


def likely_rewrite(setting) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """A rule that rewrites the first token the memory offers into the target's likeliest first
    token (by the target-alone samples), so that copies carry it and it is often kept."""
    prompt, memory, baseline = setting
    first = PromptLookupDrafter((memory.index,)).copier.offer(prompt[:-1], prompt[-1], 1).tokens[0]
    likely = next(t for t, _ in Counter(s[0] for s in baseline).most_common() if t != first)
    return (first,), (likely,)


def test_greedy_copies_carrying_a_wrong_rewrite_still_give_the_target_alone(target_model, setting):
    prompt, _, _ = setting
    config = GenerationConfig(max_tokens=40, draft_tokens=16)
    plain = tokens_of(target_model, None, prompt, GenerationConfig(max_tokens=40))
    memory = LookupMemory(10_000)
    memory.add([*prompt, *plain])
    drafter = Rewriting((memory.index,), (plain[10],), ((plain[10] + 1) % target_model.n_vocab, plain[10]))
    events = list(generate(target_model, drafter, prompt, config))
    assert [t for e in events[:-1] for t in e.tokens] == plain
    assert drafter.rewritten > 0 and events[-1].rewrite_rounds == drafter.rewritten  # the summary counts them


def test_copies_carrying_a_rewrite_sample_the_target_distribution(target_model, setting):
    memory, rule = setting[1], likely_rewrite(setting)
    drafters = []

    def make():
        drafters.append(Rewriting((memory.index,), *rule))
        return drafters[-1]

    ok, pvalues = same_distribution(target_model, setting, make, 3)
    assert ok, pvalues
    assert sum(d.rewritten > 0 for d in drafters) > N // 2, "the copies should have carried the rewrite"


class PeekingCopier(PeeksAtTheAcceptTest, Rewriting):
    """Biased: drafts from the copy only where the accept test's uniform is small."""


@pytest.mark.parametrize("rewriting", [False, True])
def test_a_copier_that_peeks_at_the_accept_test_fails_the_same_test(target_model, setting, rewriting):
    memory = setting[1]
    rule = likely_rewrite(setting) if rewriting else ((-5,), (-6,))  # (-5,): never in a copy
    ok, pvalues = same_distribution(target_model, setting, lambda: PeekingCopier((memory.index,), *rule), 3)
    assert not ok, pvalues


class Overlapping(PromptLookupDrafter):
    """Copies from this request's text alone; records the longest draft."""

    def __init__(self):
        super().__init__()
        self.longest = 0

    def propose(self, history, last, k, params, draws, keep=None):
        draft = super().propose(history, last, k, params, draws, keep)
        self.longest = max(self.longest, len(draft.tokens))
        return draft


@pytest.fixture(scope="module")
def repeating(target_model):
    """A prompt that repeats the token the target most likely repeats (found by trying each), so
    that a copy from one token back reaches the text's end after one token and goes on only
    through itself, and is often kept; its target-alone samples."""
    start = target_model.tokenize("", add_special=True, parse_special=False)

    def repeats(token: int) -> float:
        target_model.truncate(0)
        logits = target_model.forward([*start, *[token] * 8], False)[-1]
        return float(logits[token] - np.logaddexp.reduce(np.sort(logits)[-TOP_K.top_k :]))

    token = max(range(target_model.n_vocab), key=repeats)
    prompt = [*start, *[token] * 12]
    return prompt, None, samples(target_model, lambda: None, prompt, TOP_K, 0, range(10**6, 10**6 + N))


def test_copies_that_go_on_through_themselves_sample_the_target_distribution(target_model, repeating):
    drafters = []

    def make():
        drafters.append(Overlapping())
        return drafters[-1]

    ok, pvalues = same_distribution(target_model, repeating, make, 8)
    assert ok, pvalues
    assert max(d.longest for d in drafters) > 1, "the copies should have gone on past the text's end"


class PeekingOverlap(PeeksAtTheAcceptTest, Overlapping):
    """Biased: drafts the overlapping copy only where the accept test's uniform is small."""


def test_an_overlapping_copier_that_peeks_at_the_accept_test_fails_the_same_test(target_model, repeating):
    ok, pvalues = same_distribution(target_model, repeating, PeekingOverlap, 8)
    assert not ok, pvalues


# one character per token both ways, so that a planted text stands for exactly the tokens it was
# made of (the tiny models emit byte tokens that are no valid UTF-8 on their own)
CHARACTERS = Vocabulary(lambda token: chr(0x4E00 + token).encode(), lambda text: [ord(c) - 0x4E00 for c in text])


class PlantedPattern(RecordPattern):
    """A record pattern that predicts `tokens` (as CHARACTERS text) wherever the output so far
    is a prefix of them; with `wrong` set, one token of each prediction is changed, at place
    0, 1, ..., wrong - 1 in turn, so that a wrong token is tried at every draft position."""

    def __init__(self, tokens: list[int], wrong: int = 0):
        super().__init__()
        self.truth = "".join(CHARACTERS.piece(t).decode() for t in tokens)
        self.wrong, self.calls = wrong, 0

    def predict(self, limit: int) -> str:
        if not self.truth.startswith(self.output):
            return ""
        start = len(self.output)
        self.calls += 1
        place = self.calls % self.wrong if self.wrong else -1
        return "".join(chr(ord(c) + 1) if i == place else c for i, c in enumerate(self.truth[start : start + limit]))


class Patterning(AutoDrafter):
    """Auto with a planted record pattern, trusted from the start (its policy built without the
    loss bound, so it drafts from the first round); counts its drafted rounds, and with `peek`
    offers the pattern only when the accept test's first uniform is small."""

    def __init__(self, policy, pattern: PlantedPattern, peek: bool = False):
        super().__init__(None, policy, (), CHARACTERS)
        self.planted, self.peek, self.pattern_rounds = pattern, peek, 0

    def prepare(self, prefix):
        super().prepare(prefix)
        self.prompt_length = len(prefix) + 1
        source = next(s for s in self.sources if isinstance(s, PatternSource))
        source.pattern = PlantedPattern([], self.planted.wrong)
        source.pattern.truth = self.planted.truth
        source.run = 32  # as if the output had followed it for long: it wins over the copier

    def propose(self, history, last, k, params, draws, keep=None):
        draft = super().propose(history, last, k, params, draws, keep)
        if (
            self.peek
            and draft.source == Source.PATTERN
            and accept_uniform(params.seed, self.prompt_length, history) >= 0.5
        ):
            return NO_DRAFT
        self.pattern_rounds += draft.source == Source.PATTERN
        return draft


def test_greedy_copies_by_a_half_wrong_record_pattern_give_the_target_alone(target_model, setting):
    prompt = setting[0]
    config = GenerationConfig(max_tokens=96, draft_tokens=8)
    plain = tokens_of(target_model, None, prompt, GenerationConfig(max_tokens=96))
    drafter = Patterning(Policy(CHEAP, 8, timed=False, risk=math.inf), PlantedPattern([prompt[-1], *plain], wrong=8))
    events = list(generate(target_model, drafter, prompt, config))
    assert [t for e in events[:-1] for t in e.tokens] == plain
    assert drafter.pattern_rounds > 3 and events[-1].pattern_rounds == drafter.pattern_rounds
    assert any(e.source == Source.PATTERN and e.accepted for e in events[:-1]) and any(
        e.source == Source.PATTERN and e.accepted < len(e.drafted) for e in events[:-1]
    )  # kept and refused


def likely_pattern(setting) -> PlantedPattern:
    """A pattern that predicts the target-alone samples' commonest continuation."""
    prompt, _, baseline = setting
    commonest = Counter(baseline).most_common(1)[0][0]
    return PlantedPattern([prompt[-1], *[t for t in commonest if t >= 0]])


def test_copies_by_the_record_pattern_sample_the_target_distribution(target_model, setting):
    pattern, drafters = likely_pattern(setting), []

    def make():
        drafters.append(Patterning(Policy(CHEAP, 4, timed=False, risk=math.inf), pattern))
        return drafters[-1]

    ok, pvalues = same_distribution(target_model, setting, make, 4)
    assert ok, pvalues
    assert sum(d.pattern_rounds > 0 for d in drafters) > N // 2, "the pattern should have been copied"


def test_record_pattern_copies_that_peek_at_the_accept_test_fail_the_same_test(target_model, setting):
    pattern = likely_pattern(setting)
    ok, pvalues = same_distribution(
        target_model,
        setting,
        lambda: Patterning(Policy(CHEAP, 4, timed=False, risk=math.inf), pattern, peek=True),
        4,
        3 * N,
    )
    assert not ok, pvalues


class Fillers(AutoDrafter):
    """Auto with no copy source, holding the pass at two tokens every round (`decoding.hold`):
    each round drafts the token before as a filler; counts the fillers the target kept."""

    def __init__(self):
        super().__init__(None, HoldsEveryRound(CHEAP, 4, timed=False), sources=[])
        self.kept = 0

    def observe(self, draft, emitted, seconds, looked=0.0):
        self.kept += bool(draft.tokens) and draft.source == Source.FILLER and emitted[0] == draft.tokens[0]
        super().observe(draft, emitted, seconds, looked)


@pytest.mark.parametrize("biased", [False, True], ids=["the p/q test", "an accept test that keeps 15% more"])
def test_held_passes_filled_with_the_token_before_sample_the_target_distribution(
    target_model, repeating, biased, monkeypatch
):
    """In a text the target tends to repeat, a filler is often kept: the held passes sample the
    target alone's distribution, and an accept test that keeps 15% more does not."""
    if biased:
        keeps_more(monkeypatch)
    drafters = []

    def make():
        drafters.append(Fillers())
        return drafters[-1]

    ok, pvalues = same_distribution(target_model, repeating, make, 4, 5 * N)
    assert ok != biased, pvalues
    assert sum(d.kept for d in drafters) > 5 * N // 2, "the fillers should often have been kept"
