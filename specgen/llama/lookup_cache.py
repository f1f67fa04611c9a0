"""The memory of past outputs that copy drafting searches after the request.

`chat` and `serve` keep one `LookupMemory` in the process, so a reply can copy from earlier
replies (the same request again, a revised answer). `run` keeps it only in a file the user
names, `--lookup-cache FILE` (like llama.cpp's dynamic lookup cache): read at the start,
merged with this run's output and written back at the end, under a lock and atomically, so
several specgen processes can share one file. The file also keeps which prompt each of its
latest outputs answered, so that `run` with the same prompt again follows that reply as
`serve` does. The file is bounded (`MAX_TOKENS` tokens, about 1 MB; the index in memory about
25 MB) and tagged with the target's vocabulary, so another model family never reads it.
Nothing is written to disk unless the user asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from specgen.decoding.drafters.suffix import LookupMemory
from specgen.errors import SpecgenError
from specgen.models.gguf import read_info
from specgen.storage import update_locked

MAX_TOKENS = 262_144


def vocabulary_id(model_path: Path) -> str:
    """What a memory is keyed by: the target's tokenizer type and a digest of its token texts."""
    info = read_info(model_path, tokens=False)
    return f"{info.vocab_type}:{info.vocab_digest}"


def new_memory() -> LookupMemory:
    return LookupMemory(MAX_TOKENS)


def load(path: Path, vocabulary: str) -> LookupMemory:
    """The memory saved in `path` (empty when the file does not exist yet)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return new_memory()
    except OSError as error:
        raise SpecgenError(f"cannot read --lookup-cache {path}: {error.strerror}; pass a readable file") from None
    _check(path, data, vocabulary)
    return LookupMemory.from_bytes(data, vocabulary, MAX_TOKENS)


def save(path: Path, vocabulary: str, output: list[int], prompt: Sequence[int] | None) -> bool:
    """Add one output to the file, merged with what other processes wrote meanwhile, with the
    prompt it answered (None: a reply cut short, which answers none); False when the file cannot
    be written (the run's output is not lost: it went to stdout)."""

    def merge(old: bytes | None) -> bytes:
        memory = new_memory()
        if old and LookupMemory.vocabulary_of(old) == vocabulary:
            memory = LookupMemory.from_bytes(old, vocabulary, MAX_TOKENS)
        memory.add(output, prompt)
        return memory.to_bytes(vocabulary)

    return update_locked(path, merge)


def _check(path: Path, data: bytes, vocabulary: str) -> None:
    if not data:
        return
    found = LookupMemory.vocabulary_of(data)
    if found is None:
        raise SpecgenError(f"--lookup-cache {path} is not a specgen lookup cache; name a new file, or delete it")
    if found != vocabulary:
        raise SpecgenError(
            f"--lookup-cache {path} belongs to a model with another vocabulary; use one file per model family"
        )
