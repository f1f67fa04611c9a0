"""`specgen export PAIR --to llama-server|vllm`: the command each engine documents, with the pair's
files, the draft length, and the copying method where a bench found copying fastest."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from specgen.models.registry import load_registry

SPECGEN = [sys.executable, "-m", "specgen"]
# Every option `llama-server --help` documents that export may emit, checked by hand against the
# llama-server built from the llama.cpp that llama-cpp-python 0.3.36 vendors (tools/server/README.md
# says the same): -m, -hf, -hff, -c, -ngl, -md (--spec-draft-model), -hfd (--spec-draft-hf),
# -ngld (--spec-draft-ngl), --spec-type, --spec-draft-n-max, --spec-draft-n-min. This version has
# removed --draft-max and --draft-min ("use --spec-draft-n-max").
LLAMA_SERVER_FLAGS = {
    "-m",
    "-hf",
    "-hff",
    "-c",
    "-ngl",
    "-md",
    "-hfd",
    "-ngld",
    "--spec-type",
    "--spec-draft-n-max",
    "--spec-draft-n-min",
}
LLAMA_SPEC_TYPES = {"draft-simple", "ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache"}
VLLM_METHODS = {"draft_model", "ngram", "suffix"}
PAIR = "qwen2.5-coder-7b:0.5b"


def export(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*SPECGEN, "export", *args], capture_output=True, text=True, timeout=60)


def options(argv: list[str]) -> dict[str, str]:
    """'-x value' pairs of a command line (every option export emits takes a value)."""
    start = 3 if argv[0] == "vllm" else 1  # after `vllm serve MODEL`, or `llama-server`
    return dict(zip(argv[start::2], argv[start + 1 :: 2], strict=True))


def test_llama_server_gets_the_pairs_hub_files_draft_length_and_documented_flags_only():
    done = export(PAIR, "--to", "llama-server")
    assert done.returncode == 0, done.stderr
    argv = shlex.split(done.stdout)
    pair = load_registry().get(PAIR)
    assert argv[0] == "llama-server" and set(argv[1::2]) <= LLAMA_SERVER_FLAGS
    assert options(argv) == {
        "-hf": pair.target.repo,
        "-hff": pair.target.file,
        "-hfd": pair.draft.repo,
        "-md": pair.draft.file,
        "-c": "4096",
        "-ngl": "99",
        "-ngld": "99",
        "--spec-type": "draft-simple",
        "--spec-draft-n-max": str(pair.draft_tokens),
        "--spec-draft-n-min": "0",
    }
    assert f"draft, K={pair.draft_tokens}" in done.stderr


def test_llama_server_local_uses_the_downloaded_files(tiny_models):
    pair = load_registry().get(PAIR)
    folder = Path(os.environ["SPECGEN_MODELS"])
    folder.mkdir(parents=True, exist_ok=True)
    assert export(PAIR, "--to", "llama-server", "--local").returncode == 2  # not downloaded yet: one line
    shutil.copy(tiny_models["target"], folder / pair.target.file)
    shutil.copy(tiny_models["draft"], folder / pair.draft.file)
    argv = shlex.split(export(PAIR, "--to", "llama-server", "--local", "-k", "7", "--ctx", "8192").stdout)
    found = options(argv)
    assert found["-m"] == str(folder / pair.target.file) and found["-md"] == str(folder / pair.draft.file)
    assert "-hf" not in found and "-hfd" not in found
    assert found["--spec-draft-n-max"] == "7" and found["-c"] == "8192"


def test_copying_exports_a_draft_free_method_in_each_engine():
    server = shlex.split(export(PAIR, "--to", "llama-server", "--method", "ngram").stdout)
    assert options(server)["--spec-type"] in LLAMA_SPEC_TYPES - {"draft-simple"}
    assert "-md" not in server and "-hfd" not in server
    vllm = json.loads(export(PAIR, "--to", "vllm", "--method", "ngram", "-k", "8", "--json").stdout)
    assert vllm["speculative_config"] == {"method": "ngram", "num_speculative_tokens": 8, "prompt_lookup_max": 4}
    refused = export(PAIR, "--to", "llama-server", "--method", "suffix")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "no suffix decoding" in refused.stderr


def test_vllm_serves_the_original_models_with_a_speculative_config():
    done = export(PAIR, "--to", "vllm", "-k", "5")
    assert done.returncode == 0, done.stderr
    argv = shlex.split(done.stdout)
    pair = load_registry().get(PAIR)
    assert argv[:3] == ["vllm", "serve", pair.target.base] and pair.target.base == "Qwen/Qwen2.5-Coder-7B-Instruct"
    config = json.loads(options(argv)["--speculative-config"])
    assert config == {"method": "draft_model", "model": pair.draft.base, "num_speculative_tokens": 5}
    assert config["method"] in VLLM_METHODS and options(argv)["--max-model-len"] == "4096"
    suffix = json.loads(export(PAIR, "--to", "vllm", "--method", "suffix", "--json").stdout)
    assert suffix["speculative_config"]["method"] == "suffix" and "arctic-inference" in suffix["notes"][0]


def test_a_pair_without_its_original_model_exports_the_gguf_with_a_note():
    user = Path(os.environ["SPECGEN_CONFIG_DIR"]) / "models.toml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(
        '[pairs."mine-2b:1b".target]\nrepo = "me/Mine-2B-GGUF"\nfile = "mine-2b-Q4_K_M.gguf"\n'
        'quant = "Q4_K_M"\n[pairs."mine-2b:1b".draft]\nrepo = "me/Mine-1B-GGUF"\nfile = "mine-1b.gguf"\n'
    )
    done = export("mine-2b:1b", "--to", "vllm")
    assert shlex.split(done.stdout)[2] == "me/Mine-2B-GGUF:Q4_K_M"
    assert "vllm-gguf-plugin" in done.stderr and "--tokenizer" in done.stderr


def bench_document(best: str, configs: list[dict], runs: list[dict], outcome: str = "pays") -> dict:
    """The parts of a `specgen bench --json` document (docs/bench-json.md) that export reads."""
    return {
        "schema": "specgen-bench/1",
        "verdict": {"best": best, "outcome": outcome},
        "configs": configs,
        "runs": runs,
    }


@pytest.mark.parametrize(
    "best, drafter, k, adaptive, lookup_rounds, method, exported_k",
    [
        ("lookup-k8", "lookup", 8, False, 0, "ngram", 8),  # prompt lookup won: copying
        ("draft-k3", "model", 3, False, 0, "draft", 3),
        ("draft-auto", "model", 6, True, 30, "ngram", 6),  # auto copied in 30 of 40 rounds
        ("draft-auto", "model", 6, True, 5, "draft", 6),
    ],
)
def test_bench_results_choose_the_method_and_length(
    tmp_path, best, drafter, k, adaptive, lookup_rounds, method, exported_k
):
    configs = [
        {"name": "target", "drafter": "none", "k": 0, "adaptive": False},
        {"name": best, "drafter": drafter, "k": k, "adaptive": adaptive},
    ]
    runs = [{"config": best, "rounds": 20, "lookup_rounds": lookup_rounds // 2, "drafted": 10}] * 2
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(bench_document(best, configs, runs)))
    done = export(PAIR, "--to", "vllm", "--bench", str(path), "--json")
    assert done.returncode == 0, done.stderr
    config = json.loads(done.stdout)["speculative_config"]
    assert config["method"] == {"ngram": "ngram", "draft": "draft_model"}[method]
    assert config["num_speculative_tokens"] == exported_k
    assert f"fastest configuration was {best}" in done.stderr


def test_a_bench_of_other_model_files_is_refused(tmp_path):
    configs = [
        {"name": "target", "drafter": "none", "k": 0, "adaptive": False},
        {"name": "draft-k3", "drafter": "model", "k": 3, "adaptive": False},
    ]
    document = bench_document("draft-k3", configs, [{"config": "draft-k3", "rounds": 20, "drafted": 10}])
    pair = load_registry().get(PAIR)
    for target, refused in (("/models/other-8b.gguf", True), (f"/somewhere/{pair.target.file}", False)):
        settings = {"target": target, "draft": f"/somewhere/{pair.draft.file}"}
        (tmp_path / "bench.json").write_text(json.dumps({**document, "settings": settings}))
        done = export(PAIR, "--to", "vllm", "--bench", str(tmp_path / "bench.json"))
        assert (done.returncode == 2) == refused, done.stderr
        assert ("--bench measured other-8b.gguf and" in done.stderr) == refused


def test_unreadable_bench_and_unknown_engine_are_one_line(tmp_path):
    (tmp_path / "bad.json").write_text('{"results": []}')
    for args in (
        ["--to", "tgi"],
        ["--to", "vllm", "--bench", str(tmp_path / "bad.json")],
        ["--to", "vllm", "--bench", str(tmp_path / "missing.json")],
        ["--to", "vllm", "--method", "eagle"],
    ):
        done = export(PAIR, *args)
        assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1, args
        assert done.stderr.startswith("specgen: error: ")
