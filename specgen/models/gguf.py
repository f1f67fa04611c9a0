"""Read a GGUF file's header (metadata and tensor table) without loading any weights.

This lets specgen reject a file that is not GGUF, a truncated download, or a draft whose
vocabulary does not match its target, in a fraction of a second and with a message that
names the problem, before llama.cpp spends seconds loading gigabytes. The same parser reads a
header from the first bytes of a file on the hub (`read_prefix`). A damaged or hostile header
cannot crash it, hang it or make it allocate much: every count is checked against the file's
size before anything is read for it, and arrays nest only so deep.
"""

from __future__ import annotations

import hashlib
import mmap
import struct
from dataclasses import dataclass, field
from pathlib import Path

from specgen.errors import SpecgenError

MAGIC = b"GGUF"
TOKENS = "tokenizer.ggml.tokens"
_LENGTH = struct.Struct("<Q")

# value type -> struct format of the scalar types
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9
_MAX_DIMS = 4  # ggml's GGML_MAX_DIMS
_MAX_DEPTH = 8  # arrays of arrays: real files nest one level at most; a damaged one could recurse forever

# ggml tensor type -> (elements per block, bytes per block), as in ggml's type traits
_BLOCKS = {
    0: (1, 4),
    1: (1, 2),
    2: (32, 18),
    3: (32, 20),
    6: (32, 22),
    7: (32, 24),
    8: (32, 34),
    9: (32, 36),
    10: (256, 84),
    11: (256, 110),
    12: (256, 144),
    13: (256, 176),
    14: (256, 210),
    15: (256, 292),
    16: (256, 66),
    17: (256, 74),
    18: (256, 98),
    19: (256, 50),
    20: (32, 18),
    21: (256, 110),
    22: (256, 82),
    23: (256, 136),
    24: (1, 1),
    25: (1, 2),
    26: (1, 4),
    27: (1, 8),
    28: (1, 8),
    29: (256, 56),
    30: (1, 2),
    34: (256, 54),
    35: (256, 66),
    39: (32, 17),
}

# metadata keys worth keeping; everything else is skipped while parsing
_KEPT = {
    "general.architecture",
    "general.name",
    "general.alignment",
    "tokenizer.ggml.model",
    "tokenizer.ggml.pre",
    "tokenizer.ggml.tokens",
    "tokenizer.ggml.bos_token_id",
    "tokenizer.ggml.eos_token_id",
    "tokenizer.ggml.unknown_token_id",
    "tokenizer.ggml.add_bos_token",
    "tokenizer.chat_template",
}


class GGUFError(SpecgenError):
    """The file is missing, not GGUF, or damaged."""


class HeaderTruncated(GGUFError):
    """The bytes end inside the header: a truncated file, or (reading a prefix) too few bytes yet."""


@dataclass(frozen=True)
class GGUFInfo:
    """What specgen needs to know about a model file before loading it."""

    path: Path
    metadata: dict = field(repr=False)
    file_size: int = 0
    data_end: int = 0
    vocab_size: int = 0  # token count, also when the texts were not decoded
    vocab_digest: str = ""  # hash of the raw token texts: equal digests, equal vocabularies

    @property
    def architecture(self) -> str:
        return self.metadata.get("general.architecture", "?")

    @property
    def name(self) -> str:
        return self.metadata.get("general.name", self.path.name)

    @property
    def vocab_type(self) -> str:
        return self.metadata.get("tokenizer.ggml.model", "?")

    @property
    def tokens(self) -> list[str]:
        return self.metadata.get("tokenizer.ggml.tokens", [])

    @property
    def bos_id(self) -> int | None:
        return self.metadata.get("tokenizer.ggml.bos_token_id")

    @property
    def eos_id(self) -> int | None:
        return self.metadata.get("tokenizer.ggml.eos_token_id")

    @property
    def unk_id(self) -> int | None:
        return self.metadata.get("tokenizer.ggml.unknown_token_id")

    @property
    def context_length(self) -> int | None:
        return self.metadata.get(f"{self.architecture}.context_length")


class _Reader:
    def __init__(self, buf: mmap.mmap | bytes, path: Path, size: int):
        self.buf, self.pos, self.path, self.size = buf, 0, path, size  # buf may be a prefix of the file

    def count(self, each: int, what: str) -> int:
        """A count of items of at least `each` bytes, refused when the file cannot hold them."""
        count = self.take("Q")
        if count * each > self.size - self.pos:
            raise GGUFError(f"{self.path} claims {count:,} {what}, more than the file holds; it is damaged")
        return count

    def take(self, fmt: str):
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.buf):
            raise HeaderTruncated(f"{self.path} is truncated inside its header; delete it and download it again")
        (value,) = struct.unpack_from("<" + fmt, self.buf, self.pos)
        self.pos += size
        return value

    def string(self) -> str:
        size = self.take("Q")
        if self.pos + size > len(self.buf):
            raise HeaderTruncated(f"{self.path} is truncated inside its header; delete it and download it again")
        raw = bytes(self.buf[self.pos : self.pos + size])
        self.pos += size
        return raw.decode("utf-8", errors="replace")

    def skip_string(self) -> None:
        self.skip(self.take("Q"))

    def skip(self, size: int) -> None:
        if self.pos + size > len(self.buf):
            raise HeaderTruncated(f"{self.path} is truncated inside its header; delete it and download it again")
        self.pos += size

    def skip_strings(self, count: int) -> None:
        """Step over `count` strings without decoding them (the hot loop of a header scan)."""
        buf, pos, length = self.buf, self.pos, _LENGTH.unpack_from
        try:
            for _ in range(count):
                pos += 8 + length(buf, pos)[0]
        except struct.error:
            pos = len(buf) + 1
        if pos > len(buf):
            raise HeaderTruncated(f"{self.path} is truncated inside its header; delete it and download it again")
        self.pos = pos

    def vocabulary(self, kind: int, decode: bool) -> tuple[list[str] | None, int, str]:
        """The token list (None unless decoded), its length and the digest of its raw bytes."""
        if kind != _ARRAY or self.take("I") != _STRING:
            raise GGUFError(f"{self.path} has a malformed {TOKENS}; it is damaged")
        count = self.count(8, "tokens")
        start = self.pos
        tokens = [self.string() for _ in range(count)] if decode else None
        if not decode:
            self.skip_strings(count)
        digest = hashlib.blake2b(self.buf[start : self.pos], digest_size=16).hexdigest()
        return tokens, count, digest

    def value(self, kind: int, keep: bool, depth: int = 0):
        if kind in _SCALARS:
            return self.take(_SCALARS[kind])
        if kind == _STRING:
            return self.string() if keep else self.skip_string()
        if kind == _ARRAY and depth < _MAX_DEPTH:
            return self.array(keep, depth + 1)
        if kind == _ARRAY:
            raise GGUFError(f"{self.path} nests metadata arrays more than {_MAX_DEPTH} deep; it is damaged")
        raise GGUFError(f"{self.path} has an unknown metadata type {kind}; it is damaged or too new")

    def array(self, keep: bool, depth: int):
        kind = self.take("I")
        count = self.count(struct.calcsize(_SCALARS[kind]) if kind in _SCALARS else 8, "array items")
        if kind in _SCALARS and not keep:
            self.skip(count * struct.calcsize(_SCALARS[kind]))
            return None
        if kind == _STRING and not keep:
            self.skip_strings(count)
            return None
        return [self.value(kind, keep, depth) for _ in range(count)]


def read_info(path: str | Path, tokens: bool = True) -> GGUFInfo:
    """Parse the header of a GGUF file; raise GGUFError naming what is wrong.

    With tokens=False the token texts are counted and hashed but not decoded (GGUFInfo.tokens
    is then empty): several times faster on a large vocabulary, for scans over many files.
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise GGUFError(f"model file not found: {path}; check the path (or name a pair: 'specgen pairs' lists them)")
    with open(path, "rb") as handle:
        size = path.stat().st_size
        if size < 24 or handle.read(4) != MAGIC:
            raise GGUFError(f"{path} is not a GGUF model file; specgen needs llama.cpp's .gguf format")
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            return _parse(_Reader(buf, path, size), size, tokens)


def read_prefix(data: bytes, name: str, size: int) -> GGUFInfo:
    """Parse the header from the first bytes of a `size`-byte file read from afar (named `name`);
    HeaderTruncated when it needs more of them."""
    if data[:4] != MAGIC[: len(data)]:
        raise GGUFError(f"{name} is not a GGUF model file; specgen needs llama.cpp's .gguf format")
    return _parse(_Reader(data, Path(name), size), size)


def _parse(reader: _Reader, size: int, decode_tokens: bool = True) -> GGUFInfo:
    reader.pos = 4
    version = reader.take("I")
    if version not in (2, 3):
        raise GGUFError(f"{reader.path} is GGUF version {version}; this llama.cpp reads versions 2 and 3")
    n_tensors, n_kv = reader.count(24, "tensors"), reader.count(13, "metadata keys")
    metadata, vocab_size, digest = {}, 0, ""
    for _ in range(n_kv):
        key = reader.string()
        if key == TOKENS:
            tokens, vocab_size, digest = reader.vocabulary(reader.take("I"), decode_tokens)
            if tokens is not None:
                metadata[key] = tokens
            continue
        value = reader.value(reader.take("I"), key in _KEPT)
        if key in _KEPT:
            metadata[key] = value
    data_needed = 0
    for _ in range(n_tensors):
        reader.skip_string()
        n_dims = reader.take("I")
        if n_dims > _MAX_DIMS:
            raise GGUFError(f"{reader.path} has a tensor of {n_dims} dimensions; it is damaged")
        dims = [reader.take("Q") for _ in range(n_dims)]
        kind, offset = reader.take("I"), reader.take("Q")
        data_needed = max(data_needed, offset + _tensor_bytes(kind, dims))
    alignment = metadata.get("general.alignment", 32)
    if type(alignment) is not int or not 0 < alignment <= 1 << 20:
        raise GGUFError(f"{reader.path} has a general.alignment of {alignment!r}; it is damaged")
    data_start = -(-reader.pos // alignment) * alignment
    info = GGUFInfo(reader.path, metadata, size, data_start + data_needed, vocab_size, digest)
    if info.data_end > size:
        raise GGUFError(
            f"{reader.path} is truncated ({size:,} of {info.data_end:,} bytes); delete it and download it again"
        )
    return info


def _tensor_bytes(kind: int, dims: list[int]) -> int:
    block, block_bytes = _BLOCKS.get(kind, (1, 0))
    count = 1
    for dim in dims:
        count *= dim
    return count // block * block_bytes
