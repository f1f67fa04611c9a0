"""Pulling pairs through the real huggingface_hub client from a loopback hub (tests/hubserver.py).

The fake hub serves the tiny GGUF fixtures under the shipped default pair's real repo and file
names, so `specgen pull`, `pairs`, `run` and their errors run end to end through `cli.main`.
"""

from __future__ import annotations

import errno
import hashlib
import re
import socket
import time
from pathlib import Path

import huggingface_hub  # imported before any test changes HF_* variables (constants are read at import)
import pytest
from hubpairs import DEFAULT, DRAFT, TARGET, TOKEN, one_error_line, specgen
from hubserver import sha256

from specgen.models import hub as hubmod
from specgen.models.paths import hub_cache_dir
from specgen.models.registry import load_registry
from specgen.models.select import resolve_models


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
