"""Every copy source, behind the one interface the auto drafter asks (`CopySource`), keeps the
output the target's: greedy token for token and sampled in distribution, and each of those
tests fails when a bias of realistic size is planted in the verification (an accept test that
keeps 15% more, greedy: a near-tie read as a tie), not only a gross one (the peeking drafters
beside each source's own tests).

Real llama.cpp on the tiny target. Each source is the only one in an auto drafter without a loss
bound (and the text so far once more, drafted one token a round as held passes), and offers what
the test plants: the target alone's own output, in the greedy tests with
each near-tied token swapped for its runner-up (which only a biased verification keeps), in the
sampled ones the commonest target-alone sample (so that its tokens are drafted and often kept,
and a 15% bias moves its share by several standard errors).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

import pytest
from holding import HoldsEveryRound
from stathelp import keeps_more, keeps_near_ties, near_tie_swaps, position_pvalues

from specgen.decoding.auto import AutoDrafter
from specgen.decoding.costs import StepCosts
from specgen.decoding.drafters.base import Source, Vocabulary
from specgen.decoding.drafters.lookup import Copier
from specgen.decoding.drafters.pattern import PatternSource, RecordPattern
from specgen.decoding.drafters.prediction import Prediction
from specgen.decoding.drafters.quoted import json_escaped
from specgen.decoding.drafters.source import CopySource
from specgen.decoding.drafters.suffix import LookupMemory
from specgen.decoding.loop import GenerationConfig, generate
from specgen.decoding.policy import Policy
from specgen.decoding.sampling import SamplingParams

PROMPT = "a b c\na b c\na b"  # a newline, so that the prompt as JSON escapes it is a source of its own
LENGTH = 60
N = 1200
DEPTH = 3
ALPHA = 0.001
SHARP = SamplingParams(temperature=0.5, top_k=8)  # the likeliest first token near 0.8: a 15% bias shows
CHEAP = StepCosts({1: 1.0, 2: 1.02, 4: 1.05, 8: 1.1, 16: 1.2, 64: 1.5}, {})  # copies pay at any length
# one character per token both ways, so that a planted text stands for exactly the tokens it was made of
CHARACTERS = Vocabulary(lambda token: chr(0x4E00 + token).encode(), lambda text: [ord(c) - 0x4E00 for c in text])


class Planted(RecordPattern):
    """A record pattern that predicts `tokens` (as CHARACTERS text) wherever the output so far is a
    prefix of them."""

    def __init__(self, tokens: list[int]):
        super().__init__()
        self.truth = "".join(CHARACTERS.piece(t).decode() for t in tokens)

    def predict(self, limit: int) -> str:
        return self.truth[len(self.output) : len(self.output) + limit] if self.truth.startswith(self.output) else ""


class PlantedPatternSource(PatternSource):
    def __init__(self, tokens: list[int]):
        self.tokens = tokens
        super().__init__(CHARACTERS)

    def prepare(self, prefix: list[int]) -> None:
        super().prepare(prefix)
        self.pattern = Planted(self.tokens)


def quoting(target, prompt: list[int], copy: list[int]) -> Vocabulary:
    """The target's pieces, and as the prompt's text escaped as JSON, the prompt and then `copy`."""
    escaped = json_escaped(b"".join(map(target.piece, prompt[:-1])).decode())  # the loop prepares all but the last
    return Vocabulary(target.piece, lambda text: [*prompt, *copy] if text == escaped else [])


def source_of(kind: str, target, prompt: list[int], copy: list[int]) -> CopySource:
    """A copy source of `kind` that offers `copy` after `prompt`."""
    if kind == "text":
        memory = LookupMemory(10_000)
        memory.add([*prompt, *copy])
        return Copier((memory.index,))
    if kind == "quoted":
        return Copier((), quoting(target, prompt, copy))
    if kind == "pattern":
        return PlantedPatternSource([prompt[-1], *copy])
    if kind == "repeat":
        return Prediction(copy, name=Source.REPEAT)
    return Prediction(copy)


REPORTED = {
    "text": Source.TEXT,
    "quoted": Source.QUOTED,
    "pattern": Source.PATTERN,
    "prediction": Source.PREDICTION,
    "repeat": Source.REPEAT,  # an earlier identical request's reply, followed as a prediction
    "held": Source.TEXT,  # the text so far, one token a round as held passes (`decoding.hold`)
}
KINDS = list(REPORTED)


def alone(source: CopySource, k: int = 8) -> AutoDrafter:
    return AutoDrafter(None, Policy(CHEAP, k, timed=False, risk=math.inf), sources=[source])


def drafting(kind: str, target, prompt: list[int], copy: list[int], k: int = 8) -> AutoDrafter:
    """An auto drafter whose one source of `kind` offers `copy`; "held": the text so far, drafted
    one token a round as held passes."""
    if kind == "held":
        text = source_of("text", target, prompt, copy)
        return AutoDrafter(None, HoldsEveryRound(CHEAP, k, timed=False), sources=[text])
    return alone(source_of(kind, target, prompt, copy), k)


def run(target, drafter, prompt: list[int], config: GenerationConfig):
    events = list(generate(target, drafter, prompt, config))
    return [t for e in events[:-1] for t in e.tokens], events[-1]


@pytest.fixture(scope="module")
def greedy(target_model):
    """The prompt, the target alone's greedy output, and that output with its near-ties swapped."""
    prompt = target_model.tokenize(PROMPT, add_special=True, parse_special=False)
    plain = run(target_model, None, prompt, GenerationConfig(max_tokens=LENGTH))[0]
    swapped = near_tie_swaps(target_model, prompt, plain)
    assert len(plain) == LENGTH and swapped != plain  # measured: 4 near-ties in 60 tokens
    return prompt, plain, swapped


@pytest.mark.parametrize("biased", [False, True], ids=["exact", "near-ties kept"])
@pytest.mark.parametrize("kind", KINDS)
def test_greedy_copies_give_the_target_alone_and_a_verification_that_keeps_near_ties_fails(
    target_model, greedy, kind, biased, monkeypatch
):
    prompt, plain, swapped = greedy
    if biased:
        keeps_near_ties(monkeypatch)
    tokens, summary = run(
        target_model,
        drafting(kind, target_model, prompt, swapped),
        prompt,
        GenerationConfig(max_tokens=LENGTH, draft_tokens=8),
    )
    assert (tokens == plain) != biased
    drafted = summary.by_source.get(REPORTED[kind])
    assert drafted is not None and drafted.kept > 0, summary.by_source  # the source drafted, and paid


def samples(
    target, make: Callable[[], AutoDrafter | None], prompt: list[int], seeds: range, source: Source = Source.PLAIN
) -> tuple[list[tuple[int, ...]], int]:
    """A sample of DEPTH tokens for each seed, and in how many of them `source` drafted."""
    out, drafted = [], 0
    for seed in seeds:
        params = SamplingParams(SHARP.temperature, SHARP.top_k, SHARP.top_p, seed)
        tokens, summary = run(target, make(), prompt, GenerationConfig(DEPTH, 4, params))
        out.append(tuple(tokens + [-1] * (DEPTH - len(tokens))))  # -1: generation had ended
        drafted += source in summary.by_source
    return out, drafted


@pytest.fixture(scope="module")
def sampled(target_model):
    """The prompt, target-alone samples, and the commonest of them (what the sources offer)."""
    prompt = target_model.tokenize(PROMPT, add_special=True, parse_special=False)
    baseline = samples(target_model, lambda: None, prompt, range(10**6, 10**6 + N))[0]
    commonest = [t for t in Counter(baseline).most_common(1)[0][0] if t >= 0]
    return prompt, baseline, commonest


@pytest.mark.parametrize("biased", [False, True], ids=["the p/q test", "an accept test that keeps 15% more"])
@pytest.mark.parametrize("kind", KINDS)
def test_copies_sample_the_target_distribution_and_a_slightly_biased_accept_test_fails(
    target_model, sampled, kind, biased, monkeypatch
):
    prompt, baseline, commonest = sampled
    if biased:
        keeps_more(monkeypatch)
    drafts, drafted = samples(
        target_model,
        lambda: drafting(kind, target_model, prompt, commonest, 4),
        prompt,
        range(N),
        REPORTED[kind],
    )
    pvalues = position_pvalues(drafts, baseline)
    assert (min(pvalues) > ALPHA / len(pvalues)) != biased, pvalues
    assert drafted > N // 2, drafted  # the source drafted in most samples
