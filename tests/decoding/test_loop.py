"""The speculative loop on real llama.cpp with tiny GGUF models: exactness, rollback, sampling."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from scripted import WritesBack

from specgen.decoding.drafters.base import Source
from specgen.decoding.drafters.lookup import PromptLookupDrafter
from specgen.decoding.drafters.model import ModelDrafter
from specgen.decoding.loop import GenerationConfig, Round, Summary, Utf8Stream, generate
from specgen.llama.model import LoadOptions, Model

PROMPTS = ["def add(a, b):", "the print of self", "Hello world, this is", "x = 1\nfor i in"]


def run(target, drafter, prompt_tokens, config):
    rounds, summary = [], None
    for event in generate(target, drafter, prompt_tokens, config):
        if isinstance(event, Summary):
            summary = event
        else:
            rounds.append(event)
    tokens = [t for r in rounds for t in (*r.drafted[: r.accepted], *([r.token] if r.token is not None else []))]
    return tokens, rounds, summary


def encode(model, text):
    return model.tokenize(text, add_special=True, parse_special=False)


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8])
def test_greedy_speculative_equals_target_alone(target_model, draft_model, k):
    drafted = accepted = 0
    stops = set()
    for text in PROMPTS:
        prompt = encode(target_model, text)
        plain, _, base = run(target_model, None, prompt, GenerationConfig(max_tokens=40))
        spec, rounds, summary = run(
            target_model, ModelDrafter(draft_model), prompt, GenerationConfig(max_tokens=40, draft_tokens=k)
        )
        assert spec == plain, f"K={k} prompt={text!r}"
        assert summary.tokens == base.tokens == len(plain)
        assert summary.stop_reason == base.stop_reason
        stops.add(base.stop_reason)
        assert "".join(r.text for r in rounds) == "".join(
            r.text for r in run(target_model, None, prompt, GenerationConfig(max_tokens=40))[1]
        )
        drafted += summary.drafted
        accepted += summary.accepted
    assert 0 < accepted < drafted, "the fixture draft should both agree and disagree with its target"
    assert stops == {"eog", "length"}, "the prompts should end both at an end-of-generation token and at -n"


def kept_against(plain: list[int], rounds) -> list[int]:
    """How many drafted tokens each round should have kept, from the plain greedy output alone:
    the length of the draft's common prefix with what the target alone wrote at that place.
    The round's own `accepted` is never read; a round adds those tokens and one of the target's."""
    kept, written = [], 0
    for event in rounds:
        n = 0
        while n < len(event.drafted) and written + n < len(plain) and event.drafted[n] == plain[written + n]:
            n += 1
        kept.append(n)
        written += n + 1
    return kept


def test_the_summary_counts_what_the_rounds_did(target_model, draft_model):
    """The Summary's counts and rates equal counts made here: rounds and drafted tokens counted
    over the events, kept tokens judged against the target alone's greedy output."""
    prompt = encode(target_model, PROMPTS[0])
    plain, _, _ = run(target_model, None, prompt, GenerationConfig(max_tokens=60))
    spec, rounds, summary = run(
        target_model, ModelDrafter(draft_model), prompt, GenerationConfig(max_tokens=60, draft_tokens=4)
    )
    kept, drafted = kept_against(plain, rounds), [len(r.drafted) for r in rounds]
    assert spec == plain and 0 < sum(kept) < sum(drafted)
    assert (summary.rounds, summary.tokens) == (len(rounds), len(plain))
    assert (summary.drafted, summary.accepted) == (sum(drafted), sum(kept))
    assert summary.acceptance_rate == pytest.approx(sum(kept) / sum(drafted))
    assert summary.tokens_per_round == pytest.approx(len(plain) / len(rounds))
    assert summary.rejected_rounds == sum(n < d for n, d in zip(kept, drafted, strict=True)) > 0
    assert any(n == d for n, d in zip(kept, drafted, strict=True)), "some round should keep its whole draft"
    assert list(summary.drafted_by_position) == [sum(d > i for d in drafted) for i in range(max(drafted))]
    assert list(summary.accepted_by_position) == [sum(n > i for n in kept) for i in range(max(drafted))]


def test_the_summary_times_and_sources_add_up_over_the_rounds(target_model, draft_model):
    prompt = encode(target_model, PROMPTS[0])
    _, rounds, summary = run(
        target_model, ModelDrafter(draft_model), prompt, GenerationConfig(max_tokens=60, draft_tokens=4)
    )
    assert summary.draft_s == pytest.approx(sum(r.draft_s for r in rounds)) and summary.draft_s > 0
    assert summary.verify_s == pytest.approx(sum(r.verify_s for r in rounds))
    assert summary.draft_s + summary.verify_s <= summary.decode_s
    assert {r.source for r in rounds} == {"model"} and summary.model_drafted == summary.drafted
    _, plain_rounds, plain = run(target_model, None, prompt, GenerationConfig(max_tokens=60))
    assert plain.draft_s == 0 and plain.drafted == 0 and {r.source for r in plain_rounds} == {Source.PLAIN}


def test_rollback_leaves_the_cache_as_a_fresh_decode(target_model):
    prefix = encode(target_model, PROMPTS[1])
    target_model.sync(prefix)
    extra = [60, 61, 62, 63]
    target_model.forward(extra, all_logits=True)
    target_model.truncate(len(prefix) + 2)  # keep two, reject two
    after_rollback = target_model.forward([70], all_logits=True)[0].copy()
    target_model.truncate(0)
    target_model.prefill(prefix + extra[:2])
    fresh = target_model.forward([70], all_logits=True)[0].copy()
    np.testing.assert_allclose(after_rollback, fresh, atol=1e-4)
    assert target_model.tokens == prefix + extra[:2] + [70]


def test_prompt_lookup_drafter_is_exact_and_finds_repeats(target_model):
    prompt = encode(target_model, "a b c d e f a b c d e f a b c")
    plain, _, _ = run(target_model, None, prompt, GenerationConfig(max_tokens=30))
    drafter = PromptLookupDrafter()
    looked, _, summary = run(target_model, drafter, prompt, GenerationConfig(max_tokens=30, draft_tokens=4))
    assert looked == plain
    assert summary.mode == "prompt-lookup" and summary.drafted > 0 and summary.model_drafted == 0
    assert drafter.copier.offer([1, 2, 3, 9, 1], 2, 3).tokens == [3, 9, 1]
    assert drafter.copier.offer([5, 6], 7, 2).tokens == []


def test_generation_stops_at_the_context_limit(tiny_models):
    with Model(tiny_models["target"], LoadOptions(n_ctx=256, n_threads=2)) as small:
        prompt = encode(small, PROMPTS[3] * 40)[:253]  # room for three new tokens
        _tokens, _, summary = run(small, None, prompt, GenerationConfig(max_tokens=500))
        assert summary.stop_reason == "context"
        assert len(prompt) - 1 + summary.tokens == small.n_ctx == 256


# A child process: llama.cpp aborts the whole process when a decode holds more tokens than its batch.
SMALL_CONTEXT = """
import json, sys
from specgen.llama.library import llama
llama()
from specgen.decoding.drafters.lookup import PromptLookupDrafter
from specgen.decoding.loop import GenerationConfig, Round, generate
from specgen.llama.model import LoadOptions, Model
with Model(sys.argv[1], LoadOptions(n_ctx=16, n_threads=2, n_gpu_layers=0)) as model:
    prompt = model.tokenize(sys.argv[2], add_special=True, parse_special=False)
    config = GenerationConfig(max_tokens=60, draft_tokens=40)
    rounds = [e for e in generate(model, PromptLookupDrafter(), prompt, config) if isinstance(e, Round)]
    print(json.dumps({"batch": model.n_batch, "longest": max(len(r.drafted) for r in rounds),
                      "tokens": [t for r in rounds for t in r.tokens]}))
"""


def test_a_context_smaller_than_a_verify_pass_decodes_it_a_batch_at_a_time_and_stays_exact(tiny_models, target_model):
    """--ctx 16 holds llama.cpp's batch to 16 tokens: a longer prompt is prefilled, and a longer
    verify pass decoded, 16 at a time, giving the tokens plain decoding gives."""
    text = "a b c d e f g h i j k l " * 6
    child = subprocess.run(
        [sys.executable, "-c", SMALL_CONTEXT, str(tiny_models["target"]), text],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    small = json.loads(child.stdout)
    plain, _, _ = run(target_model, None, encode(target_model, text), GenerationConfig(max_tokens=60))
    assert small["batch"] == 16 and small["longest"] > 16  # a pass of more than one batch ran
    assert small["tokens"] == plain


def test_utf8_stream_never_splits_a_character():
    stream = Utf8Stream()
    data = "é€😀".encode()
    pieces = [stream.feed(data[i : i + 1]) for i in range(len(data))]
    assert "".join(pieces) == "é€😀"
    assert all(piece in ("", "é", "€", "😀") for piece in pieces)


def test_interrupt_yields_a_summary(target_model, draft_model):
    prompt = encode(target_model, PROMPTS[0])
    events = generate(target_model, ModelDrafter(draft_model), prompt, GenerationConfig(max_tokens=100))
    assert isinstance(next(events), Round)
    summary = events.throw(KeyboardInterrupt())
    assert isinstance(summary, Summary) and summary.stop_reason == "interrupted" and summary.tokens > 0


def test_the_prompts_last_token_is_prefilled_with_the_rest_and_gives_the_first_token():
    """Plain decoding of n tokens makes n - 1 passes after the prefill (the first token comes from
    the prefill's row); the prompt is decoded whole, its last token included."""
    prompt, output = [1, 2, 3, 4], [5, 6, 7, 8, 9, 10]
    target = WritesBack(prompt, output)
    *rounds, summary = generate(target, None, prompt, GenerationConfig(max_tokens=len(output)))
    assert [t for r in rounds for t in r.tokens] == output
    assert target.passes == len(output) - 1 and summary.prefilled_tokens == len(prompt)


def test_a_prompt_met_again_whole_gives_the_row_it_gave_first(target_model):
    """The row of the prompt's last token comes from its prefill's batch; met again with the whole
    prompt cached, the same row comes back (not one decoded alone, which rounds differently), and
    nothing is decoded; once the cache loses that token it is decoded again."""
    prompt = target_model.tokenize("def fibonacci(n):", add_special=True, parse_special=False)
    target_model.truncate(0)
    row, decoded = target_model.start(prompt)
    assert decoded == len(prompt) and row.shape == (1, target_model.n_vocab)
    first = row.copy()
    target_model.forward([int(np.argmax(row))], all_logits=False)  # the reply goes on
    again, decoded = target_model.start(prompt)
    assert decoded == 0 and np.array_equal(again, first) and target_model.tokens == prompt
    target_model.truncate(len(prompt) - 1)
    assert target_model.start(prompt)[1] == 1
