"""Shared fixtures: tiny GGUF models built once per session, loaded with real llama.cpp."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from specgen.llama.library import llama

llama()  # before numpy, as specgen's commands do (specgen/cli/__init__.py, LOADS_MODELS): CUDA builds need it

from tinymodels import build_all  # noqa: E402

from specgen.llama.model import LoadOptions, Model  # noqa: E402

# A suite started in the background by a non-interactive shell (`nohup ... &`, some CI runners)
# gets SIGINT ignored, and every specgen it starts inherits that: the Ctrl-C tests would then see
# a process that cannot be interrupted. A handler (unlike "ignored") is reset to the default at exec.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory) -> dict[str, Path]:
    return build_all(tmp_path_factory.mktemp("models"))


# The tiny models stay on the CPU, where a one-token and a batched pass agree to 0.0002 in the
# logits; on CUDA (an H100) they differ by up to 0.26, enough to flip their near-ties, and the
# token-for-token tests would test llama.cpp's GPU kernels rather than the loop
# (benchmarks/results/2026-11-26-h100-2/).
ON_THE_CPU = LoadOptions(n_ctx=2048, n_threads=2, n_gpu_layers=0)


@pytest.fixture(scope="session")
def target_model(tiny_models):
    with Model(tiny_models["target"], ON_THE_CPU) as model:
        yield model


@pytest.fixture(scope="session")
def draft_model(tiny_models):
    with Model(tiny_models["draft"], ON_THE_CPU) as model:
        yield model


@pytest.fixture(scope="session", autouse=True)
def isolated_cache_dir(tmp_path_factory):
    """Models loaded by session fixtures must not read or write the user's kernel verdicts either."""
    os.environ["SPECGEN_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))


@pytest.fixture(autouse=True)
def isolated_user_dirs(tmp_path, monkeypatch):
    """No test reads or writes the real user's config or Hugging Face cache."""
    monkeypatch.setenv("SPECGEN_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("SPECGEN_MODELS", str(tmp_path / "models"))
    monkeypatch.setenv("SPECGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.delenv("SPECGEN_DEBUG", raising=False)
    os.environ.pop("HF_TOKEN", None)
