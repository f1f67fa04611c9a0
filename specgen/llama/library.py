"""The only module that imports llama_cpp: load it on first use, quiet its log, say what this
build of llama.cpp can do (its version, CPU features, GPU backend, RPC), and reach the ggml
functions llama_cpp does not wrap (devices, the RPC client and server, the abort hook).

Importing llama_cpp takes a while and prints llama.cpp's log, so it happens here, once, when a
command first needs it: `specgen --help` stays instant.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from _ctypes import CFuncPtr
    from ctypes import _CDataType, _CFunctionType, _Pointer

_lib: ModuleType | None = None
_log_callback: object = None  # the ctypes callback llama.cpp holds: kept alive here
_log_capture: list[str] | None = None  # llama.cpp's log lines, kept while a capture is open
_abort_callback: object = None


def llama() -> ModuleType:
    """Import llama_cpp on first use (so `specgen --help` stays instant) and quiet its logging."""
    global _lib, _log_callback
    if _lib is None:
        import llama_cpp

        llama_cpp.llama_backend_init()
        debug = os.environ.get("SPECGEN_DEBUG") == "1"

        def log(level: int, text: bytes | None, user_data: int | None) -> None:
            if text and (debug or _log_capture is not None):
                line = text.decode("utf-8", errors="replace")
                if _log_capture is not None:
                    _log_capture.append(line)
                if debug:
                    sys.stderr.write(line)

        _log_callback = llama_cpp.llama_log_callback(log)
        llama_cpp.llama_log_set(_log_callback, ctypes.c_void_p(0))
        _lib = llama_cpp
    return _lib


def native() -> ctypes.CDLL:
    """The shared library itself (ctypes), for ggml's functions that llama_cpp does not wrap."""
    shared: ctypes.CDLL = llama().llama_cpp._lib
    return shared


def default_threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


GPU_DEVICE_TYPES = {1: "GPU", 2: "iGPU"}  # ggml_backend_dev_type: 0 CPU, 1 GPU, 2 IGPU, 3 ACCEL


@dataclass(frozen=True)
class Device:
    """A ggml backend device: its handle (for llama_model_params.devices), name, description, type."""

    handle: int
    name: str
    description: str
    kind: int  # ggml_backend_dev_type

    def __str__(self) -> str:
        return f"{self.name}: {self.description}"


def _bind(name: str, restype: type[_CDataType] | None, *argtypes: type[_CDataType]) -> Callable[..., Any]:
    """A ggml function of the shared library, with its C signature declared."""
    function: CFuncPtr = getattr(native(), name)
    function.restype, function.argtypes = restype, list(argtypes)
    return function


def _device(handle: int) -> Device:
    name = _bind("ggml_backend_dev_name", ctypes.c_char_p, ctypes.c_void_p)
    about = _bind("ggml_backend_dev_description", ctypes.c_char_p, ctypes.c_void_p)
    kind = _bind("ggml_backend_dev_type", ctypes.c_int, ctypes.c_void_p)
    return Device(handle, _text(name(handle)), _text(about(handle)), kind(handle))


def devices() -> list[Device]:
    """Every device this process's backends found (CPU included); none in a build without the device API."""
    try:
        count = _bind("ggml_backend_dev_count", ctypes.c_size_t)
        get = _bind("ggml_backend_dev_get", ctypes.c_void_p, ctypes.c_size_t)
    except AttributeError:
        return []
    return [_device(get(index)) for index in range(count())]


def offload_devices() -> list[Device]:
    """The local devices llama.cpp offloads layers to: the GPUs its backends found."""
    return [device for device in devices() if device.kind in GPU_DEVICE_TYPES]


def gpu_devices() -> list[str]:
    """The local devices llama.cpp offloads layers to, as "CUDA0: NVIDIA H100 (GPU)". A build with
    GPU support but no GPU here has none, and its models stay on the CPU. RPC workers are not
    among them: only a model given them (--rpc) uses them."""
    return [f"{device} ({GPU_DEVICE_TYPES[device.kind]})" for device in offload_devices()]


def gpu_backends() -> list[str]:
    """The GPU backends this build of llama.cpp has (CUDA, Metal, Vulkan, ...), whether or not
    they found a device: every registered backend but the CPU's and RPC's (which offloads to other
    machines, and makes llama.cpp report GPU offload on a CPU-only build)."""
    try:
        count = _bind("ggml_backend_reg_count", ctypes.c_size_t)
        get = _bind("ggml_backend_reg_get", ctypes.c_void_p, ctypes.c_size_t)
        name = _bind("ggml_backend_reg_name", ctypes.c_char_p, ctypes.c_void_p)
    except AttributeError:
        return []
    return [found for found in (_text(name(get(index))) for index in range(count())) if found not in ("CPU", "RPC")]


def _text(raw: bytes | str | None) -> str:
    return raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else str(raw or "")


def backend_name() -> str:
    """Where models' layers go on this machine: "CPU", or the GPU backend ("CUDA", "Metal", ...)."""
    found = gpu_devices()
    for name in ("CUDA", "Metal", "MTL", "Vulkan", "HIP", "ROCm", "SYCL"):
        if any(device.upper().startswith(name.upper()) for device in found):
            return "Metal" if name == "MTL" else name
    return "GPU" if found else "CPU"


def build_info() -> tuple[str, str]:
    """(llama-cpp-python version, llama.cpp's system info: the CPU features it was built for)."""
    lib = llama()
    return lib.__version__, lib.llama_print_system_info().decode("utf-8", errors="replace")


def _cpu_extra_buffer_types() -> tuple[_Pointer[ctypes.c_void_p] | None, Callable[..., Any]]:
    """llama.cpp's own list of the CPU's extra buffer types (a null-terminated array of
    pointers that it reads whenever a model loads), and the function naming an entry."""
    by_type = _bind("ggml_backend_dev_by_type", ctypes.c_void_p, ctypes.c_int)
    name = _bind("ggml_backend_buft_name", ctypes.c_char_p, ctypes.c_void_p)
    device = by_type(0)  # GGML_BACKEND_DEVICE_TYPE_CPU
    registry = _bind("ggml_backend_dev_backend_reg", ctypes.c_void_p, ctypes.c_void_p)(device) if device else None
    address = _proc_address(registry, "ggml_backend_dev_get_extra_bufts")
    if not address:
        return None, name
    getter = ctypes.CFUNCTYPE(ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)(address)
    return getter(device), name


def _proc_address(registry: int | None, function: str) -> int | None:
    """A function a backend registry exports by name (the way ggml reaches optional features)."""
    if not registry:
        return None
    lookup = _bind("ggml_backend_reg_get_proc_address", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)
    address: int | None = lookup(registry, function.encode())
    return address


def extra_buffer_type_names() -> list[str]:
    """The CPU's extra buffer types that a model loaded now may use ("AMX", "CPU_REPACK", ...)."""
    entries, name = _cpu_extra_buffer_types()
    names, i = [], 0
    while entries and entries[i]:
        names.append(name(entries[i]).decode())
        i += 1
    return names


def drop_amx_buffer_type() -> None:
    """Take AMX out of the extra buffer types for every model this process loads from now on.

    On some CPUs (and VMs) that report AMX, llama.cpp's AMX kernels die at the first decode,
    while its repacked AVX kernels, the other extra buffer type, run fine and are most of the
    speed-up (one token of the 1.5B target: 85 ms plain, 63 ms repacked without AMX). llama.cpp
    has no switch for one type, but its list is an array it reads at each load: this removes
    the AMX entry from it in place, keeping the others in order.
    """
    entries, name = _cpu_extra_buffer_types()
    if not entries:
        return
    kept, i = [], 0
    while entries[i]:
        if name(entries[i]) != b"AMX":
            kept.append(entries[i])
        i += 1
    for j in range(i):
        entries[j] = kept[j] if j < len(kept) else None


# -- RPC: llama.cpp's backend for devices on other machines (a build with GGML_RPC=ON) ---------

_RPC_ADD_SERVER = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_char_p)
_RPC_START_SERVER = ctypes.CFUNCTYPE(
    None, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)
)
_ABORT_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_char_p)


def _rpc_function(name: str, prototype: type[_CFunctionType]) -> _CFunctionType | None:
    """One of the RPC backend's functions, or None in a build without it."""
    try:
        registry = _bind("ggml_backend_reg_by_name", ctypes.c_void_p, ctypes.c_char_p)(b"RPC")
    except AttributeError:
        return None
    address = _proc_address(registry, name)
    return prototype(address) if address else None


def has_rpc() -> bool:
    """Whether this build has llama.cpp's RPC backend (compiled with GGML_RPC=ON)."""
    return _rpc_function("ggml_backend_rpc_add_server", _RPC_ADD_SERVER) is not None


def rpc_devices(endpoint: str) -> list[Device]:
    """Connect to the RPC server at "host:port" and return its devices (llama.cpp keeps the
    connection for the process). It aborts the process when nothing answers there: check first."""
    add_server = _rpc_function("ggml_backend_rpc_add_server", _RPC_ADD_SERVER)
    assert add_server is not None, "rpc_devices needs a build with RPC: check has_rpc() first"
    registry = add_server(endpoint.encode())
    if not registry:
        return []
    count = _bind("ggml_backend_reg_dev_count", ctypes.c_size_t, ctypes.c_void_p)
    get = _bind("ggml_backend_reg_dev_get", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
    return [_device(get(registry, index)) for index in range(count(registry))]


def serving_devices() -> list[Device]:
    """What an RPC server here offers, as llama.cpp's rpc-server chooses: the GPUs, else the CPU."""
    found = devices()
    return [d for d in found if d.kind not in (0, 3)] or [d for d in found if d.kind == 0][:1]


def run_rpc_server(endpoint: str, cache_dir: str | None, threads: int, offered: list[Device]) -> None:
    """Serve `offered` to RPC clients on "address:port" until the process ends (returns only on
    failure: a port it cannot bind). Blocks in C without the GIL: run it on a thread."""
    start = _rpc_function("ggml_backend_rpc_start_server", _RPC_START_SERVER)
    assert start is not None, "run_rpc_server needs a build with RPC: check has_rpc() first"
    handles = (ctypes.c_void_p * len(offered))(*(device.handle for device in offered))
    start(endpoint.encode(), cache_dir.encode() if cache_dir else None, threads, len(offered), handles)


def device_list(chosen: list[Device]) -> tuple[ctypes.Array[ctypes.c_void_p], int | None]:
    """A null-terminated array of device handles for llama_model_params.devices (keep it alive
    while the model loads) and its address."""
    array = (ctypes.c_void_p * (len(chosen) + 1))(*(device.handle for device in chosen), None)
    return array, ctypes.cast(array, ctypes.c_void_p).value


def on_abort(handler: Callable[[str], None]) -> None:
    """Call handler(message) when ggml aborts the process (an RPC server that stopped answering
    is one: ggml cannot return that error). The process still ends when the handler returns."""
    global _abort_callback
    _abort_callback = _ABORT_CALLBACK(lambda message: handler(_text(message)))
    _bind("ggml_set_abort_callback", ctypes.c_void_p, _ABORT_CALLBACK)(_abort_callback)


@contextmanager
def captured_log() -> Iterator[list[str]]:
    """llama.cpp's log lines while the block runs (how it placed a model's layers, say)."""
    global _log_capture
    llama()
    lines: list[str] = []
    _log_capture = lines
    try:
        yield lines
    finally:
        _log_capture = None
