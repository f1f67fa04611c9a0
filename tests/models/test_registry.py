"""The models.toml registry: the shipped pairs, the user's overrides, one-line errors, the wheel."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from specgen import cli
from specgen.models.registry import (
    NAME_PATTERN,
    RegistryError,
    UnknownPair,
    load_registry,
    read_file,
    shipped_path,
    user_path,
)

ROOT = Path(__file__).resolve().parent.parent.parent

REQUIRED = {
    "llama3-8b:1b": (
        ("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF", "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf"),
        ("bartowski/Llama-3.2-1B-Instruct-GGUF", "Llama-3.2-1B-Instruct-Q4_K_M.gguf"),
    ),
    "qwen2.5-coder-1.5b:0.5b": (
        ("Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
        ("Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"),
    ),
}
ALSO_REQUIRED = [
    "qwen2.5-7b:0.5b",
    "qwen2.5-14b:0.5b",
    "qwen2.5-32b:0.5b",
    "qwen2.5-coder-7b:0.5b",
    "qwen2.5-coder-32b:0.5b",
]

USER_PAIR = """
default_pair = "mine-2b:1b"

[pairs."mine-2b:1b"]
description = "a pair of my own"
draft_tokens = 3

[pairs."mine-2b:1b".target]
repo = "me/Mine-2B-GGUF"
file = "mine-2b.gguf"

[pairs."mine-2b:1b".draft]
repo = "me/Mine-1B-GGUF"
file = "mine-1b.gguf"

[pairs."llama3-8b:1b"]
draft_tokens = 9

[pairs."llama3-8b:1b".target]
repo = "me/Llama-GGUF"
file = "llama-8b-q8_0.gguf"

[pairs."llama3-8b:1b".draft]
repo = "me/Llama-GGUF"
file = "llama-1b-q8_0.gguf"
"""


def write_user(text: str) -> Path:
    path = user_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_shipped_registry_has_the_promised_pairs():
    registry = load_registry()
    assert len(registry.pairs) >= 10
    assert registry.default == "qwen2.5-coder-1.5b:0.5b"
    for name, (target, draft) in REQUIRED.items():
        pair = registry.get(name)
        assert (pair.target.repo, pair.target.file) == target
        assert (pair.draft.repo, pair.draft.file) == draft
    for name in ALSO_REQUIRED:
        assert name in registry.pairs


def test_every_shipped_entry_is_complete():
    for pair in load_registry().pairs.values():
        assert NAME_PATTERN.match(pair.name) and pair.description
        assert 1 <= pair.draft_tokens <= 32
        for model in (pair.target, pair.draft):
            assert model.quant and model.license and model.size_gb > 0 and model.gated is False
            assert model.quant.lower() in model.file.lower()
        assert pair.draft.size_gb < pair.target.size_gb


def test_top_level_models_toml_is_the_shipped_file():
    assert (ROOT / "models.toml").is_symlink()
    assert (ROOT / "models.toml").resolve() == (ROOT / "specgen" / "models" / "models.toml").resolve()
    assert shipped_path().resolve() == (ROOT / "specgen" / "models" / "models.toml").resolve()


def test_user_file_adds_and_overrides_pairs():
    path = write_user(USER_PAIR)
    registry = load_registry()
    assert registry.default == "mine-2b:1b"
    assert registry.get("mine-2b:1b").draft_tokens == 3
    llama = registry.get("llama3-8b:1b")
    assert llama.target.repo == "me/Llama-GGUF" and llama.draft_tokens == 9 and llama.source == str(path)
    assert registry.get("qwen2.5-7b:0.5b").source == str(shipped_path())


def test_user_override_shows_in_the_cli(capsys):
    write_user(USER_PAIR)
    with pytest.raises(SystemExit) as done:
        cli.main(["pairs", "show", "llama3-8b:1b"])
    out = capsys.readouterr().out
    assert done.value.code == 0
    assert "draft tokens: 9" in out and "me/Llama-GGUF / llama-8b-q8_0.gguf" in out


def test_unknown_pair_suggests_the_closest_names():
    suggestion = r"unknown pair 'qwen2.5-coder-1.5b' \(did you mean 'qwen2.5-coder-1.5b:0.5b'"
    with pytest.raises(UnknownPair, match=suggestion):
        load_registry().get("qwen2.5-coder-1.5b")
    with pytest.raises(UnknownPair, match="did you mean 'llama3-8b:1b'"):
        load_registry().get("lama3-8b:1b")


@pytest.mark.parametrize(
    "text, message",
    [
        ('[pairs."a-1b:1b"\nrepo = 1', r"models\.toml:1: .*fix the TOML syntax"),
        (USER_PAIR.replace('file = "mine-1b.gguf"', ""), r"models\.toml:12: pair 'mine-2b:1b' draft is missing 'file'"),
        (
            USER_PAIR.replace("draft_tokens = 3", 'draft_tokens = "three"'),
            r"models\.toml:6: .*draft_tokens must be a whole",
        ),
        (
            USER_PAIR.replace('repo = "me/Mine-2B-GGUF"', 'repo = "Mine-2B-GGUF"'),
            r"models\.toml:9: .*should be 'owner/name'",
        ),
        (USER_PAIR.replace('file = "mine-2b.gguf"', 'file = "mine-2b.bin"'), r"models\.toml:10: .*not a \.gguf file"),
        (
            USER_PAIR.replace("draft_tokens = 3", "draft_token = 3"),
            r"models\.toml:6: pair 'mine-2b:1b' has an unknown key",
        ),
        (USER_PAIR.replace('"mine-2b:1b"', '"mine"'), r"models\.toml:\d+: pair name 'mine' should look like"),
        (USER_PAIR.replace('default_pair = "mine-2b:1b"', 'default_pair = "nope-2b:1b"'), r"default_pair 'nope-2b:1b'"),
    ],
)
def test_malformed_user_file_names_file_line_and_problem(text, message):
    write_user(text)
    with pytest.raises(RegistryError, match=message):
        load_registry()


BAD_FILES = [
    "../../../elsewhere/x.gguf",
    "/etc/x.gguf",
    "sub/../x.gguf",
    "sub\\x.gguf",
    "sub//x.gguf",
    "./x.gguf",
    "sub/./x.gguf",
    "/x.gguf",
    "C:/x.gguf",
    "C:x.gguf",
]
BAD_REPOS = [
    "a/..",
    "a/.",
    "../b",
    "a/b/c",
    "a//b",
    "/b",
    "a/",
    "a/b--c",
    "a/b..c",
    "-a/b",
    "a/b-",
    "a/.b",
    "a/b.",
    "a/b c",
    "a/b\u00e9",
    "a/b.git",
    "a/" + "b" * 97,
    "a/b?x",
    "a/b%2e",
]


@pytest.mark.parametrize("file", BAD_FILES)
def test_a_file_outside_the_models_folder_is_refused_with_its_line(file):
    write_user(USER_PAIR.replace('file = "mine-2b.gguf"', f'file = "{file}"'.replace("\\", "\\\\")))
    with pytest.raises(RegistryError, match=r"models\.toml:10: pair 'mine-2b:1b' target: file .*models.toml"):
        load_registry()


@pytest.mark.parametrize("repo", BAD_REPOS)
def test_a_repo_the_hub_would_refuse_is_refused_with_its_line(repo):
    write_user(USER_PAIR.replace('repo = "me/Mine-1B-GGUF"', f'repo = "{repo}"'))
    with pytest.raises(RegistryError, match=r"models\.toml:13: pair 'mine-2b:1b' draft: repo .*models.toml"):
        load_registry()


@pytest.mark.parametrize("file", ["x.gguf", "sub/x.gguf", "a/b/Q4_K_M/x-00001-of-00002.gguf", "..x.gguf"])
@pytest.mark.parametrize("repo", ["a/b", "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF", "a_b/c.d-e", "a/" + "b" * 96])
def test_plain_names_and_relative_paths_pass(repo, file):
    from huggingface_hub.utils import validate_repo_id

    validate_repo_id(repo)  # the hub client agrees
    write_user(USER_PAIR.replace('repo = "me/Mine-1B-GGUF"', f'repo = "{repo}"').replace("mine-1b.gguf", file))
    draft = load_registry().get("mine-2b:1b").draft
    assert (draft.repo, draft.file) == (repo, file)


def test_every_bad_repo_is_one_the_hub_client_refuses_too():
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    for repo in BAD_REPOS:
        if "\u00e9" not in repo:  # the client's \w takes any letter; the hub's own names are ASCII
            with pytest.raises(HFValidationError):
                validate_repo_id(repo)


def test_malformed_user_file_is_one_line_from_the_cli(capsys):
    path = write_user("[pairs\n")
    with pytest.raises(SystemExit) as done:
        cli.main(["pairs"])
    captured = capsys.readouterr()
    assert done.value.code == 1 and captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"specgen: error: {path}:1: ")


def test_registry_found_from_an_installed_wheel(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(ROOT / "specgen", source / "specgen", ignore=shutil.ignore_patterns("__pycache__"))
    for extra in ["pyproject.toml", *(p.name for p in ROOT.glob("README*")), *(p.name for p in ROOT.glob("LICENSE*"))]:
        shutil.copy(ROOT / extra, source / extra)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", tmp_path / "dist", source], check=True)
    wheel = next((tmp_path / "dist").glob("specgen_llama-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        assert archive.read("specgen/models/models.toml") == (ROOT / "specgen" / "models" / "models.toml").read_bytes()
    subprocess.run([*pip, "install", "--no-deps", "--target", tmp_path / "site", wheel], check=True)
    probe = (
        "import importlib, pkgutil, specgen\n"
        "for m in pkgutil.walk_packages(specgen.__path__, 'specgen.'): "
        "m.name.endswith('__main__') or importlib.import_module(m.name)\n"
        "from specgen.models import registry as r; print(r.shipped_path()); print(len(r.load_registry().pairs))"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site"), "SPECGEN_CONFIG_DIR": str(tmp_path / "empty")}
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    where, count = done.stdout.split()
    assert Path(where).is_relative_to(tmp_path / "site") and int(count) >= 10


def test_read_file_reports_unreadable_files(tmp_path):
    with pytest.raises(RegistryError, match="cannot read"):
        read_file(tmp_path / "missing.toml")
