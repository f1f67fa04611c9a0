"""The hub client's edges through `cli.main`: without httpx2 (requests), header reads of a pair before
any download (CDNs that ignore ranges, files that are not GGUF), and the client's other errors."""

from __future__ import annotations

import errno
import sys
from pathlib import Path

import huggingface_hub  # imported before any test changes HF_* variables (constants are read at import)
import pytest
from hubpairs import DEFAULT, DRAFT, TARGET, one_error_line, specgen
from hubserver import sha256

from specgen.models import hub as hubmod
from specgen.models.registry import load_registry


@pytest.fixture
def without_httpx2(monkeypatch):
    """As under a huggingface_hub release that does not use httpx2 (older ones use requests)."""
    import huggingface_hub.errors  # this release's own modules load first, as in use
    import huggingface_hub.file_download  # noqa: F401

    monkeypatch.setitem(sys.modules, "httpx2", None)  # `import httpx2` now raises ImportError


def test_a_full_disk_needs_no_http_library(fake_hub, capsys, monkeypatch, without_httpx2):
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", full)
    code, _, err = specgen(capsys, "pull", DEFAULT)
    assert code == 1 and "disk is full" in one_error_line(err) and "internal error" not in err


def test_a_requests_transfer_error_is_one_line_without_httpx2(fake_hub, capsys, monkeypatch, without_httpx2):
    requests = pytest.importorskip("requests")

    def cut(*args, **kwargs):
        raise requests.exceptions.ChunkedEncodingError("Connection broken: IncompleteRead(1024 bytes read)")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", cut)
    code, _, err = specgen(capsys, "pull", DEFAULT)
    assert code == 1 and "was cut short (ChunkedEncodingError)" in one_error_line(err)


@pytest.fixture
def small_header_reads(monkeypatch):
    """Header reads start at 4 KiB: the fixtures' headers take a few of them, their files ~70."""
    monkeypatch.setattr(hubmod, "HEADER_FIRST", 4096)


def test_a_mismatched_pair_fails_from_its_headers_before_any_download(
    user_pairs, fake_hub, tiny_models, capsys, small_header_reads
):
    for command in (("pull", "tinybad-2b:1b"), ("run", "--pair", "tinybad-2b:1b", "hello")):
        code, out, err = specgen(capsys, *command)
        line = one_error_line(err)
        assert code == 1 and out == "" and "token 139 differs" in line and "nothing downloaded" in line
    assert fake_hub.downloads() == [] and fake_hub.header_reads()
    for role in ("target", "draft_renamed"):
        size = tiny_models[role].stat().st_size
        assert 0 < fake_hub.state.served[sha256(tiny_models[role].read_bytes())] < size // 8
    assert hubmod.cached_path(load_registry().get("tinybad-2b:1b").draft) is None


def test_a_matched_pair_is_checked_then_downloaded(fake_hub, tiny_models, capsys, small_header_reads):
    code, out, err = specgen(capsys, "pull", DEFAULT)
    assert code == 0, err
    cdn = [r for r in fake_hub.state.requests if r.origin == "cdn" and r.method == "GET"]
    reads, downloads = fake_hub.header_reads(), fake_hub.downloads()
    assert len(downloads) == 2 and reads and cdn.index(downloads[0]) > cdn.index(reads[-1])
    assert sha256(Path(out.splitlines()[1]).read_bytes()) == sha256(tiny_models["draft"].read_bytes())


def test_a_header_is_read_from_a_cdn_that_ignores_ranges(fake_hub, tiny_models, small_header_reads):
    fake_hub.state.ranges = False
    info = hubmod.remote_header(load_registry().get(DEFAULT).draft)
    assert info.tokens and info.vocab_size == len(info.tokens)
    assert info.file_size == tiny_models["draft"].stat().st_size


def test_a_header_read_of_a_file_that_is_not_gguf_is_one_line(fake_hub, tmp_path, capsys):
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"PK\x03\x04" + bytes(5000))
    fake_hub.add(DRAFT[0], DRAFT[1], junk)
    code, _, err = specgen(capsys, "pull", DEFAULT)
    assert code == 1 and "is not a GGUF model file" in one_error_line(err)
    assert fake_hub.downloads() == []


def test_a_repo_id_the_client_refuses_is_one_line(fake_hub):
    from specgen.models.registry import ModelFile

    for call in (hubmod.cached_path, hubmod.fetch, hubmod.remote_header):
        with pytest.raises(hubmod.HubError, match=r"^the hub client refuses a/\.\./x\.gguf: .*models\.toml$"):
            call(ModelFile("a/..", "x.gguf"))


def test_any_other_hub_client_error_is_one_line(fake_hub, capsys, monkeypatch):
    def xet_fails(*args, **kwargs):
        raise huggingface_hub.errors.XetDownloadError("xet storage answered garbage\nsecond line")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", xet_fails)
    code, out, err = specgen(capsys, "pull", DEFAULT)
    line = one_error_line(err)
    assert code == 1 and out == "" and "internal error" not in line and "second line" not in err
    assert f"failed on {TARGET[0]}/{TARGET[1]} (XetDownloadError: xet storage answered garbage)" in line
