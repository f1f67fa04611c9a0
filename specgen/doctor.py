"""`specgen doctor`: what this build and this machine can do, in one report to read or paste.

When generation is slow or fails, the cause is usually the build (a CPU-only llama.cpp on a
machine with a GPU, or one without the RPC backend that --rpc and `specgen worker` need), the CPU
(no AVX2; AMX reported but unusable), or the files (nothing downloaded, a user registry overriding
the shipped pairs). `gather()` collects those facts into frozen dataclasses, `render()` writes them
as text and `as_json()` as one JSON object. Nothing here loads a model; llama.cpp is reached only
through llama/library.py.
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from specgen import __version__

# CPU features that decide which llama.cpp kernels run: /proc/cpuinfo flag -> name shown
X86_FEATURES = {
    "sse4_2": "SSE4.2",
    "avx": "AVX",
    "avx2": "AVX2",
    "fma": "FMA",
    "f16c": "F16C",
    "avx_vnni": "AVX-VNNI",
    "avx512f": "AVX512F",
    "avx512_vnni": "AVX512-VNNI",
    "avx512_bf16": "AVX512-BF16",
    "amx_tile": "AMX-TILE",
    "amx_int8": "AMX-INT8",
    "amx_bf16": "AMX-BF16",
}
ARM_FEATURES = {
    "asimd": "NEON",
    "asimdhp": "FP16",
    "asimddp": "DOTPROD",
    "i8mm": "I8MM",
    "bf16": "BF16",
    "sve": "SVE",
    "sve2": "SVE2",
}
MAC_ARM_FEATURES = {
    "hw.optional.arm.FEAT_FP16": "FP16",
    "hw.optional.arm.FEAT_DotProd": "DOTPROD",
    "hw.optional.arm.FEAT_I8MM": "I8MM",
    "hw.optional.arm.FEAT_BF16": "BF16",
}


@dataclass(frozen=True)
class Build:
    specgen: str
    llama_cpp_python: str
    llama_cpp: str
    backend: str
    gpu_offload_built: bool
    gpu_devices: list[str]
    system_info: str
    rpc: bool = False  # llama.cpp's RPC backend is built in (GGML_RPC=ON): --rpc and `specgen worker` work

    @property
    def gpu_offload_works(self) -> bool:
        return self.gpu_offload_built and bool(self.gpu_devices)


@dataclass(frozen=True)
class Cpu:
    model: str
    machine: str
    features: list[str]
    cores: int
    threads: int  # what specgen uses without --threads


@dataclass(frozen=True)
class Kernels:
    compiled: bool  # llama.cpp built with its repacked CPU kernels (REPACK)
    enabled: bool  # and specgen loads models with them (extra buffer types)
    reason: str


@dataclass(frozen=True)
class Folder:
    label: str
    path: str
    exists: bool
    size_bytes: int
    gguf_files: int


@dataclass(frozen=True)
class RegistryFile:
    path: str
    role: str  # "shipped" or "user"
    in_use: bool
    error: str = ""  # why the registry cannot be read (a user file's syntax error, ...); "" when it can


@dataclass(frozen=True)
class PairState:
    name: str
    target: str | None  # the local path, or None when not downloaded
    draft: str | None


@dataclass(frozen=True)
class Rebuild:
    accelerator: str  # what this machine has: CUDA, Metal, ROCm, SYCL, Vulkan or CPU
    cmake_args: str
    command: str
    needed: bool  # False when the installed build already targets it


@dataclass(frozen=True)
class Report:
    build: Build
    cpu: Cpu
    repacked_kernels: Kernels
    folders: list[Folder]
    registry: list[RegistryFile]
    pairs: list[PairState]
    rebuild: Rebuild
    lookup_memory_tokens: int = 0  # the bound on the memory of past outputs copy drafting searches


def gather() -> Report:
    """Collect the whole report (imports llama.cpp; loads no model)."""
    build = build_info()
    from specgen.llama.lookup_cache import MAX_TOKENS
    from specgen.models.registry import RegistryError

    try:  # a broken user registry is one finding here, not the end of the report
        pairs, broken = pair_states(), ""
    except RegistryError as error:
        pairs, broken = [], str(error)
    return Report(
        build,
        cpu_info(),
        kernel_choice(build.system_info),
        model_folders(),
        registry_files(broken),
        pairs,
        rebuild_advice(build),
        MAX_TOKENS,
    )


# -- build ------------------------------------------------------------------------------------


def build_info() -> Build:
    from specgen.llama.library import backend_name, gpu_backends, gpu_devices, has_rpc, llama, native
    from specgen.llama.library import build_info as library_build_info

    lib = llama()
    binding, system_info = library_build_info()
    llama_version = _call_text(lib, "llama_version") or "?"
    shared = native()
    ggml = ", commit ".join(filter(None, (_native_text(shared, "ggml_version"), _native_text(shared, "ggml_commit"))))
    return Build(
        specgen=__version__,
        llama_cpp_python=binding,
        llama_cpp=f"{llama_version} (ggml {ggml})" if ggml else llama_version,
        backend=backend_name(),
        gpu_offload_built=bool(lib.llama_supports_gpu_offload()) and bool(gpu_backends()),
        gpu_devices=gpu_devices(),
        system_info=system_info.strip(" |"),
        rpc=has_rpc(),
    )


def _call_text(lib, function: str) -> str:
    call = getattr(lib, function, None)
    return _text(call()) if call else ""


def _native_text(native, function: str) -> str:
    try:
        return _text(ctypes.CFUNCTYPE(ctypes.c_char_p)((function, native))())
    except (AttributeError, TypeError):
        return ""


def _text(raw) -> str:
    return raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else str(raw or "")


# -- CPU and kernels --------------------------------------------------------------------------


def cpu_info() -> Cpu:
    from specgen.llama.library import default_threads

    machine = platform.machine()
    if sys.platform == "darwin":
        model, features = _mac_cpu()
    else:
        model, features = _linux_cpu(Path("/proc/cpuinfo"))
    return Cpu(model or platform.processor() or machine, machine, features, os.cpu_count() or 1, default_threads())


def _linux_cpu(cpuinfo: Path) -> tuple[str, list[str]]:
    """The CPU model and its relevant features from /proc/cpuinfo (first processor)."""
    from specgen.llama.kernels import cpuinfo_fields

    fields = cpuinfo_fields(str(cpuinfo))
    model = fields.get("model name") or fields.get("hardware") or fields.get("cpu model") or ""
    flags = set((fields.get("flags") or fields.get("features") or "").split())
    table = X86_FEATURES if "flags" in fields else ARM_FEATURES
    return model, [shown for flag, shown in table.items() if flag in flags]


def _mac_cpu() -> tuple[str, list[str]]:
    model = _sysctl("machdep.cpu.brand_string")
    if platform.machine() == "arm64":
        return model, ["NEON", *(shown for key, shown in MAC_ARM_FEATURES.items() if _sysctl(key) == "1")]
    flags = set(f"{_sysctl('machdep.cpu.features')} {_sysctl('machdep.cpu.leaf7_features')}".lower().split())
    aliases = {"sse4.2": "sse4_2", "avx1.0": "avx", "avx512vnni": "avx512_vnni", "avx512bf16": "avx512_bf16"}
    flags |= {aliases[flag] for flag in flags if flag in aliases}
    return model, [shown for flag, shown in X86_FEATURES.items() if flag in flags]


def _sysctl(key: str) -> str:
    try:
        done = subprocess.run(["sysctl", "-n", key], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def kernel_choice(system_info: str) -> Kernels:
    """Whether llama.cpp's repacked CPU kernels (its "extra buffer types") are on, and why:
    the same answer the engine gets from `kernels.extra_buffer_types` when it loads a model."""
    from specgen.llama.kernels import extra_buffer_types

    compiled = "REPACK = 1" in system_info
    if not compiled:
        return Kernels(False, False, "this llama.cpp build has no repacked CPU kernels (REPACK off at compile time)")
    choice = extra_buffer_types()
    return Kernels(True, choice.on, choice.reason)


# -- files ------------------------------------------------------------------------------------


def model_folders() -> list[Folder]:
    """Every folder specgen looks in for models, with what it holds."""
    from specgen.models.local import default_folders

    return [_measure(label, path) for label, path in default_folders()]


def _measure(label: str, path: Path) -> Folder:
    """Size of the regular files under path (symlinks not followed, so a blob counts once)."""
    size = count = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                info = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if not os.path.islink(os.path.join(root, name)):
                size += info.st_size
            count += name.lower().endswith(".gguf")
    return Folder(label, str(path), path.is_dir(), size, count)


def registry_files(broken: str = "") -> list[RegistryFile]:
    """The shipped registry and the user's; `broken`: why they cannot be read (the user's file
    is the one that can be broken: the shipped one is tested)."""
    from specgen.models.registry import shipped_path, user_path

    user = user_path()
    return [RegistryFile(str(shipped_path()), "shipped", True), RegistryFile(str(user), "user", user.is_file(), broken)]


def pair_states() -> list[PairState]:
    """Each registry pair and where its files lie, if downloaded (no network)."""
    from specgen.models.hub import cached_path
    from specgen.models.registry import load_registry

    states = []
    for pair in load_registry().pairs.values():
        target, draft = cached_path(pair.target), cached_path(pair.draft)
        states.append(PairState(pair.name, str(target) if target else None, str(draft) if draft else None))
    return states


# -- rebuilding for the GPU -------------------------------------------------------------------


def rebuild_advice(build: Build) -> Rebuild:
    """The CMAKE_ARGS that build llama-cpp-python for the accelerator this machine has, with RPC."""
    accelerator, args = detect_accelerator()
    args += " -DGGML_RPC=ON"
    command = (
        f'CMAKE_ARGS="{args}" {sys.executable} -m pip install --force-reinstall --no-cache-dir '
        f'--no-deps "llama-cpp-python=={build.llama_cpp_python}"'
    )
    needed = accelerator != "CPU" and not (build.backend in _BACKENDS[accelerator] and build.gpu_offload_works)
    return Rebuild(accelerator, args, command, needed)


_BACKENDS = {
    "CUDA": {"CUDA"},
    "Metal": {"Metal"},
    "ROCm": {"HIP", "ROCm"},
    "SYCL": {"SYCL"},
    "Vulkan": {"Vulkan"},
    "CPU": {"CPU"},
}


def detect_accelerator() -> tuple[str, str]:
    """(accelerator, CMAKE_ARGS) from the platform and the vendor tools on PATH."""
    if sys.platform == "darwin" and platform.machine() == "arm64":
        return "Metal", "-DGGML_METAL=on"
    if shutil.which("nvidia-smi"):
        capability = _first_line(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"])
        sm = capability.replace(".", "")
        arch = f" -DCMAKE_CUDA_ARCHITECTURES={sm}" if re.fullmatch(r"\d+\.\d", capability) else ""
        return "CUDA", "-DGGML_CUDA=on" + arch
    if shutil.which("rocminfo"):
        target = re.search(r"\bgfx[0-9a-f]+\b", _run(["rocminfo"]))
        return "ROCm", "-DGGML_HIP=on" + (f" -DAMDGPU_TARGETS={target.group()}" if target else "")
    if shutil.which("sycl-ls"):
        return "SYCL", "-DGGML_SYCL=on -DCMAKE_C_COMPILER=icx -DCMAKE_CXX_COMPILER=icpx"
    if shutil.which("vulkaninfo"):
        return "Vulkan", "-DGGML_VULKAN=on"
    return "CPU", "-DGGML_NATIVE=on"


def _run(command: list[str]) -> str:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def _first_line(command: list[str]) -> str:
    lines = _run(command).strip().splitlines()
    return lines[0].strip() if lines else ""


# -- output -----------------------------------------------------------------------------------


def as_json(report: Report) -> str:
    data = asdict(report)
    data["build"]["gpu_offload_works"] = report.build.gpu_offload_works
    return json.dumps(data, indent=2)


def render(report: Report) -> str:
    """The report as aligned `label  value` lines."""
    b, cpu, k, r = report.build, report.cpu, report.repacked_kernels, report.rebuild
    rows = [
        ("specgen", b.specgen),
        ("llama-cpp-python", b.llama_cpp_python),
        ("llama.cpp", b.llama_cpp),
        ("backend", f"{b.backend}; GPU offload {_offload(b)}"),
        ("CPU", f"{cpu.model} ({cpu.machine})"),
        ("CPU features", " ".join(cpu.features) or "none of note"),
        ("llama.cpp sees", b.system_info),
        ("repacked kernels", f"{'on' if k.enabled else 'off'} ({k.reason}){_amx_hint(k, cpu)}"),
        ("threads", f"{cpu.threads} of {cpu.cores} cores (--threads to change)"),
    ]
    rows += [(f"models: {f.label}", _folder(f)) for f in report.folders]
    rows += [
        (f"registry ({f.role})", f.path + ("" if f.in_use else " (none)") + (f"; BROKEN: {f.error}" if f.error else ""))
        for f in report.registry
    ]
    rows.append(("pairs downloaded", _pairs(report.pairs)))
    rows.append(
        (
            "lookup memory",
            f"up to {report.lookup_memory_tokens:,} tokens of past outputs (about "
            f"{report.lookup_memory_tokens * 100 >> 20} MB) in chat and serve; "
            "run keeps it only with --lookup-cache FILE",
        )
    )
    rows.append(
        (
            "RPC",
            "built in: --rpc HOST:PORT and 'specgen worker' work"
            if b.rpc
            else f"not in this build, so --rpc and 'specgen worker' do not work; to add it: {r.command}",
        )
    )
    rows.append(("rebuild", _rebuild(r, b)))
    width = max(len(label) for label, _ in rows)
    return "\n".join(f"{label:<{width}}  {value}" for label, value in rows)


def _amx_hint(kernels: Kernels, cpu: Cpu) -> str:
    if kernels.enabled or not kernels.compiled or cpu.machine.lower() not in {"x86_64", "amd64"}:
        return ""
    if "AMX-TILE" in cpu.features:
        return "; this CPU reports AMX, so keep them off unless a run with them succeeds"
    return "; this CPU reports no AMX, so turning them on should be safe"


def _rebuild(rebuild: Rebuild, build: Build) -> str:
    if rebuild.accelerator == "CPU":
        return f"no GPU found; for this CPU: {rebuild.command}"
    if not rebuild.needed:
        return f"not needed, this build already uses {build.backend}; to rebuild anyway: {rebuild.command}"
    return f"this build is {build.backend}-only but the machine has {rebuild.accelerator}: {rebuild.command}"


def _offload(build: Build) -> str:
    if not build.gpu_offload_built:
        return "not in this build"
    if not build.gpu_devices:
        return "built, but no GPU found"
    return "works: " + ", ".join(build.gpu_devices)


def _folder(folder: Folder) -> str:
    if not folder.exists:
        return f"{folder.path} (not there)"
    return f"{folder.path}  {human_size(folder.size_bytes)}, {folder.gguf_files} GGUF file(s)"


def _pairs(states: list[PairState]) -> str:
    whole = [s.name for s in states if s.target and s.draft]
    part = [f"{s.name} ({'target' if s.target else 'draft'} only)" for s in states if bool(s.target) != bool(s.draft)]
    return "; ".join(whole + part) or "none ('specgen pull NAME' downloads one)"


def human_size(size: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"
