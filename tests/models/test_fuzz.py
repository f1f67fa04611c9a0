"""Damaged GGUF headers and models.toml files give one-line errors: never a crash, a hang or a huge
allocation (Hypothesis shrinks any counterexample to a small one).

The GGUF cases start from a real (tiny) file and truncate it, flip bytes in its header, or write
huge values over its counts and string lengths, whose offsets a recording reader finds.
"""

from __future__ import annotations

import contextlib
import io
import re
import struct
import tracemalloc
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tinymodels import TARGET, write_model

from specgen import cli
from specgen.models import gguf
from specgen.models.registry import RegistryError, read_file

HUGE = [2**64 - 1, 2**63, 2**63 - 1, 2**62, 2**40, 2**32 + 1, 2**32 - 1, 2**31, 10**9]
FUZZ = settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


class _Recording(gguf._Reader):
    """A reader that notes where each 8-byte count or length sits."""

    def __init__(self, buf, path):
        super().__init__(buf, path, len(buf))
        self.lengths: list[int] = []

    def take(self, fmt: str):
        if fmt == "Q":
            self.lengths.append(self.pos)
        return super().take(fmt)


@pytest.fixture(scope="module")
def seed(tmp_path_factory) -> tuple[bytes, list[int], int]:
    """A small real GGUF file, the offsets of its header's counts and lengths, and its header size."""
    small = replace(TARGET, n_embd=8, n_head=2, n_head_kv=1, n_ff=8, n_layer=1)
    data = write_model(tmp_path_factory.mktemp("seed") / "seed.gguf", small).read_bytes()
    reader = _Recording(data, Path("seed"))
    gguf._parse(reader, len(data))
    return data, reader.lengths, reader.pos


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz") / "case.gguf"


def damaged(data: bytes, lengths: list[int], header: int):
    """A strategy: the file truncated, with bytes flipped, or with huge counts and lengths."""
    flips = st.lists(st.tuples(st.integers(0, header - 1), st.integers(0, 255)), max_size=6)
    counts = st.lists(st.tuples(st.sampled_from(lengths), st.sampled_from(HUGE)), max_size=3)
    return st.tuples(st.integers(0, len(data)), flips, counts)


def apply(data: bytes, cut: int, flips, counts) -> bytes:
    out = bytearray(data)
    for offset, value in flips:
        out[offset] = value
    for offset, value in counts:
        struct.pack_into("<Q", out, offset, value)
    return bytes(out[:cut]) if cut < len(out) else bytes(out)


def parse_bounded(path: Path) -> Exception | None:
    """read_info on `path`: None when it parses, the GGUFError when not; no other exception and
    no allocation beyond a few times the file's size."""
    tracemalloc.start()
    try:
        gguf.read_info(path)
        problem = None
    except gguf.GGUFError as error:
        problem = error
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < 64 * path.stat().st_size + (4 << 20), peak
    return problem


def test_damaged_headers_are_one_line_errors(seed, scratch):
    data, lengths, header = seed

    @FUZZ
    @given(damaged(data, lengths, header))
    def check(case):
        scratch.write_bytes(apply(data, *case))
        problem = parse_bounded(scratch)
        if problem is not None:
            assert "\n" not in str(problem) and str(scratch) in str(problem)

    check()


def test_damaged_prefixes_read_from_afar_are_one_line_errors(seed):
    data, lengths, header = seed

    @FUZZ
    @given(damaged(data, lengths, header), st.integers(0, 4 * header))
    def check(case, prefix):
        damaged_data = apply(data, *case)
        try:
            gguf.read_prefix(damaged_data[:prefix], "owner/repo/x.gguf", len(damaged_data))
        except gguf.GGUFError as error:
            assert "\n" not in str(error) and "owner/repo/x.gguf" in str(error)

    check()


def test_specgen_check_on_damaged_files_is_one_line(seed, scratch, tiny_models):
    data, lengths, header = seed

    @settings(max_examples=40, deadline=4000, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
    @given(damaged(data, lengths, header))
    def check(case):
        scratch.write_bytes(apply(data, *case))
        code, out, err = run_cli("check", "--target", str(tiny_models["target"]), "--draft", str(scratch))
        if code == 0:
            assert out.startswith("compatible:") and err == ""
        else:
            assert code == 1 and "Traceback" not in err and "internal error" not in err
            assert out.startswith("incompatible:") or len(err.splitlines()) == 1

    check()


def gguf_string(text: str) -> bytes:
    return struct.pack("<Q", len(text)) + text.encode()


def header_of(*entries: bytes, n_tensors: int = 0, tensors: bytes = b"") -> bytes:
    """A GGUF v3 file of hand-made metadata entries (key, type, value) and tensor infos."""
    return b"GGUF" + struct.pack("<IQQ", 3, n_tensors, len(entries)) + b"".join(entries) + tensors + bytes(64)


NESTED = gguf_string("x") + struct.pack("<I", 9) + struct.pack("<IQ", 9, 1) * 5000 + struct.pack("<IQ", 4, 0)
CRAFTED = {
    "alignment 0": header_of(gguf_string("general.alignment") + struct.pack("<II", 4, 0)),
    "alignment text": header_of(gguf_string("general.alignment") + struct.pack("<I", 8) + gguf_string("32")),
    "arrays nested 5000 deep": header_of(NESTED),
    "a huge token count": header_of(gguf_string(gguf.TOKENS) + struct.pack("<IIQ", 9, 8, 2**60)),
    "a huge array": header_of(gguf_string("x") + struct.pack("<IIQ", 9, 0, 2**62)),
    "a huge key count": b"GGUF" + struct.pack("<IQQ", 3, 0, 2**40) + bytes(64),
    "a tensor of 10**9 dimensions": header_of(n_tensors=1, tensors=gguf_string("t") + struct.pack("<I", 10**9)),
}


@pytest.mark.parametrize("name", CRAFTED)
def test_crafted_headers_are_refused_in_one_line(name, scratch):
    scratch.write_bytes(CRAFTED[name])
    problem = parse_bounded(scratch)
    assert isinstance(problem, gguf.GGUFError) and "damaged" in str(problem), problem
    with pytest.raises(gguf.GGUFError, match="damaged"):
        gguf.read_prefix(CRAFTED[name], "owner/repo/x.gguf", len(CRAFTED[name]))


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), pytest.raises(SystemExit) as done:
        cli.main(list(args))
    return done.value.code, out.getvalue(), err.getvalue()


NAMES = ["mine-2b:1b", "x", "a-1b:2m", "llama3-8b:1b"]
KEYS = [
    "repo",
    "file",
    "quant",
    "size_gb",
    "license",
    "gated",
    "description",
    "draft_tokens",
    "default_pair",
    "target",
    "draft",
    "pairs",
    "other",
]
REPOS = ["me/Mine-GGUF", "a/..", "../b", "a/b/c", "a--b/c", "-a/b", "a/b.git", "", "a/" + "b" * 97, "a/b c"]
FILES = ["x.gguf", "sub/x.gguf", "../x.gguf", "/etc/x.gguf", "a\\\\x.gguf", "a//x.gguf", "x.bin", ""]
_strings = st.sampled_from(REPOS + FILES + NAMES) | st.text(max_size=12)
_scalars = (
    st.builds(lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"', _strings)
    | st.integers(-10, 10**20).map(str)
    | st.floats(allow_nan=True).map(repr)
    | st.sampled_from(["true", "false"])
    | st.just("1979-05-27T07:32:00Z")
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3).map(lambda v: "[" + ", ".join(v) + "]")
        | st.lists(st.tuples(st.sampled_from(KEYS), inner), max_size=3).map(
            lambda kv: "{" + ", ".join(f"{k} = {v}" for k, v in kv) + "}"
        )
    ),
    max_leaves=6,
)
_headers = st.builds(
    lambda name, role: f'[pairs."{name}"{role}]',
    st.sampled_from(NAMES),
    st.sampled_from(["", ".target", ".draft", ".other"]),
) | st.sampled_from(["[pairs]", "[x]", "[[pairs]]"])
_lines = (
    st.builds(lambda k, v: f"{k} = {v}", st.sampled_from(KEYS), _values)
    | _headers
    | st.text(max_size=20).filter(lambda t: "\n" not in t and "\r" not in t)
)


@FUZZ
@given(st.lists(_lines, max_size=14))
def test_random_models_toml_gives_file_line_errors(lines):
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "models.toml"
        path.write_text("\n".join(lines), encoding="utf-8")
        try:
            read_file(path)
        except RegistryError as error:
            message = str(error)
            assert "\n" not in message and re.match(rf"{re.escape(str(path))}:\d+: ", message), message
            number = int(message[len(str(path)) + 1 :].split(":", 1)[0])
            value = re.search(r": (?:(repo|file) '|'(\w+)' has the wrong type)", message)
            if value:  # a bad value is reported on the line that holds its key
                assert (value.group(1) or value.group(2)) in lines[number - 1], (message, lines)
