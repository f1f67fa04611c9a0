"""The tiny models as `specgen serve` runs them (one thread), loaded in this process for the
outputs a request must get; each test module loads its own. Also the `server` and `endless` servers
that several test_serve_* modules use (each module starts its own)."""

from __future__ import annotations

from pathlib import Path

import pytest
from servers import KEY, OTHER_KEY, Server, tiny_pair

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


@pytest.fixture(scope="module")
def server(tiny_models):
    """The tiny pair with K = 3, the session fixtures' context and threads, and two API keys."""
    running = Server(
        *tiny_pair(tiny_models["target"], tiny_models["draft"]),
        "--api-key",
        KEY,
        "--api-key",
        OTHER_KEY,
        "-n",
        "24",
    )
    yield running
    running.stop()


@pytest.fixture(scope="module")
def endless(tiny_models):
    """A target that never ends a reply, a large context, and room for one waiting request."""
    running = Server(
        "--target",
        str(tiny_models["target_endless"]),
        "--draft",
        str(tiny_models["draft"]),
        "-k",
        "3",
        "--ctx",
        "32768",
        "--queue",
        "1",
        "-n",
        "100000",
        "-t",
        "1",
    )
    yield running
    running.stop()
