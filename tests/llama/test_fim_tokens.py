"""A model's fill-in-the-middle tokens come from its GGUF header, under the current keys
(`tokenizer.ggml.fim_pre_token_id` ...) or the older ones (`prefix_token_id` ...), and the
pad, repository and file-separator tokens end a generation, as llama.cpp marks them."""

from __future__ import annotations

import gguf
import pytest
from tinymodels import FIM, FIM_OLD

from specgen.llama.model import FimTokens, LoadOptions, Model


def header_ids(path) -> dict[str, int]:
    """The token ids the header names, read with the gguf package."""
    reader = gguf.GGUFReader(str(path))
    return {
        key.split(".")[-1].removesuffix("_token_id"): int(field.parts[-1][0])
        for key, field in reader.fields.items()
        if key.endswith("_token_id")
    }


@pytest.mark.parametrize(
    "role, roles",
    [
        ("target_fim", dict(zip(("pre", "suf", "mid", "pad", "rep", "sep"), FIM, strict=True))),
        ("target_fim_old_keys", dict(zip(("pre", "suf", "mid"), FIM_OLD, strict=True))),
    ],
)
def test_the_fim_tokens_are_the_ones_the_header_names(tiny_models, role, roles):
    ids = header_ids(tiny_models[role])
    with Model(tiny_models[role], LoadOptions(n_ctx=64, n_threads=1)) as model:
        assert model.fim == FimTokens(**{attribute: ids[key] for attribute, key in roles.items()})
        assert model.fim.usable
        for token in (model.fim.pad, model.fim.rep, model.fim.sep):
            assert token is None or model.is_eog(token)
        assert not model.is_eog(model.fim.mid)


def test_a_model_without_them_has_none(target_model):
    assert target_model.fim == FimTokens() and not target_model.fim.usable
