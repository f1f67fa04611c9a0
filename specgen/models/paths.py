"""Where model files are: the pair a command loads, the user's own models folder, and the
Hugging Face cache, each located from the environment when asked (never at import)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ModelPaths:
    """The GGUF files one command loads: a target, and a draft model or None."""

    target: Path
    draft: Path | None


def hub_cache_dir() -> Path:
    """The Hugging Face hub cache, as huggingface_hub locates it, from the environment now."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "huggingface" / "hub"


def models_dir() -> Path:
    """A folder of GGUF files the user already has ($SPECGEN_MODELS, default ~/.cache/specgen-models)."""
    return Path(os.environ.get("SPECGEN_MODELS") or Path.home() / ".cache" / "specgen-models").expanduser()
