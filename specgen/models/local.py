"""Find the GGUF models already on this machine and every target/draft pair among them.

Most people who try specgen already have GGUF files: in their own folder ($SPECGEN_MODELS),
in the Hugging Face cache, in LM Studio's models folder or in Ollama's blob store (where only
the manifests know which blob is a model). A scan reads headers only, without decoding the
token texts: files are grouped by a digest of their vocabulary, so two files in one group pair
up without comparing 150,000 token texts, and the full check (compat.check_vocabularies) runs
once per pair of groups whose sizes differ by a little. A file that cannot be read as GGUF is
skipped and counted, never fatal.
"""

from __future__ import annotations

import json
import os
import re
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from specgen.models.gguf import GGUFError, GGUFInfo, read_info
from specgen.models.paths import hub_cache_dir, models_dir
from specgen.models.vocab import MAX_SIZE_DIFFERENCE, check_vocabularies

OLLAMA_MODEL_LAYER = "application/vnd.ollama.image.model"
SHARD = re.compile(r"-(\d{5})-of-(\d{5})\.gguf$", re.IGNORECASE)


@dataclass(frozen=True)
class LocalModel:
    path: Path  # what --target/--draft take
    name: str  # how people know it: a file name, repo/file, or an Ollama model:tag
    source: str  # the folder it was found in
    size: int  # bytes, every shard of a split model included
    info: GGUFInfo  # its header, token texts not decoded

    @property
    def vocabulary(self) -> tuple:
        return (self.info.vocab_type, self.info.vocab_digest, self.info.bos_id, self.info.eos_id)


@dataclass(frozen=True)
class LocalPair:
    target: LocalModel
    draft: LocalModel

    @property
    def ratio(self) -> float:
        return self.target.size / max(self.draft.size, 1)


@dataclass(frozen=True)
class Skipped:
    path: Path
    reason: str


@dataclass(frozen=True)
class Scan:
    folders: list[tuple[str, Path]]
    models: list[LocalModel]
    pairs: list[LocalPair]
    skipped: list[Skipped]


def ollama_dir() -> Path:
    """Ollama's model store: $OLLAMA_MODELS, else ~/.ollama/models."""
    return Path(os.environ.get("OLLAMA_MODELS") or Path.home() / ".ollama" / "models").expanduser()


def default_folders() -> list[tuple[str, Path]]:
    """(label, folder) for every place models usually are, whether or not it exists here."""
    home = Path.home()
    return [
        ("$SPECGEN_MODELS", models_dir()),
        ("Hugging Face cache", hub_cache_dir()),
        ("LM Studio", home / ".lmstudio" / "models"),
        ("LM Studio (older)", home / ".cache" / "lm-studio" / "models"),
        ("Ollama", ollama_dir()),
    ]


def scan(extra: Sequence[Path] = ()) -> Scan:
    """Every GGUF model in the usual folders and in `extra`, and every pair among them."""
    folders = default_folders() + [("--dir", Path(folder).expanduser()) for folder in extra]
    models: list[LocalModel] = []
    skipped: list[Skipped] = []
    seen = set()
    for label, path, name in candidates(folders):
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        found = _read(label, path, name)
        if isinstance(found, LocalModel):
            models.append(found)
        else:
            skipped.append(found)
    return Scan(folders, models, pair_up(models), skipped)


def candidates(folders: list[tuple[str, Path]]) -> Iterator[tuple[str, Path, str]]:
    """(folder label, path, display name) of every file that may be a GGUF model."""
    for label, folder in folders:
        if (folder / "manifests").is_dir() and (folder / "blobs").is_dir():
            yield from ((label, path, name) for path, name in ollama_models(folder))
        else:
            yield from ((label, path, _display_name(folder, path)) for path in gguf_files(folder))


def gguf_files(folder: Path) -> Iterator[Path]:
    """Files (and anything else) named *.gguf under folder; later shards of split models left out."""
    for root, dirs, files in os.walk(folder):
        for name in sorted(files + [d for d in dirs if d.lower().endswith(".gguf")]):
            shard = SHARD.search(name)
            if name.lower().endswith(".gguf") and not (shard and int(shard.group(1)) > 1):
                yield Path(root) / name


def ollama_models(store: Path) -> Iterator[tuple[Path, str]]:
    """(blob, model:tag) for each manifest in Ollama's store that names a model layer."""
    manifests = store / "manifests"
    for root, _, files in os.walk(manifests):
        for tag in sorted(files):
            manifest = Path(root) / tag
            try:
                layers = json.loads(manifest.read_text(encoding="utf-8")).get("layers", [])
                digest = next(layer["digest"] for layer in layers if layer.get("mediaType") == OLLAMA_MODEL_LAYER)
            except (OSError, ValueError, AttributeError, TypeError, KeyError, StopIteration):
                continue
            yield store / "blobs" / digest.replace(":", "-"), _ollama_name(manifest.relative_to(manifests))


def _ollama_name(relative: Path) -> str:
    *where, model, tag = relative.parts
    if where[:2] == ["registry.ollama.ai", "library"]:
        return f"{model}:{tag}"
    return "/".join([*where, model]) + f":{tag}"


def _display_name(folder: Path, path: Path) -> str:
    """repo/file for the Hugging Face cache layout, else the path under the folder."""
    parts = path.relative_to(folder).parts
    if len(parts) >= 4 and parts[0].startswith("models--") and parts[1] == "snapshots":
        return "/".join(parts[0][len("models--") :].split("--", 1)) + "/" + "/".join(parts[3:])
    return "/".join(parts)


def _read(label: str, path: Path, name: str) -> LocalModel | Skipped:
    if path.is_dir():
        return Skipped(path, "a directory, not a file")
    if not path.is_file():
        return Skipped(path, "not a regular file (a broken or looping link, a pipe)")
    try:
        info = read_info(path, tokens=False)
        size = _total_size(path)
    except GGUFError as error:
        message = str(error)
        return Skipped(path, message[len(str(path)) + 1 :] if message.startswith(f"{path} ") else message)
    except (OSError, ValueError, struct.error, OverflowError) as error:
        return Skipped(path, f"unreadable: {error.strerror if isinstance(error, OSError) else error}")
    if not info.vocab_size:
        return Skipped(path, "has no vocabulary (not a language model, e.g. a vision projector)")
    return LocalModel(path, name, label, size, info)


def _total_size(path: Path) -> int:
    """The file's size, or the sum of all shards for the first shard of a split model."""
    shard = SHARD.search(path.name)
    if not shard:
        return path.stat().st_size
    stem = path.name[: shard.start()]
    total = int(shard.group(2))
    names = [f"{stem}-{index:05d}-of-{total:05d}.gguf" for index in range(1, total + 1)]
    return sum((path.parent / name).stat().st_size for name in names if (path.parent / name).exists())


def pair_up(models: list[LocalModel]) -> list[LocalPair]:
    """Every (target, draft) with a shared vocabulary and a smaller draft: largest target first,
    then its smallest draft first."""
    verdicts: dict[tuple, bool] = {}
    groups: dict[tuple, LocalModel] = {}
    for model in models:
        groups.setdefault(model.vocabulary, model)
    pairs = []
    for target in sorted(models, key=lambda m: (-m.size, m.name)):
        for draft in sorted(models, key=lambda m: (m.size, m.name)):
            if draft.size < target.size and _compatible(target, draft, groups, verdicts):
                pairs.append(LocalPair(target, draft))
    return pairs


def _compatible(target: LocalModel, draft: LocalModel, groups: dict, verdicts: dict) -> bool:
    """Same vocabulary digest: yes. Different types, or the same size with another digest: no.
    Otherwise check_vocabularies decides, once per pair of groups."""
    a, b = target.vocabulary, draft.vocabulary
    if a == b:
        return True
    if a[0] != b[0] or target.info.vocab_size == draft.info.vocab_size:
        return False
    if abs(target.info.vocab_size - draft.info.vocab_size) > MAX_SIZE_DIFFERENCE:
        return False
    if (a, b) not in verdicts:
        try:
            verdict = check_vocabularies(read_info(groups[a].path), read_info(groups[b].path))
            verdicts[a, b] = verdict.compatible
        except (GGUFError, OSError, ValueError):
            verdicts[a, b] = False
    return verdicts[a, b]


def drafts_for(target: Path, found: Scan | None = None) -> list[LocalModel]:
    """The models on disk that can draft for `target`, smallest first (the target must be readable)."""
    info = read_info(target, tokens=False)
    me = LocalModel(Path(target), Path(target).name, "", Path(target).stat().st_size, info)
    found = found or scan()
    groups = {model.vocabulary: model for model in [me, *found.models]}
    verdicts: dict[tuple, bool] = {}
    real = os.path.realpath(target)
    return [
        model
        for model in sorted(found.models, key=lambda m: m.size)
        if model.size < me.size and os.path.realpath(model.path) != real and _compatible(me, model, groups, verdicts)
    ]
