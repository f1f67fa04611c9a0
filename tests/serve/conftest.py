"""The tiny models as `specgen serve` runs them (one thread), loaded in this process for the
outputs a request must get; each test module loads its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from specgen.llama.model import LoadOptions, Model


def loaded(path: Path):
    with Model(path, LoadOptions(n_ctx=2048, n_threads=1)) as model:
        yield model


@pytest.fixture(scope="module")
def target_model(tiny_models):
    yield from loaded(tiny_models["target"])


@pytest.fixture(scope="module")
def draft_model(tiny_models):
    yield from loaded(tiny_models["draft"])


@pytest.fixture(scope="module")
def tools_target(tiny_models):
    """The tiny target with Qwen2.5's chat template (tools, structured output)."""
    yield from loaded(tiny_models["target_tools"])


@pytest.fixture(scope="module")
def fim_target(tiny_models):
    """The tiny target with fill-in-the-middle tokens."""
    yield from loaded(tiny_models["target_fim"])


@pytest.fixture(scope="module")
def fim_draft(tiny_models):
    yield from loaded(tiny_models["draft_fim"])
