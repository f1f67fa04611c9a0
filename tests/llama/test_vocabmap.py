"""Pairs whose vocabularies differ in size (1 and 128 tokens, either side larger) always run, and
their output is still the target's.

The padding tokens of the larger model are made likely (`extra_boost`), so a draft larger than its
target proposes ids the target lacks and a target larger than its draft emits ids the draft lacks:
without the mapping llama.cpp rejects the batch mid-reply.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from tinymodels import DRAFT, TARGET, write_model

from specgen.decoding.drafters.model import ModelDrafter
from specgen.decoding.loop import GenerationConfig, generate
from specgen.decoding.sampling import SamplingParams
from specgen.engine.drafting import drafter_for
from specgen.llama.model import LoadOptions, Model
from specgen.llama.pair import open_models
from specgen.llama.vocabmap import DraftVocabulary
from specgen.models.gguf import read_info
from specgen.models.paths import ModelPaths

PROMPTS = ("the print of self", "a b c a b c a b c")
LOAD = LoadOptions(n_ctx=512, n_threads=2)
CASES = [("draft", 1), ("draft", 128), ("target", 1), ("target", 128)]
IDS = [f"{side}-larger-by-{n}" for side, n in CASES]


@pytest.fixture(scope="module", params=CASES, ids=IDS)
def pair(request, tmp_path_factory) -> ModelPaths:
    """A target/draft pair whose `side` has `n` more tokens, likely ones."""
    side, n = request.param
    padded = {"extra_tokens": n, "extra_boost": 2.0 if n == 1 else 0.0}
    target, draft = (TARGET, replace(DRAFT, **padded)) if side == "draft" else (replace(TARGET, **padded), DRAFT)
    folder = tmp_path_factory.mktemp(f"{side}{n}")
    return ModelPaths(write_model(folder / "target.gguf", target), write_model(folder / "draft.gguf", draft))


def tokens_of(target, drafter, prompt: list[int], config: GenerationConfig, auto: bool = False) -> list[int]:
    events = list(generate(target, drafter_for(target, drafter, config, auto), prompt, config))[:-1]
    return [t for event in events for t in event.tokens]


def test_greedy_output_is_the_targets(pair):
    with open_models(pair, LOAD) as (target, draft):
        draft_size = read_info(pair.draft).vocab_size
        padding = range(min(target.n_vocab, draft_size), max(target.n_vocab, draft_size))
        for text in PROMPTS:
            prompt = target.tokenize(text, add_special=True, parse_special=False)
            alone = tokens_of(target, None, prompt, GenerationConfig(48, 0))
            for config, auto in (
                (GenerationConfig(48, 1), False),
                (GenerationConfig(48, 4), False),
                (GenerationConfig(48, 6), True),
            ):
                assert tokens_of(target, ModelDrafter(draft), prompt, config, auto) == alone, (config, auto)
        if target.n_vocab > draft_size:  # the target really emits what the draft lacks
            assert any(t in padding for t in alone)


def test_sampled_generation_runs_and_stays_in_the_targets_vocabulary(pair):
    with open_models(pair, LOAD) as (target, draft):
        prompt = target.tokenize(PROMPTS[0], add_special=True, parse_special=False)
        for seed in range(6):
            sampling = SamplingParams(temperature=1.0, top_k=0 if seed % 2 else 20, seed=seed)
            for config, auto in ((GenerationConfig(32, 4, sampling), False), (GenerationConfig(32, 6, sampling), True)):
                emitted = tokens_of(target, ModelDrafter(draft), prompt, config, auto)
                assert emitted and all(0 <= t < target.n_vocab for t in emitted)


def test_draft_logits_are_the_drafts_on_shared_ids_and_impossible_elsewhere(pair):
    with Model(pair.target, LOAD) as target, Model(pair.draft, LOAD) as raw, Model(pair.draft, LOAD) as inner:
        draft = DraftVocabulary(inner, target.n_vocab, stand_in=0)
        prompt = target.tokenize(PROMPTS[0], add_special=True, parse_special=False)
        shared = min(target.n_vocab, raw.n_vocab)
        expected = raw.forward(prompt, all_logits=True)[:, :shared].copy()
        rows = draft.forward(prompt, all_logits=True)
        assert rows.shape == (len(prompt), target.n_vocab)
        np.testing.assert_array_equal(rows[:, :shared], expected)
        assert np.all(rows[:, shared:] == -np.inf)
        assert draft.tokens == prompt


def test_ids_the_draft_lacks_are_fed_as_the_stand_in_and_remembered_as_given(pair):
    with Model(pair.target, LOAD) as target, Model(pair.draft, LOAD) as inner:
        if target.n_vocab <= inner.n_vocab:
            pytest.skip("the draft has every target id")
        draft = DraftVocabulary(inner, target.n_vocab, stand_in=0)
        missing = target.n_vocab - 1
        draft.sync([1, 5, missing, 7])
        assert draft.tokens == [1, 5, missing, 7]
        assert inner.tokens == [1, 5, 0, 7]
        draft.sync([1, 5, missing, 9, missing])
        assert inner.tokens == [1, 5, 0, 9, 0]
        draft.truncate(2)
        assert (draft.tokens, inner.tokens) == ([1, 5], [1, 5])


def test_sampled_output_follows_the_targets_distribution(pair):
    """First three tokens of many seeded runs, the pair against the target alone (chi-square, as in
    tests/decoding/test_exactness.py): q, cut or padded to the target's ids, keeps the p/q rule exact."""
    from stathelp import position_pvalues

    with open_models(pair, LOAD) as (target, draft):
        prompt = target.tokenize(PROMPTS[0], add_special=True, parse_special=False)

        def first_tokens(drafter, k: int, seeds: range) -> list[tuple[int, ...]]:
            configs = (GenerationConfig(3, k, SamplingParams(temperature=1.0, seed=s)) for s in seeds)
            return [tuple(tokens_of(target, drafter, prompt, config)) for config in configs]

        pvalues = position_pvalues(
            first_tokens(ModelDrafter(draft), 3, range(500)), first_tokens(None, 0, range(10**6, 10**6 + 500))
        )
        assert min(pvalues) > 0.001 / len(pvalues), pvalues


def test_specgen_run_prints_the_targets_text(pair, capsys):
    from specgen import cli

    def run(*args: str) -> str:
        with pytest.raises(SystemExit) as done:
            cli.main(
                [
                    "run",
                    "--target",
                    str(pair.target),
                    "--raw",
                    "-n",
                    "24",
                    "--ctx",
                    "256",
                    "-t",
                    "2",
                    *args,
                    "the print of self",
                ]
            )
        out, err = capsys.readouterr()
        assert done.value.code == 0, err
        return out

    alone = run("--no-draft", "-k", "0")
    assert run("--draft", str(pair.draft), "-k", "3") == alone
    assert run("--draft", str(pair.draft)) == alone  # auto
    run("--draft", str(pair.draft), "--temp", "0.8", "--seed", "3")
