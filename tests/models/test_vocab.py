"""Whether a draft can speak for a target, decided from the two headers: from the vocabularies'
digests where they agree, text by text where they do not (real GGUF files the tests write)."""

from __future__ import annotations

import pytest

from specgen.llama.pair import IncompatiblePair, preflight
from specgen.models.gguf import read_info
from specgen.models.paths import ModelPaths
from specgen.models.vocab import check_vocabularies


def test_headers_read_without_their_token_texts_accept_a_matched_pair(tiny_models):
    target, draft = (read_info(tiny_models[role], tokens=False) for role in ("target", "draft"))
    assert target.tokens == [] and draft.tokens == []  # nothing decoded
    verdict = check_vocabularies(target, draft)
    texts = read_info(tiny_models["target"]).tokens  # the count, from the decoded header
    assert verdict.compatible and verdict.reason.endswith(f"vocabulary of {len(texts)} tokens")


def test_headers_without_their_texts_never_pass_vocabularies_that_differ(tiny_models):
    target, renamed = (read_info(tiny_models[role], tokens=False) for role in ("target", "draft_renamed"))
    with pytest.raises(ValueError, match="compared by their texts"):
        check_vocabularies(target, renamed)


def test_preflight_reads_the_texts_where_the_vocabularies_differ_and_names_the_first_that_does(tiny_models):
    with pytest.raises(IncompatiblePair, match="token 139 differs"):
        preflight(ModelPaths(tiny_models["target"], tiny_models["draft_renamed"]))
    assert preflight(ModelPaths(tiny_models["target"], tiny_models["draft"])) is not None
    assert preflight(ModelPaths(tiny_models["target"], None)) is None
