"""The loopback hub (tests/hubserver.py) serving the tiny GGUF files under the default pair's real
names, and a user pairs file naming it; shared by the test_hub* modules."""

from __future__ import annotations

from pathlib import Path

import pytest
from hubpairs import DRAFT, TARGET, TOKEN, USER_PAIRS, _config_dir
from hubserver import FakeHub


@pytest.fixture
def fake_hub(tiny_models, monkeypatch):
    server = FakeHub()
    server.add(*TARGET, tiny_models["target"])
    server.add(*DRAFT, tiny_models["draft"])
    server.add("specgen-test/Tiny-Renamed-GGUF", "tiny-renamed.gguf", tiny_models["draft_renamed"])
    server.add("specgen-test/Tiny-Gated-GGUF", "tiny-gated.gguf", tiny_models["target"])
    server.state.gated["specgen-test/Tiny-Gated-GGUF"] = TOKEN
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    yield server
    server.stop()


@pytest.fixture
def user_pairs(fake_hub):
    text = USER_PAIRS.format(target_repo=TARGET[0], target_file=TARGET[1], draft_repo=DRAFT[0], draft_file=DRAFT[1])
    path = Path(_config_dir()) / "models.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path
