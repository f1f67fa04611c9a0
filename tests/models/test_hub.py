"""Pulling pairs through the real huggingface_hub client from a loopback hub (tests/hubserver.py).

The fake hub serves the tiny GGUF fixtures under the shipped default pair's real repo and file
names, so `specgen pull`, `pairs`, `run` and their errors run end to end through `cli.main`.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import re
import socket
import sys
import time
from pathlib import Path

import huggingface_hub  # imported before any test changes HF_* variables (constants are read at import)
import pytest
from hubserver import FakeHub, sha256

from specgen import cli
from specgen.models import checksums
from specgen.models import hub as hubmod
from specgen.models.paths import hub_cache_dir
from specgen.models.registry import load_registry
from specgen.models.select import resolve_models


class _CurrentStderr:
    """huggingface_hub's log handler keeps the stderr of import time; pytest swaps stderr per test."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


import huggingface_hub.utils.logging  # noqa: E402 - creates the handler now, not inside some test

for _handler in logging.getLogger("huggingface_hub").handlers:
    if isinstance(_handler, logging.StreamHandler):
        _handler.setStream(_CurrentStderr())

DEFAULT = "qwen2.5-coder-1.5b:0.5b"
TARGET = ("Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
DRAFT = ("Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
TOKEN = "hf_test_secret_token"

USER_PAIRS = """
[pairs."tinybad-2b:1b"]
description = "a draft whose token 139 was renamed"
[pairs."tinybad-2b:1b".target]
repo = "{target_repo}"
file = "{target_file}"
[pairs."tinybad-2b:1b".draft]
repo = "specgen-test/Tiny-Renamed-GGUF"
file = "tiny-renamed.gguf"

[pairs."tinygated-2b:1b"]
[pairs."tinygated-2b:1b".target]
repo = "specgen-test/Tiny-Gated-GGUF"
file = "tiny-gated.gguf"
gated = true
[pairs."tinygated-2b:1b".draft]
repo = "{draft_repo}"
file = "{draft_file}"

[pairs."tinymissing-2b:1b"]
[pairs."tinymissing-2b:1b".target]
repo = "specgen-test/No-Such-Repo-GGUF"
file = "nothing.gguf"
[pairs."tinymissing-2b:1b".draft]
repo = "{draft_repo}"
file = "{draft_file}"

[pairs."tinytypo-2b:1b"]
[pairs."tinytypo-2b:1b".target]
repo = "{target_repo}"
file = "qwen2.5-coder-1.5b-instruct-q4_k_x.gguf"
[pairs."tinytypo-2b:1b".draft]
repo = "{draft_repo}"
file = "{draft_file}"
"""


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


def _config_dir() -> str:
    import os

    return os.environ["SPECGEN_CONFIG_DIR"]


def specgen(capsys, *args: str) -> tuple[int, str, str]:
    """Run the real entry point; return (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as done:
        cli.main(list(args))
    out, err = capsys.readouterr()
    return done.value.code, out, err


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("specgen: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_first_pull_fetches_both_files_into_the_hf_cache(fake_hub, tiny_models, capsys, tmp_path):
    code, out, err = specgen(capsys, "pull", DEFAULT)
    assert code == 0, err
    target, draft = (Path(line) for line in out.splitlines())
    assert sha256(target.read_bytes()) == sha256(tiny_models["target"].read_bytes())
    assert sha256(draft.read_bytes()) == sha256(tiny_models["draft"].read_bytes())
    assert target.is_relative_to(tmp_path / "hf" / "hub")  # HF_HOME is honoured
    assert f"pair '{DEFAULT}' is not downloaded yet" in err
    assert len(fake_hub.downloads()) == 2


def test_second_pull_is_a_no_op(fake_hub, capsys):
    first = specgen(capsys, "pull", DEFAULT)
    requests = len(fake_hub.state.requests)
    second = specgen(capsys, "pull", DEFAULT)
    assert second[0] == 0 and second[1] == first[1]
    assert len(fake_hub.state.requests) == requests  # not even a HEAD
    assert "not downloaded" not in second[2]


def test_a_transfer_cut_mid_file_resumes_with_a_range_request(fake_hub, tiny_models, capsys, monkeypatch):
    data = tiny_models["target"].read_bytes()
    fake_hub.state.cuts[sha256(data)] = 1  # the first GET sends half the file, then hangs up
    monkeypatch.setattr(huggingface_hub.constants, "DOWNLOAD_CHUNK_SIZE", 32 * 1024)  # fixtures are < 10 MB
    code, out, err = specgen(capsys, "pull", DEFAULT)
    assert code == 0, err
    gets = [r for r in fake_hub.downloads() if r.path.endswith(sha256(data))]
    assert len(gets) == 2 and "range" not in gets[0].headers
    resumed_at = int(re.fullmatch(r"bytes=(\d+)-", gets[1].headers["range"]).group(1))
    assert 0 < resumed_at <= len(data) // 2
    target = Path(out.splitlines()[0])
    assert hashlib.sha256(target.read_bytes()).hexdigest() == sha256(data)


def test_a_transfer_that_keeps_failing_leaves_nothing_in_the_cache(fake_hub, tiny_models, capsys, monkeypatch):
    fake_hub.state.cuts[sha256(tiny_models["target"].read_bytes())] = 100
    monkeypatch.setattr(huggingface_hub.constants, "DOWNLOAD_CHUNK_SIZE", 32 * 1024)
    monkeypatch.setattr(time, "sleep", lambda seconds: None)  # skip the pause between retries
    code, out, err = specgen(capsys, "pull", DEFAULT)
    assert code == 1 and out == "" and "was cut short" in one_error_line(err)
    assert "Retry" not in err and "resume" not in err, err  # huggingface_hub's retries: SPECGEN_DEBUG=1 only
    assert hubmod.cached_path(load_registry().get(DEFAULT).target) is None
    assert [p.name for p in hub_cache_dir().rglob("*") if p.is_file() and p.stat().st_size > 1000] == []


def test_a_wrong_repo_is_a_404_with_the_way_out(user_pairs, capsys):
    code, out, err = specgen(capsys, "pull", "tinymissing-2b:1b")
    assert code == 1 and out == ""
    line = one_error_line(err)
    assert "no repo 'specgen-test/No-Such-Repo-GGUF' (404)" in line and "models.toml" in line


def test_a_wrong_filename_is_a_404_naming_the_file(user_pairs, capsys):
    code, _, err = specgen(capsys, "pull", "tinytypo-2b:1b")
    assert code == 1
    assert "has no file 'qwen2.5-coder-1.5b-instruct-q4_k_x.gguf' (404)" in one_error_line(err)


def test_a_gated_repo_is_a_401_until_hf_token_is_set(user_pairs, fake_hub, capsys, monkeypatch):
    code, _, err = specgen(capsys, "pull", "tinygated-2b:1b")
    line = one_error_line(err)
    assert code == 1 and "gated (401)" in line and "HF_TOKEN" in line and "accept its terms" in line
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    code, out, err = specgen(capsys, "pull", "tinygated-2b:1b")
    assert code == 0, err
    assert len(out.splitlines()) == 2


def test_offline_with_a_warm_cache_needs_no_network(fake_hub, capsys, monkeypatch):
    online = specgen(capsys, "pull", DEFAULT)
    fake_hub.stop()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    requests = len(fake_hub.state.requests)
    code, out, err = specgen(capsys, "pull", DEFAULT)
    assert code == 0 and out == online[1], err
    code, out, _ = specgen(capsys, "pairs", "check", DEFAULT, "--offline")
    assert code == 0 and out.startswith("compatible: same 'llama' vocabulary")
    assert len(fake_hub.state.requests) == requests


def test_offline_with_a_cold_cache_refuses(fake_hub, capsys, monkeypatch):
    code, out, err = specgen(capsys, "run", "--pair", DEFAULT, "--offline", "hello")
    assert code == 1 and out == ""
    assert f"run 'specgen pull {DEFAULT}' while online" in one_error_line(err)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, _, err = specgen(capsys, "pull", DEFAULT)
    assert code == 1 and f"HF_HUB_OFFLINE=1 is set; unset it and run 'specgen pull {DEFAULT}'" in one_error_line(err)
    assert fake_hub.state.requests == []


def test_network_down_says_so(capsys, monkeypatch):
    with socket.socket() as probe:  # a port with nothing listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setattr(time, "sleep", lambda seconds: None)  # skip huggingface_hub's retry back-off
    code, _, err = specgen(capsys, "pull", DEFAULT)
    line = one_error_line(err)
    assert code == 1 and f"cannot reach http://127.0.0.1:{port}" in line and "network down" in line


def test_an_hf_endpoint_that_is_no_address_is_named(capsys, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "notaurl")
    code, _, err = specgen(capsys, "pull", DEFAULT)
    assert code == 1 and "HF_ENDPOINT is 'notaurl', not an http(s) address" in one_error_line(err)


def test_a_full_disk_is_one_line(fake_hub, capsys, monkeypatch):
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", full)
    code, _, err = specgen(capsys, "pull", DEFAULT)
    assert code == 1 and "disk is full" in one_error_line(err) and "HF_HOME" in err


def test_pairs_check_reads_the_headers_from_the_hub_and_downloads_nothing(fake_hub, capsys):
    code, out, err = specgen(capsys, "pairs", "check", DEFAULT)
    assert code == 0 and out.startswith("compatible: same 'llama' vocabulary"), err
    pair = load_registry().get(DEFAULT)
    assert hubmod.cached_path(pair.target) is None and hubmod.cached_path(pair.draft) is None
    assert all("range" in request.headers for request in fake_hub.state.requests if request.method == "GET")
    code, _, err = specgen(capsys, "pairs", "check", DEFAULT, "--offline")
    assert code == 1 and f"--offline is on; run 'specgen pull {DEFAULT}' while online" in one_error_line(err)


def test_a_pair_that_fails_preflight(user_pairs, tiny_models, capsys):
    code, out, err = specgen(capsys, "pairs", "check", "tinybad-2b:1b")
    assert code == 1
    assert out.startswith("incompatible: token 139 differs: '<0x88>' vs '<0x88>_renamed'")
    code, out, err = specgen(capsys, "pull", "tinybad-2b:1b")
    assert code == 1 and "token 139 differs" in one_error_line(err)
    target = str(tiny_models["target"])
    code, out, _ = specgen(capsys, "check", "--target", target, "--draft", str(tiny_models["draft_gpt2"]))
    assert code == 1 and out.startswith("incompatible: vocabulary types differ")
    code, out, _ = specgen(capsys, "check", "--target", target, "--draft", str(tiny_models["draft"]))
    assert code == 0 and out.startswith("compatible:")


def test_pairs_table_shows_what_is_downloaded(fake_hub, capsys):
    specgen(capsys, "pull", DEFAULT)
    requests = len(fake_hub.state.requests)
    code, out, _ = specgen(capsys, "pairs")
    rows = {line.split("\t")[0]: line.split("\t") for line in out.splitlines()[1:]}
    assert code == 0 and out.splitlines()[0].split("\t")[0] == "pair"
    assert rows[DEFAULT + "*"][-1] == "yes"
    assert rows["llama3-8b:1b"][-1] == "no"
    assert len(fake_hub.state.requests) == requests  # the listing asks the cache, not the hub


def test_unknown_pair_suggests_names(capsys):
    code, _, err = specgen(capsys, "pull", "llama3")
    assert code == 2 and "did you mean 'llama3-8b:1b'" in one_error_line(err)


def test_run_uses_the_default_pair_and_its_draft_length(fake_hub, capsys):
    code, out, err = specgen(capsys, "run", "--json", "-n", "4", "def add(a, b):")
    assert code == 0, err
    assert f"pair '{DEFAULT}' is not downloaded yet" in err
    assert f'"draft_tokens": {load_registry().get(DEFAULT).draft_tokens}' in out
    code, out, err = specgen(capsys, "run", "--pair", DEFAULT, "--offline", "--json", "-k", "2", "-n", "4", "x")
    assert code == 0 and '"draft_tokens": 2' in out and "not downloaded" not in err


def test_run_refuses_pair_with_target(capsys, tiny_models):
    code, _, err = specgen(capsys, "run", "--pair", DEFAULT, "--target", str(tiny_models["target"]), "x")
    assert code == 2 and "--pair names both models" in one_error_line(err)


def test_cache_location_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    assert hub_cache_dir() == tmp_path / "home" / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    assert hub_cache_dir() == tmp_path / "cache"


def test_resolve_models_rules(fake_hub, tiny_models):
    from specgen.errors import UsageError

    local = resolve_models(None, tiny_models["target"], tiny_models["draft"], False, False)
    assert local.paths.draft == tiny_models["draft"] and local.draft_tokens == 4
    with pytest.raises(UsageError, match="--draft needs --target"):
        resolve_models(None, None, tiny_models["draft"], False, False)
    with pytest.raises(UsageError, match="no draft model"):
        resolve_models(None, tiny_models["target"], None, False, False)
    target_only = resolve_models(DEFAULT, None, None, True, False)
    assert target_only.paths.draft is None and len(fake_hub.downloads()) == 1  # only the target was pulled


def test_files_in_the_local_models_folder_need_no_download(fake_hub, tiny_models, capsys, monkeypatch, tmp_path):
    folder = tmp_path / "local-models"
    folder.mkdir()
    (folder / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf").write_bytes(tiny_models["target"].read_bytes())
    (folder / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf").write_bytes(tiny_models["draft"].read_bytes())
    monkeypatch.setenv("SPECGEN_MODELS", str(folder))
    code, out, err = specgen(capsys, "run", "--pair", DEFAULT, "--offline", "-n", "4", "-q", "hello")
    assert code == 0 and out, err
    assert fake_hub.state.requests == []


def test_a_pull_that_finds_a_damaged_local_file_prints_no_paths(fake_hub, tiny_models, capsys, monkeypatch, tmp_path):
    folder = tmp_path / "local-models"
    folder.mkdir()
    (folder / TARGET[1]).write_bytes(tiny_models["target"].read_bytes())
    data = tiny_models["draft"].read_bytes()
    (folder / DRAFT[1]).write_bytes(data[: len(data) * 9 // 10])  # its header whole, its tensors cut short
    monkeypatch.setenv("SPECGEN_MODELS", str(folder))
    code, out, err = specgen(capsys, "pull", DEFAULT)
    assert code == 1 and out == ""
    assert "is truncated" in one_error_line(err) and "delete it and download it again" in err


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


@pytest.fixture
def hashes(monkeypatch):
    """The files specgen hashes, in order (the real hashing runs; this only records its calls)."""
    seen, real = [], checksums.file_sha256

    def recorded(path):
        seen.append(Path(path).name)
        return real(path)

    monkeypatch.setattr(checksums, "file_sha256", recorded)
    return seen


def paths_info_requests(fake_hub) -> list:
    return [r for r in fake_hub.state.requests if r.method == "POST" and "/paths-info/" in r.path]


def test_a_download_is_verified_against_the_hubs_sha256_once(fake_hub, tiny_models, capsys, hashes):
    code, out, err = specgen(capsys, "pull", DEFAULT)
    assert code == 0, err
    for role, (_, name) in (("target", TARGET), ("draft", DRAFT)):
        digest = hashlib.sha256(tiny_models[role].read_bytes()).hexdigest()  # the fixture's own bytes
        assert f"specgen: verified {name}: its SHA-256 {digest[:16]}... is the hub's" in err
    assert sorted(hashes) == sorted([TARGET[1], DRAFT[1]])
    assert len(paths_info_requests(fake_hub)) == 2
    requests = len(fake_hub.state.requests)
    code, again, err = specgen(capsys, "pull", DEFAULT)
    assert code == 0 and again == out
    assert f"specgen: verified {TARGET[1]}: its SHA-256" in err and f"specgen: verified {DRAFT[1]}" in err
    assert len(hashes) == 2 and len(fake_hub.state.requests) == requests  # not hashed, nor asked, again


def test_a_file_changed_after_its_check_is_checked_again(fake_hub, capsys, hashes):
    code, out, _ = specgen(capsys, "pull", DEFAULT)
    target = Path(out.splitlines()[0])
    with open(target.resolve(), "ab") as blob:  # damaged on disk after it was verified
        blob.write(b"\0")
    code, out, err = specgen(capsys, "pull", DEFAULT)
    assert code == 1 and out == "" and "is damaged" in one_error_line(err)
    assert hashes.count(TARGET[1]) == 2 and not target.exists()


def test_a_download_unlike_the_hubs_sha256_is_refused_and_removed(fake_hub, tiny_models, capsys):
    claimed = hashlib.sha256(b"the bytes the uploader meant").hexdigest()
    fake_hub.state.claimed[TARGET] = claimed
    served = hashlib.sha256(tiny_models["target"].read_bytes()).hexdigest()
    for command in (("pull", DEFAULT), ("run", "--pair", DEFAULT, "-n", "4", "hello")):
        code, out, err = specgen(capsys, *command)
        line = one_error_line(err)
        assert code == 1 and out == ""
        assert f"{TARGET[0]}/{TARGET[1]} is damaged" in line and "run the command again" in line
        assert f"its SHA-256 is {served[:16]}..., the hub's is {claimed[:16]}..." in line
        assert hubmod.cached_path(load_registry().get(DEFAULT).target) is None
        left = [p for p in hub_cache_dir().rglob("*") if p.is_file() or p.is_symlink()]
        assert [p for p in left if p.name in (claimed, TARGET[1]) or p.stat().st_size > 1000] == []
        assert not checksums.records_folder().exists() or list(checksums.records_folder().iterdir()) == []
    fake_hub.state.claimed.clear()  # the hub fixed: the next pull downloads it anew
    code, out, err = specgen(capsys, "pull", DEFAULT)
    assert code == 0 and f"verified {TARGET[1]}: its SHA-256 {served[:16]}" in err


def test_a_file_kept_in_git_is_kept_and_reported_not_verifiable(fake_hub, tiny_models, capsys, hashes):
    fake_hub.state.in_git.add(DRAFT)  # no LFS: the hub gives its git blob id, no SHA-256
    code, out, err = specgen(capsys, "pull", DEFAULT)
    assert code == 0, err
    assert f"specgen: {DRAFT[1]} is not verifiable: the hub gives no SHA-256 for it" in err
    assert Path(out.splitlines()[1]).read_bytes() == tiny_models["draft"].read_bytes()
    assert hashes == [TARGET[1]]  # nothing to compare the draft with, so it is not hashed
    requests = len(fake_hub.state.requests)
    code, _, err = specgen(capsys, "pull", DEFAULT)
    assert code == 0 and f"{DRAFT[1]} is not verifiable" in err and len(fake_hub.state.requests) == requests


def test_files_cached_by_another_tool_are_verified_by_the_next_pull(fake_hub, capsys, hashes, monkeypatch):
    for repo, name in (TARGET, DRAFT):
        huggingface_hub.hf_hub_download(repo, name, cache_dir=hub_cache_dir(), endpoint=fake_hub.url)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, _, err = specgen(capsys, "pull", DEFAULT)
    assert code == 0 and f"{TARGET[1]} is not verified: offline mode is on" in err and hashes == []
    monkeypatch.delenv("HF_HUB_OFFLINE")
    code, _, err = specgen(capsys, "pull", DEFAULT)
    assert code == 0 and f"verified {TARGET[1]}" in err and f"verified {DRAFT[1]}" in err
    assert len(hashes) == 2 and fake_hub.downloads()[2:] == []  # checked in place, not downloaded again


def test_files_in_the_local_models_folder_are_not_checked(fake_hub, tiny_models, capsys, monkeypatch, tmp_path):
    folder = tmp_path / "local-models"
    folder.mkdir()
    for role, (_, name) in (("target", TARGET), ("draft", DRAFT)):
        (folder / name).write_bytes(tiny_models[role].read_bytes())
    monkeypatch.setenv("SPECGEN_MODELS", str(folder))
    code, _, err = specgen(capsys, "pull", DEFAULT)
    assert code == 0 and f"{TARGET[1]} is not verified: found in {folder}, not downloaded" in err
    assert fake_hub.state.requests == []


def test_a_download_whose_hub_lookup_fails_says_not_verified_in_one_line(fake_hub, capsys):
    fake_hub.state.paths_info_down = True  # the transfer works, the hub's SHA-256 cannot be had
    code, out, err = specgen(capsys, "run", "--pair", DEFAULT, "--json", "-n", "4", "hello")
    assert code == 0, err
    lines = [line for line in err.splitlines() if "not verified" in line]
    assert len(lines) == 2 and all(line.startswith("specgen: ") for line in lines)
    assert any(f"{TARGET[0]}/{TARGET[1]} was downloaded but is not verified" in line for line in lines)
    assert "Traceback" not in err and '"text"' in out
