"""A grammar on the output keeps speculation exact: greedy, every drafter emits the tokens the
constrained target alone emits (the JSON grammar, a JSON schema's, a grammar whose allowed
tokens depend on the state at each row); sampled, the same distribution; and a constraint that
masks every verify row with the state before the draft (a planted bias) fails the same test.

Real llama.cpp and llama.cpp's grammar sampler on the tiny models.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from stathelp import position_pvalues

from specgen.decoding.auto import AutoDrafter
from specgen.decoding.costs import StepCosts
from specgen.decoding.drafters.lookup import PromptLookupDrafter
from specgen.decoding.drafters.model import ModelDrafter
from specgen.decoding.drafters.suffix import LookupMemory
from specgen.decoding.loop import GenerationConfig, generate
from specgen.decoding.policy import Policy
from specgen.decoding.sampling import SamplingParams
from specgen.llama.grammar import Grammar, json_grammar, schema_grammar

N = 1200
DEPTH = 3
ALPHA = 0.001
PROMPT = "the print of self"
# letters from a-m and from n-z in turn: which tokens may come next depends on every character so far
ALTERNATING = "root ::= ([a-m] [n-z])+"
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 6},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}},
        "size": {"type": "integer"},
    },
    "required": ["name", "tags", "size"],
}
FLAT = StepCosts({1: 1.0, 2: 1.02, 4: 1.05, 8: 1.1, 16: 1.2}, {1: 0.1, 8: 0.3})
TOP_K = SamplingParams(temperature=1.0, top_k=8)
TOP_P = SamplingParams(temperature=0.9, top_p=0.9)


def constrained(target, drafter, prompt: list[int], config: GenerationConfig, gbnf: str):
    with Grammar(target, gbnf) as grammar:
        events = list(generate(target, drafter, prompt, config, grammar))
    return [t for e in events[:-1] for t in e.tokens], events[-1]


def text_of(target, tokens: list[int]) -> str:
    return b"".join(target.piece(t) for t in tokens).decode("utf-8", errors="replace")


@pytest.mark.parametrize("gbnf", [json_grammar(), schema_grammar(SCHEMA), ALTERNATING], ids=["json", "schema", "alt"])
def test_greedy_drafting_under_a_grammar_equals_the_constrained_target_alone(target_model, draft_model, gbnf):
    prompt = target_model.tokenize(PROMPT, add_special=True, parse_special=False)
    config = GenerationConfig(max_tokens=48)
    plain, _ = constrained(target_model, None, prompt, config, gbnf)
    memory = LookupMemory(10_000)
    wrong = target_model.tokenize(" a", False, False)[-1]  # the alternation forbids it, the JSON ones outside strings
    memory.add([*prompt, *plain[:20], wrong, *plain[20:]])  # the answer with one wrong token in it
    drafters = {
        "model k1": (ModelDrafter(draft_model), 1),
        "model k3": (ModelDrafter(draft_model), 3),
        "copy": (PromptLookupDrafter((memory.index,)), 16),
        "auto": (AutoDrafter(ModelDrafter(draft_model), Policy(FLAT, 4, timed=False), (memory.index,)), 4),
    }
    for name, (drafter, k) in drafters.items():
        tokens, summary = constrained(target_model, drafter, prompt, GenerationConfig(48, k), gbnf)
        assert tokens == plain, name
        assert 0 < summary.accepted < summary.drafted, (name, summary.accepted, summary.drafted)


def test_a_schema_constrained_reply_is_json_that_fits_the_schema(target_model):
    prompt = target_model.tokenize(PROMPT, add_special=True, parse_special=False)
    tokens, summary = constrained(target_model, None, prompt, GenerationConfig(200), schema_grammar(SCHEMA))
    assert summary.stop_reason == "eog"
    reply = json.loads(text_of(target_model, tokens))  # strict: no control characters in strings either
    assert set(reply) == {"name", "tags", "size"} and isinstance(reply["name"], str)
    assert set(reply["tags"]) <= {"a", "b"} and isinstance(reply["size"], int)


def samples(target, make_drafter, make_constraint, params: SamplingParams, k: int, seeds) -> list[tuple[int, ...]]:
    prompt = target.tokenize(PROMPT, add_special=True, parse_special=False)
    out = []
    for seed in seeds:
        config = GenerationConfig(DEPTH, k, SamplingParams(params.temperature, params.top_k, params.top_p, seed))
        constraint = make_constraint()
        events = list(generate(target, make_drafter(), prompt, config, constraint))
        if isinstance(constraint, Grammar):
            constraint.close()
        got = [t for e in events[:-1] for t in e.tokens]
        out.append(tuple(got + [-1] * (DEPTH - len(got))))
    return out


def same_distribution(target, make_drafter, make_constraint, params, k) -> tuple[bool, list[float]]:
    baseline = samples(target, lambda: None, make_constraint, params, 0, range(10**6, 10**6 + N))
    drafted = samples(target, make_drafter, make_constraint, params, k, range(N))
    pvalues = position_pvalues(drafted, baseline)
    return min(pvalues) > ALPHA / len(pvalues), pvalues


@pytest.mark.parametrize("params", [TOP_K, TOP_P], ids=["topk", "topp"])
def test_sampling_under_a_grammar_follows_the_constrained_target(target_model, draft_model, params):
    ok, pvalues = same_distribution(
        target_model, lambda: ModelDrafter(draft_model), lambda: Grammar(target_model, ALTERNATING), params, 3
    )
    assert ok, pvalues


class Alternating:
    """The same alternation as ALTERNATING, by token id instead of letters and in plain Python, so
    that a wrong mask cannot break a grammar engine: even ids, then odd ids, in turn."""

    def __init__(self):
        self.emitted = 0

    def round(self, drafted):
        return self.Rows(self.emitted)

    def accept(self, tokens):
        self.emitted += len(tokens)

    class Rows:
        def __init__(self, emitted: int):
            self.emitted = emitted

        def allowed(self, row: int, tokens: np.ndarray) -> np.ndarray:
            return tokens % 2 == (self.emitted + row) % 2


class MaskedBeforeTheDraft(Alternating):
    """A planted bias: every verify row masked with the state the round began in."""

    def round(self, drafted):
        rows = self.Rows(self.emitted)
        return type("Stale", (), {"allowed": lambda _, row, tokens: rows.allowed(0, tokens)})()


def test_a_constraint_masking_each_row_at_its_place_passes_and_a_stale_mask_fails(target_model, draft_model):
    ok, pvalues = same_distribution(target_model, lambda: ModelDrafter(draft_model), Alternating, TOP_K, 3)
    assert ok, pvalues
    ok, pvalues = same_distribution(target_model, lambda: ModelDrafter(draft_model), MaskedBeforeTheDraft, TOP_K, 3)
    assert not ok, pvalues
