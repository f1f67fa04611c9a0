"""Log-probabilities reported by the loop are the target's own at each emitted position: the
log-softmax of a plain forward pass of the target over prompt and output, computed here with
numpy, greedy with long copies kept (rows of multi-token verify batches) and with the draft
model; and none are computed unless asked for."""

from __future__ import annotations

import numpy as np
import pytest

from specgen.decoding.drafters.lookup import PromptLookupDrafter
from specgen.decoding.drafters.model import ModelDrafter
from specgen.decoding.drafters.suffix import LookupMemory
from specgen.decoding.loop import GenerationConfig, generate

PROMPT = "the print of self"
TOP = 5


def reference(target, tokens: list[int]) -> np.ndarray:
    """Log-softmax of every row of one forward pass over `tokens`, from a fresh cache."""
    target.truncate(0)
    rows = np.array(target.forward(tokens, all_logits=True), dtype=np.float64)
    target.truncate(0)
    rows -= rows.max(axis=1, keepdims=True)
    return rows - np.log(np.exp(rows).sum(axis=1, keepdims=True))


@pytest.mark.parametrize("drafter_kind", ["copy", "model"])
def test_logprobs_are_the_targets_own_at_each_emitted_position(target_model, draft_model, drafter_kind):
    prompt = target_model.tokenize(PROMPT, add_special=True, parse_special=False)
    plain = [t for e in list(generate(target_model, None, prompt, GenerationConfig(40, 0)))[:-1] for t in e.tokens]
    memory = LookupMemory(10_000)
    memory.add([*prompt, *plain])  # the answer itself: copies of it are kept whole
    drafter = PromptLookupDrafter((memory.index,)) if drafter_kind == "copy" else ModelDrafter(draft_model)
    events = list(
        generate(target_model, drafter, prompt, GenerationConfig(40, 16 if drafter_kind == "copy" else 3, logprobs=TOP))
    )[:-1]
    tokens = [t for e in events for t in e.tokens]
    reported = [lp for e in events for lp in e.logprobs]
    assert tokens == plain and [lp.token for lp in reported] == tokens
    assert max(e.emitted for e in events) >= (8 if drafter_kind == "copy" else 2), "multi-token rounds"
    expected = reference(target_model, [*prompt, *tokens])[len(prompt) - 1 : -1]
    for row, entry in zip(expected, reported, strict=True):
        assert entry.logprob == pytest.approx(row[entry.token], abs=2e-3)
        top = np.argsort(-row, kind="stable")[:TOP]
        assert [t for t, _ in entry.top] == list(top)
        assert [v for _, v in entry.top] == pytest.approx(list(row[top]), abs=2e-3)


def test_no_logprobs_unless_asked(target_model):
    prompt = target_model.tokenize(PROMPT, add_special=True, parse_special=False)
    events = list(generate(target_model, None, prompt, GenerationConfig(5, 0)))[:-1]
    assert all(e.logprobs == () for e in events)
    events = list(generate(target_model, None, prompt, GenerationConfig(5, 0, logprobs=0)))[:-1]
    assert all(len(e.logprobs) == e.emitted and e.logprobs[0].top == () for e in events)
