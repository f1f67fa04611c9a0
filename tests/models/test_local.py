"""`specgen pairs --local`: pairs among the GGUF files already on disk, laid out as the Hugging Face
cache, LM Studio and Ollama lay them out, with broken files among them; and the drafts that
`specgen run --target X` suggests when no draft is given."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from tinymodels import DRAFT, write_model

from specgen.models import local as discover

SPECGEN = [sys.executable, "-m", "specgen"]


def specgen(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*SPECGEN, *args], capture_output=True, text=True, timeout=120, env=dict(os.environ))


@pytest.fixture(scope="module")
def variants(tmp_path_factory, tiny_models) -> dict[str, Path]:
    """Drafts smaller than the tiny target (one layer fewer): one with its vocabulary, one with 64
    tokens more (still compatible), one with a renamed token and one of another tokenizer type."""
    folder = tmp_path_factory.mktemp("variants")
    small = replace(DRAFT, n_layer=1)
    specs = {
        "small": small,
        "padded": replace(small, extra_tokens=64),
        "renamed": replace(small, rename_token=139),
        "gpt2": replace(small, vocab_type="gpt2"),
    }
    built = {name: write_model(folder / f"tiny-{name}.gguf", spec) for name, spec in specs.items()}
    return {"target": tiny_models["target"], **built}


def hf_cache_file(hub: Path, repo: str, file: str, source: Path) -> Path:
    """A file as huggingface_hub stores it: a blob, and a snapshot symlink to it (twice, two revisions)."""
    folder = hub / f"models--{repo.replace('/', '--')}"
    data = source.read_bytes()
    blob = folder / "blobs" / hashlib.sha256(data).hexdigest()
    blob.parent.mkdir(parents=True, exist_ok=True)
    blob.write_bytes(data)
    links = []
    for revision in ("a" * 40, "b" * 40):
        link = folder / "snapshots" / revision / file
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
        links.append(link)
    return links[0]


def ollama_model(store: Path, name: str, source: Path | None) -> Path:
    """A manifest under manifests/registry.ollama.ai/library/NAME/TAG naming a blob (absent if no source)."""
    data = source.read_bytes() if source else b"never downloaded"
    digest = hashlib.sha256(data).hexdigest()
    blob = store / "blobs" / f"sha256-{digest}"
    blob.parent.mkdir(parents=True, exist_ok=True)
    if source:
        blob.write_bytes(data)
    model, tag = name.split(":")
    manifest = store / "manifests" / "registry.ollama.ai" / "library" / model / tag
    manifest.parent.mkdir(parents=True, exist_ok=True)
    layers = [
        {"mediaType": "application/vnd.ollama.image.license", "digest": "sha256:" + "0" * 64, "size": 10},
        {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}", "size": len(data)},
    ]
    manifest.write_text(json.dumps({"schemaVersion": 2, "layers": layers}))
    return blob


@pytest.fixture
def disk(tmp_path, monkeypatch, variants) -> dict:
    """A home folder with LM Studio and Ollama, an HF cache, $SPECGEN_MODELS with broken files, a --dir."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("OLLAMA_MODELS", raising=False)
    lmstudio = home / ".lmstudio" / "models" / "lmstudio-community" / "Tiny-GGUF"
    lmstudio.mkdir(parents=True)
    shutil.copy(variants["target"], lmstudio / "tiny-target.gguf")
    hub = Path(os.environ["HF_HOME"]) / "hub"
    small = hf_cache_file(hub, "specgen-test/Tiny-Draft-GGUF", "tiny-draft.gguf", variants["small"])
    store = home / ".ollama" / "models"
    padded = ollama_model(store, "tiny-padded:1b", variants["padded"])
    ghost = ollama_model(store, "ghost:latest", None)
    own = Path(os.environ["SPECGEN_MODELS"])
    own.mkdir(parents=True)
    (own / "cut.gguf").write_bytes(variants["target"].read_bytes()[:200_000])
    (own / "notes.gguf").write_text("not a model\n")
    (own / "folder.gguf").mkdir()
    (own / "dangling.gguf").symlink_to(own / "gone.gguf")
    (own / "README.md").write_text("ignored: not named .gguf\n")
    locked = own / "locked.gguf"
    shutil.copy(variants["renamed"], locked)
    locked.chmod(0)
    extra = tmp_path / "extra"
    (extra / "deeper").mkdir(parents=True)
    shutil.copy(variants["gpt2"], extra / "deeper" / "tiny-gpt2.gguf")
    return {
        "target": lmstudio / "tiny-target.gguf",
        "small": small,
        "padded": padded,
        "ghost": ghost,
        "locked": locked,
        "extra": extra,
        "own": own,
    }


def readable(path: Path) -> bool:
    return os.access(path, os.R_OK)  # as root, mode 000 does not stop reading


def test_pairs_local_lists_every_compatible_pair_largest_target_first(disk):
    result = specgen("pairs", "--local", "--dir", str(disk["extra"]))
    assert result.returncode == 0, result.stderr
    header, *rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert header == ["target", "draft", "target size", "draft size", "ratio", "target path", "draft path"]
    pairs = [(row[0], row[1]) for row in rows]
    assert pairs == [
        ("lmstudio-community/Tiny-GGUF/tiny-target.gguf", "specgen-test/Tiny-Draft-GGUF/tiny-draft.gguf"),
        ("lmstudio-community/Tiny-GGUF/tiny-target.gguf", "tiny-padded:1b"),
        ("tiny-padded:1b", "specgen-test/Tiny-Draft-GGUF/tiny-draft.gguf"),
    ]
    first = rows[0]
    assert first[5] == str(disk["target"]) and first[6] == str(disk["small"])
    ratio = disk["target"].stat().st_size / disk["small"].stat().st_size
    assert first[4] == f"{ratio:.1f}x"
    assert rows[1][6] == str(disk["padded"])  # an Ollama blob, found through its manifest


def test_broken_files_are_skipped_and_counted_on_stderr(disk):
    result = specgen("pairs", "--local", "--dir", str(disk["extra"]))
    assert result.returncode == 0 and "Traceback" not in result.stderr
    broken = ["cut.gguf", "notes.gguf", "folder.gguf", "dangling.gguf", disk["ghost"].name]
    broken += [] if readable(disk["locked"]) else ["locked.gguf"]
    models = 4 + readable(disk["locked"])  # target, small, padded, gpt2 (+ the locked one, when readable)
    assert f"{models} models in 5 folders, 3 pairs" in result.stderr
    assert f"skipped {len(broken)} files that are not usable GGUF models" in result.stderr
    for name in broken:
        assert name in result.stderr and name not in result.stdout
    assert "truncated" in result.stderr and "not a GGUF model file" in result.stderr


def test_scan_reads_each_file_once_and_reports_reasons(disk):
    found = discover.scan([disk["extra"]])
    names = sorted(model.name for model in found.models)
    expected = [
        "deeper/tiny-gpt2.gguf",
        "lmstudio-community/Tiny-GGUF/tiny-target.gguf",
        "specgen-test/Tiny-Draft-GGUF/tiny-draft.gguf",
        "tiny-padded:1b",
    ]
    if readable(disk["locked"]):
        expected.append("locked.gguf")
    assert names == sorted(expected)  # two HF revisions, one blob: listed once
    reasons = {skipped.path.name: skipped.reason for skipped in found.skipped}
    assert reasons["folder.gguf"] == "a directory, not a file"
    assert "truncated" in reasons["cut.gguf"] and "broken" in reasons["dangling.gguf"]
    sources = {model.name: model.source for model in found.models}
    assert sources["tiny-padded:1b"] == "Ollama" and sources["deeper/tiny-gpt2.gguf"] == "--dir"
    assert sources["lmstudio-community/Tiny-GGUF/tiny-target.gguf"] == "LM Studio"


def test_incompatible_vocabularies_are_never_paired(disk, variants):
    clean = disk["own"].parent / "clean"
    clean.mkdir()
    for name in ("target", "renamed", "gpt2", "small"):
        shutil.copy(variants[name], clean / f"{name}.gguf")
    found = discover.scan([clean])
    paired = {
        (pair.target.path.name, pair.draft.path.name)
        for pair in found.pairs
        if pair.target.path.parent == pair.draft.path.parent == clean
    }
    assert paired == {("target.gguf", "small.gguf")}  # renamed and gpt2 are smaller too, but do not fit


def test_listed_files_run_by_path_even_an_ollama_blob(disk):
    result = specgen(
        "run",
        "--target",
        str(disk["target"]),
        "--draft",
        str(disk["padded"]),
        "-n",
        "6",
        "--raw",
        "-q",
        "def add(a, b):",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout and result.stderr == ""


def test_run_without_a_draft_names_the_compatible_drafts_on_disk(disk):
    result = specgen("run", "--target", str(disk["target"]), "hello")
    assert result.returncode == 2 and result.stdout == ""
    line = result.stderr.strip()
    assert len(line.splitlines()) == 1 and line.startswith("specgen: error: no draft model")
    assert str(disk["small"]) in line and str(disk["padded"]) in line and "--no-draft" in line
    assert "locked" not in line and "gpt2" not in line


def test_run_without_a_draft_when_none_fits(disk, variants, tmp_path):
    lonely = tmp_path / "lonely.gguf"
    shutil.copy(variants["gpt2"], lonely)
    result = specgen("run", "--target", str(lonely), "hello")
    assert result.returncode == 2 and "no compatible draft found on disk" in result.stderr
    assert "specgen pairs --local" in result.stderr


def test_an_unknown_dir_is_one_line(tmp_path):
    result = specgen("pairs", "--local", "--dir", str(tmp_path / "nowhere"))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("specgen: error: ") and len(result.stderr.strip().splitlines()) == 1


def test_hundreds_of_files_scan_fast(disk, variants, tmp_path, capsys):
    many = tmp_path / "many"
    many.mkdir()
    for index in range(300):  # hard links: 300 files to read, little disk
        os.link(variants["renamed" if index % 2 else "gpt2"], many / f"m{index:03d}.gguf")
    started = time.perf_counter()
    found = discover.scan([many])
    elapsed = time.perf_counter() - started
    with capsys.disabled():
        print(f"\n[scan of {len(found.models) + len(found.skipped)} files: {elapsed * 1000:.0f} ms]")
    assert len(found.models) >= 303 and len(found.pairs) == 3


def test_on_a_terminal_each_pair_is_a_ready_to_run_command(disk):
    pexpect = pytest.importorskip("pexpect")
    child = pexpect.spawn(
        SPECGEN[0],
        [*SPECGEN[1:], "pairs", "--local"],
        env=dict(os.environ),
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 100),
    )
    output = child.read()
    child.close()
    assert child.exitstatus == 0, output
    lines = [line.strip() for line in output.splitlines()]
    assert lines[0].startswith("lmstudio-community/Tiny-GGUF/tiny-target.gguf (")
    assert lines[1] == f"specgen run --target {disk['target']} --draft {disk['small']}"
    assert "3 pairs" in output
