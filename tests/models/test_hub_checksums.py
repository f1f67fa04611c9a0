"""Downloads verified against the hub's sha256: once per file, again after a change, refused and
removed when unlike, reported when not verifiable (git files, failed lookups, local files)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import huggingface_hub  # imported before any test changes HF_* variables (constants are read at import)
import pytest
from hubpairs import DEFAULT, DRAFT, TARGET, one_error_line, specgen

from specgen.models import checksums
from specgen.models import hub as hubmod
from specgen.models.paths import hub_cache_dir
from specgen.models.registry import load_registry


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
