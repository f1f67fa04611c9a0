"""The suffix index against a brute-force search, its rollback, re-synchronisation after a
changed span, the bounded memory of past outputs, calibration that never raises, and seeded
runs that decide the same with an unwritable cache."""

from __future__ import annotations

from array import array

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specgen.decoding.auto import evidence
from specgen.decoding.copy_rates import CopyJudgement
from specgen.decoding.costs import StepCosts
from specgen.decoding.drafters import suffix
from specgen.decoding.drafters.base import Source
from specgen.decoding.drafters.lookup import Copier
from specgen.decoding.drafters.model import ModelDrafter
from specgen.decoding.drafters.suffix import MAX_MATCH, LookupMemory, SuffixIndex
from specgen.decoding.loop import GenerationConfig, generate
from specgen.decoding.policy import LOOKUP_MAX, Choice, Outcome, Policy
from specgen.decoding.sampling import SamplingParams
from specgen.engine.drafting import drafter_for
from specgen.llama.calibrate import DEFAULT, SIZES, cached_costs, calibrate

sequences = st.lists(st.integers(0, 3), min_size=1, max_size=120)


def brute_force(source: list[int], context: list[int]):
    """Every earlier position's match length with the end of `context`; the branches the index
    should report when it may look at every occurrence: the longest key level any position
    reaches, the positions reaching it grouped by next token."""

    def match(p):
        m = 0
        while m < min(MAX_MATCH, p, len(context)) and source[p - 1 - m] == context[-1 - m]:
            m += 1
        return m

    matches = {p: match(p) for p in range(1, len(source))}
    longest = max(matches.values(), default=0)
    levels = [n for n in suffix.LEVELS if n <= longest]
    if not levels:
        return {}
    level = levels[-1]
    groups: dict[int, tuple[int, int, int]] = {}  # next token -> (count, best match, latest position with it)
    for p in sorted((p for p, m in matches.items() if m >= level), reverse=True):
        count, best, at = groups.get(source[p], (0, -1, p))
        groups[source[p]] = (count + 1, max(best, matches[p]), at if best >= matches[p] else p)
    return groups


@pytest.fixture
def exhaustive(monkeypatch):
    """The index walking every link, so a brute-force search is its exact reference (the same
    for every example, so one patch serves them all)."""
    monkeypatch.setattr(suffix, "_WALK", 10**6)
    monkeypatch.setattr(suffix, "_CANDIDATES", 10**6)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(source=sequences, tail=st.lists(st.integers(0, 3), min_size=1, max_size=70), own=st.booleans())
def test_find_equals_a_brute_force_search(exhaustive, source, tail, own):
    if own:  # the request searching itself: the context is the source
        index = context = SuffixIndex(source + tail)
        reference = brute_force(source + tail, source + tail)
    else:
        index, context = SuffixIndex(source), SuffixIndex(tail)
        reference = brute_force(source, tail)
    branches = index.find(context)
    got = {index.tokens[b.position]: (b.match, b.position) for b in branches}
    assert got == {token: (match, at) for token, (_, match, at) in reference.items()}
    ranks = [reference[index.tokens[b.position]][1::-1] for b in branches]  # (match, occurrences agreeing)
    assert ranks == sorted(ranks, reverse=True)  # the longest match first, then the most agreeing


@settings(max_examples=100, deadline=None)
@given(source=sequences, tail=sequences)
def test_with_bounded_walks_every_branch_is_a_true_match_no_longer_than_the_longest(source, tail):
    index, context = SuffixIndex(source), SuffixIndex(tail)
    reference = brute_force(source, tail)
    longest = max((m for _, m, _ in reference.values()), default=0)
    for branch in index.find(context):
        m = branch.match
        assert 0 < m <= longest
        assert list(index.tokens[branch.position - m : branch.position]) == tail[-m:]


@settings(max_examples=100, deadline=None)
@given(first=sequences, cut=st.integers(0, 120), then=sequences)
def test_truncate_then_extend_is_the_index_built_afresh(first, cut, then):
    index = SuffixIndex()
    for token in first:  # one at a time: the tables grow and are rebuilt along the way
        index.extend([token])
    index.truncate(min(cut, len(first)))
    index.extend(then)
    fresh = SuffixIndex(first[:cut] + then)
    assert index.tokens == fresh.tokens and index._hashes == fresh._hashes
    assert index._prev == fresh._prev
    if index._mask == fresh._mask:
        assert index._heads == fresh._heads
    probe = SuffixIndex(then[-5:])
    assert index.find(probe) == fresh.find(probe)


def test_a_long_repeat_is_found_whole_and_the_continuation_copied():
    text = list(range(100, 180))
    index = SuffixIndex([*text, 7, 8, *text[:50]])
    best = index.find(index)[0]
    assert best.match == 50 and best.position == 50
    assert index.continuation(best.position, 10) == text[50:60]


@given(period=st.integers(1, 6), repeats=st.integers(1, 8), head=sequences, k=st.integers(1, 70))
def test_text_that_repeats_with_a_period_is_copied_on_through_the_copy_itself(period, repeats, head, k):
    """A reply stuck repeating a few tokens: the match with the text's end spans the period, so
    the copy goes on past the end as the period does, k tokens; the expected tokens by modulo."""
    pattern = [10 + i for i in range(period)]  # tokens the head (0..3) never holds
    index = SuffixIndex([*head, *pattern * (repeats + 1)])
    position = len(index) - period  # the occurrence one period back
    expected = [pattern[i % period] for i in range(k)]
    assert index.continuation(position, k, overlapping=True) == expected


def test_a_match_shorter_than_its_distance_to_the_end_shows_no_period_and_the_copy_stops_there():
    index = SuffixIndex([1, 2, 3, 9, 1])
    best = index.find(index)[0]
    assert (best.position, best.match) == (1, 1)
    assert index.continuation(best.position, 8, overlapping=True) == [2, 3, 9, 1]
    assert index.continuation(best.position, 8) == [2, 3, 9, 1]  # not the request's own text: no overlap


def test_the_copier_offers_a_repeating_reply_its_period_as_far_as_asked():
    history = [7, 8, 9, *[5, 6] * 12]
    offer = Copier().offer(history[:-1], history[-1], 16)
    assert offer.tokens == [5, 6] * 8


def test_copying_resumes_after_a_renamed_span():
    source = list(range(1000, 1060))
    copier = Copier()
    history = [*source, 5, *source[:20]]
    assert copier.offer(history[:-1], history[-1], 4).tokens == source[20:24]
    history += [77, 78, 79]  # the output renames source[20:22] into three new tokens
    history += [source[22], source[23]]  # and goes on as the source does
    offer = copier.offer(history[:-1], history[-1], 4)
    assert offer.tokens == source[24:28]
    assert offer.branch.anchored and offer.branch.match == 2


def test_the_continuation_stops_at_a_separator_and_shared_sources_are_searched():
    memory = LookupMemory(1000)
    memory.add([1, 2, 3, 4, 5])
    memory.add([9, 9, 9])
    copier = Copier((memory.index,))
    offer = copier.offer([7, 2, 3], 4, 10)
    assert offer.tokens == [5] and offer.branch.source == 1


def test_the_memory_keeps_its_bound_and_forgets_the_oldest_first():
    memory = LookupMemory(100)
    outputs = [[i] * 30 for i in range(1, 8)]
    for output in outputs:
        memory.add(output)
        assert len(memory.index) <= 100
    assert memory.outputs == outputs[-len(memory.outputs) :] and outputs[0] not in memory.outputs
    memory.add(list(range(500)))  # longer than the bound: its end is kept
    assert len(memory.index) <= 100 and memory.outputs[-1] == list(range(401, 500))
    assert memory.nbytes > 0


def test_the_memory_knows_the_latest_reply_to_a_prompt_while_it_holds_that_reply():
    memory = LookupMemory(100)
    memory.add([1, 2, 3], prompt=[7, 8])
    memory.add([4, 5], prompt=[7, 9])
    memory.add([6], prompt=None)  # a reply cut short answers no prompt
    assert memory.reply_to([7, 8]) == [1, 2, 3] and memory.reply_to([7, 9]) == [4, 5]
    assert memory.reply_to([7]) is None and memory.reply_to([7, 8, 9]) is None and memory.reply_to([6]) is None
    memory.add([3, 2, 1], prompt=[7, 8])  # the same prompt again: its newer reply
    assert memory.reply_to([7, 8]) == [3, 2, 1]
    for i in range(4):  # the bound forgets the oldest outputs, and with them what they answered
        memory.add([50 + i] * 30)
    assert [4, 5] not in memory.outputs and memory.reply_to([7, 9]) is None
    small = LookupMemory(100_000)
    for i in range(LookupMemory.REPLIES_MAX + 1):
        small.add([i + 1], prompt=[i])
    assert small.reply_to([0]) is None and small.reply_to([1]) == [2]  # at most REPLIES_MAX prompts


def test_the_memory_keeps_which_prompts_its_replies_answered_through_bytes():
    memory = LookupMemory(1000)
    memory.add([1, 2, 3], prompt=[7, 8])
    memory.add([4, 5])  # answers no prompt
    memory.add([6, 9], prompt=[70000])
    memory.add([3, 3], prompt=[7, 8])  # the same prompt again: its newer reply
    again = LookupMemory.from_bytes(memory.to_bytes("v"), "v", 1000)
    assert again.outputs == [[1, 2, 3], [4, 5], [6, 9], [3, 3]]
    assert again.reply_to([7, 8]) == [3, 3] and again.reply_to([70000]) == [6, 9]
    assert again.reply_to([4]) is None and again.reply_to([7]) is None
    # a memory saved before replies were kept: its outputs, and no reply to any prompt
    old = b"specgen-lookup-memory 1\nv\n" + array("i", [1, 2, 3, -1, 4, 5, -1]).tobytes()
    assert LookupMemory.vocabulary_of(old) == "v"
    loaded = LookupMemory.from_bytes(old, "v", 1000)
    assert loaded.outputs == [[1, 2, 3], [4, 5]] and loaded.reply_to([7, 8]) is None
    # more answered prompts than the words hold: damaged, so nothing is read
    damaged = b"specgen-lookup-memory 2\nv\n" + array("i", [9, 0, 1, 2, 3, 4, 5, -1]).tobytes()
    assert LookupMemory.from_bytes(damaged, "v", 1000).outputs == []


def test_the_memory_round_trips_through_bytes_for_its_vocabulary_only():
    memory = LookupMemory(1000)
    memory.add([1, 2, 3])
    memory.add([70000, 5])
    data = memory.to_bytes("qwen2:151936:abc")
    again = LookupMemory.from_bytes(data, "qwen2:151936:abc", 1000)
    assert again.outputs == memory.outputs and again.index.tokens == memory.index.tokens
    assert LookupMemory.from_bytes(data, "llama3:128256:def").outputs == []
    assert LookupMemory.from_bytes(data[:-1], "qwen2:151936:abc").outputs == []
    assert LookupMemory.from_bytes(b"junk", "qwen2:151936:abc").outputs == []


def test_a_long_match_drafts_long_where_its_bin_keeps_copies_and_a_weak_one_nothing():
    costs = StepCosts(dict(DEFAULT.verify), {})
    policy = Policy(costs, 8)
    long, weak = evidence(suffix.Branch(0, 10, 40), Source.TEXT), evidence(suffix.Branch(0, 10, 1), Source.TEXT)

    def offer(n: int) -> tuple[int, ...]:
        return tuple(range(1000 * n, 1000 * n + LOOKUP_MAX))

    for n in range(40):
        policy.choose(8, LOOKUP_MAX, 0, long, offer(2 * n))
        kept = CopyJudgement(long, offer(2 * n), 0, 64, 64)
        policy.observe(Outcome(Choice(Source.PLAIN), 0, 0, copies=(kept,)))
        policy.choose(8, LOOKUP_MAX, 0, weak, offer(2 * n + 1))
        missed = CopyJudgement(weak, offer(2 * n + 1), 0, 1, 0)
        policy.observe(Outcome(Choice(Source.PLAIN), 0, 0, copies=(missed,)))
    policy.saved = 10.0  # copies have paid in this reply: the loss bound does not bind
    choice = policy.choose(LOOKUP_MAX, LOOKUP_MAX, 0, long, offer(99))
    cheapest = min(costs.verify, key=lambda n: costs.verify[n] / n)  # per token, dips included
    assert choice == Choice(Source.LOOKUP, cheapest - 1)
    assert policy.choose(LOOKUP_MAX, LOOKUP_MAX, 0, weak, offer(100)).source == Source.PLAIN


def test_calibration_on_a_nearly_full_context_times_what_fits(target_model):
    prompt = target_model.tokenize("def add(a, b):", add_special=True, parse_special=False)
    filler = (prompt * target_model.n_ctx)[: target_model.n_ctx - 5]
    target_model.sync(filler)
    costs = calibrate(target_model, target_model)
    assert set(costs.verify) == {s for s in SIZES if s <= 5} and set(costs.draft) <= {1, 2, 4}
    target_model.sync((prompt * target_model.n_ctx)[: target_model.n_ctx])
    assert calibrate(target_model) == StepCosts(DEFAULT.verify, {}, DEFAULT.switch)  # no room at all
    assert cached_costs(target_model, None).verify == DEFAULT.verify
    target_model.sync(prompt)


def test_a_seeded_run_decides_the_same_with_an_unwritable_cache(target_model, draft_model, tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")  # a cache folder under a file cannot be created, even by root
    monkeypatch.setenv("SPECGEN_CACHE_DIR", str(blocker / "cache"))
    prompt = target_model.tokenize("x = 1\nfor i in x = 1\nfor", add_special=True, parse_special=False)
    config = GenerationConfig(30, 4, SamplingParams(0.9, 0, 0.95, 11))

    def text():
        drafter = drafter_for(target_model, ModelDrafter(draft_model), config, auto=True)
        assert drafter.policy.costs == StepCosts(DEFAULT.verify, DEFAULT.draft, DEFAULT.switch)
        return [t for e in list(generate(target_model, drafter, prompt, config))[:-1] for t in e.tokens]

    assert text() == text()
