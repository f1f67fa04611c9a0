"""`specgen doctor` on this machine: every fact it reports checked against the machine itself."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from specgen import __version__
from specgen.doctor import human_size
from specgen.models.registry import load_registry

SPECGEN = [sys.executable, "-m", "specgen"]


def doctor(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [*SPECGEN, "doctor", *args], capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})}
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done


def lines_of(text: str) -> dict[str, str]:
    """'label   value' lines -> {label: value} (labels are separated from values by 2+ spaces)."""
    rows = {}
    for line in text.splitlines():
        label, _, value = line.partition("  ")
        rows[label.strip()] = value.strip()
    return rows


@pytest.fixture
def downloaded_default_pair(tiny_models) -> str:
    """The default pair's two files, put in $SPECGEN_MODELS under the registry's file names."""
    registry = load_registry()
    pair = registry.get(registry.default)
    folder = Path(os.environ["SPECGEN_MODELS"])
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(tiny_models["target"], folder / pair.target.file)
    shutil.copy(tiny_models["draft"], folder / pair.draft.file)
    return pair.name


def test_text_report_names_versions_cpu_threads_folders_and_pairs(downloaded_default_pair):
    rows = lines_of(doctor().stdout)
    assert rows["specgen"] == __version__
    assert rows["llama-cpp-python"] == version("llama-cpp-python")
    assert rows["llama.cpp"]
    assert rows["backend"].split(";")[0] in {"CPU", "CUDA", "Metal", "Vulkan", "HIP", "SYCL", "GPU"}
    expected_threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert rows["threads"].startswith(f"{expected_threads} of {os.cpu_count()} cores")
    models = Path(os.environ["SPECGEN_MODELS"])
    size = sum(p.stat().st_size for p in models.iterdir())
    assert rows["models: $SPECGEN_MODELS"].startswith(f"{models}  ")
    assert rows["models: $SPECGEN_MODELS"].endswith(", 2 GGUF file(s)")
    assert f"  {human_size(size)}, " in rows["models: $SPECGEN_MODELS"]
    assert rows["models: Hugging Face cache"].endswith("(not there)")
    assert rows["pairs downloaded"].split("; ")[0] == downloaded_default_pair  # others share its draft
    assert rows["registry (user)"].endswith("models.toml (none)")
    assert rows["repacked kernels"].startswith(("on", "off"))
    assert rows["rebuild"]
    import llama_cpp.llama_cpp

    rpc = hasattr(llama_cpp.llama_cpp._lib, "ggml_backend_rpc_start_server")  # the library's own export
    assert rows["RPC"].startswith("built in") == rpc
    if not rpc:  # the way to get it: the rebuild command, which keeps -DGGML_RPC=ON
        assert "-DGGML_RPC=ON" in rows["RPC"] and "--no-cache-dir" in rows["RPC"]


@pytest.mark.skipif(not Path("/proc/cpuinfo").is_file(), reason="reads /proc/cpuinfo")
def test_cpu_features_come_from_proc_cpuinfo():
    flags = set()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith(("flags", "Features")):
            flags = set(line.partition(":")[2].split())
            break
    report = json.loads(doctor("--json").stdout)
    shown = set(report["cpu"]["features"])
    for flag, name in {
        "avx2": "AVX2",
        "fma": "FMA",
        "avx512f": "AVX512F",
        "amx_tile": "AMX-TILE",
        "asimd": "NEON",
        "sve": "SVE",
    }.items():
        assert (name in shown) == (flag in flags), name


def test_json_report_is_one_object_with_every_section(downloaded_default_pair, tmp_path):
    user = Path(os.environ["SPECGEN_CONFIG_DIR"]) / "models.toml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text("")
    report = json.loads(doctor("--json").stdout)
    assert set(report) == {
        "build",
        "cpu",
        "repacked_kernels",
        "folders",
        "registry",
        "pairs",
        "rebuild",
        "lookup_memory_tokens",
    }
    assert report["lookup_memory_tokens"] == 262_144  # the bound README and doctor state
    build = report["build"]
    assert build["specgen"] == __version__ and build["llama_cpp_python"] == version("llama-cpp-python")
    assert build["gpu_offload_works"] == (build["gpu_offload_built"] and bool(build["gpu_devices"]))
    if not build["gpu_offload_built"]:
        assert build["backend"] == "CPU"
    from specgen.llama.library import gpu_backends

    assert build["gpu_offload_built"] == bool(gpu_backends())  # RPC alone is no GPU (llama.cpp reports it as one)
    assert report["registry"][1] == {"path": str(user), "role": "user", "in_use": True, "error": ""}
    states = {pair["name"]: pair for pair in report["pairs"]}
    assert len(states) == len(load_registry().pairs)
    default = states[downloaded_default_pair]
    assert Path(default["target"]).parent == Path(os.environ["SPECGEN_MODELS"]) and default["draft"]
    assert all(p["target"] is None for name, p in states.items() if name != downloaded_default_pair)
    labels = [folder["label"] for folder in report["folders"]]
    assert labels == ["$SPECGEN_MODELS", "Hugging Face cache", "LM Studio", "LM Studio (older)", "Ollama"]


def test_a_broken_user_registry_is_a_finding_of_the_report_not_its_end(tmp_path):
    user = Path(os.environ["SPECGEN_CONFIG_DIR"]) / "models.toml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text('[pairs."a-1b:1b"\nrepo = 1')
    done = doctor("--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert "models.toml:1" in report["registry"][1]["error"] and report["pairs"] == []
    text = doctor()
    assert text.returncode == 0 and "BROKEN: " in text.stdout and "fix the TOML syntax" in text.stdout


def test_repacked_kernels_follow_the_engine_choice():
    off = json.loads(doctor("--json", env={"SPECGEN_EXTRA_BUFTS": "0"}).stdout)["repacked_kernels"]
    on = json.loads(doctor("--json", env={"SPECGEN_EXTRA_BUFTS": "1"}).stdout)["repacked_kernels"]
    assert off["enabled"] is False and "SPECGEN_EXTRA_BUFTS=0" in off["reason"]
    assert on["enabled"] is on["compiled"]
    chosen = json.loads(doctor("--json").stdout)["repacked_kernels"]
    from specgen.llama.kernels import extra_buffer_types

    assert chosen["reason"] == extra_buffer_types().reason or not chosen["compiled"]
    if on["compiled"]:
        assert "REPACK = 1" in json.loads(doctor("--json").stdout)["build"]["system_info"]


def fake_tool(folder: Path, name: str, output: str) -> None:
    """A stand-in for a GPU vendor's command-line tool (this machine has no GPU)."""
    folder.mkdir(exist_ok=True)
    script = folder / name
    script.write_text(f"#!/bin/sh\necho '{output}'\n")
    script.chmod(0o755)


@pytest.mark.skipif(sys.platform == "darwin", reason="Metal decides on a Mac")
@pytest.mark.parametrize(
    "tool, output, accelerator, args",
    [
        (None, "", "CPU", "-DGGML_NATIVE=on"),
        ("nvidia-smi", "8.9", "CUDA", "-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=89"),
        ("rocminfo", "  Name:                    gfx1100", "ROCm", "-DGGML_HIP=on -DAMDGPU_TARGETS=gfx1100"),
        ("vulkaninfo", "Vulkan Instance Version: 1.3", "Vulkan", "-DGGML_VULKAN=on"),
    ],
)
def test_rebuild_advice_names_the_cmake_args_for_the_gpu_found(tool, output, accelerator, args, tmp_path):
    tools = tmp_path / "bin"
    if tool:
        fake_tool(tools, tool, output)
    path = os.pathsep.join([str(tools), str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    report = json.loads(doctor("--json", env={"PATH": path}).stdout)
    rebuild = report["rebuild"]
    args += " -DGGML_RPC=ON"  # a rebuild keeps the RPC backend (--rpc, specgen worker)
    assert rebuild["accelerator"] == accelerator and rebuild["cmake_args"] == args
    assert rebuild["command"].startswith(f'CMAKE_ARGS="{args}" ')
    assert f'"llama-cpp-python=={version("llama-cpp-python")}"' in rebuild["command"]
    assert "--no-cache-dir" in rebuild["command"]  # else pip reinstalls the cached CPU wheel
    assert rebuild["needed"] is (accelerator != "CPU" and not report["build"]["gpu_offload_works"])
    text = lines_of(doctor(env={"PATH": path}).stdout)["rebuild"]
    assert f'CMAKE_ARGS="{args}"' in text
