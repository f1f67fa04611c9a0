"""Fixtures the chat tests share (test_chat.py, test_chat_messages.py)."""

from __future__ import annotations

import pytest

from specgen.llama.model import LoadOptions, Model


@pytest.fixture(scope="module")
def pair(tiny_models):
    """The tiny target and draft on one thread each: the test machine's cores are shared."""
    load = LoadOptions(n_ctx=2048, n_threads=1)
    with Model(tiny_models["target"], load) as target, Model(tiny_models["draft"], load) as draft:
        yield target, draft
