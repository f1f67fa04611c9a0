"""The only module that imports llama_cpp: load it on first use, quiet its log, and say what
this build of llama.cpp can do (its version, CPU features, GPU backend).

Importing llama_cpp takes a while and prints llama.cpp's log, so it happens here, once, when a
command first needs it: `specgen --help` stays instant.
"""

from __future__ import annotations

import ctypes
import os
import sys

_lib = None
_log_callback = None


def llama():
    """Import llama_cpp on first use (so `specgen --help` stays instant) and quiet its logging."""
    global _lib, _log_callback
    if _lib is None:
        import llama_cpp

        llama_cpp.llama_backend_init()
        debug = os.environ.get("SPECGEN_DEBUG") == "1"

        def log(level, text, user_data):
            if debug and text:
                sys.stderr.write(text.decode("utf-8", errors="replace"))

        _log_callback = llama_cpp.llama_log_callback(log)
        llama_cpp.llama_log_set(_log_callback, ctypes.c_void_p(0))
        _lib = llama_cpp
    return _lib


def native():
    """The shared library itself (ctypes), for ggml's functions that llama_cpp does not wrap."""
    return llama().llama_cpp._lib


def default_threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


GPU_DEVICE_TYPES = {1: "GPU", 2: "iGPU"}  # ggml_backend_dev_type: 0 CPU, 1 GPU, 2 IGPU, 3 ACCEL


def gpu_devices() -> list[str]:
    """The devices llama.cpp offloads layers to, as "CUDA0: NVIDIA H100 (GPU)": the GPUs its
    backends found, and RPC servers once added. A build with GPU or RPC support but none of
    them here has none, and its models stay on the CPU."""
    shared = native()
    try:
        count = ctypes.CFUNCTYPE(ctypes.c_size_t)(("ggml_backend_dev_count", shared))
        get = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_size_t)(("ggml_backend_dev_get", shared))
        kind = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(("ggml_backend_dev_type", shared))
        name = ctypes.CFUNCTYPE(ctypes.c_char_p, ctypes.c_void_p)(("ggml_backend_dev_name", shared))
        about = ctypes.CFUNCTYPE(ctypes.c_char_p, ctypes.c_void_p)(("ggml_backend_dev_description", shared))
    except (AttributeError, TypeError):  # an older or unusual build without the device API
        return []
    found = []
    for index in range(count()):
        device = get(index)
        if kind(device) in GPU_DEVICE_TYPES:
            found.append(f"{_text(name(device))}: {_text(about(device))} ({GPU_DEVICE_TYPES[kind(device)]})")
    return found


def _text(raw) -> str:
    return raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else str(raw or "")


def backend_name() -> str:
    """Where models' layers go: "CPU", or the GPU backend ("CUDA", "Metal", ...), or "RPC"."""
    devices = gpu_devices()
    for name in ("CUDA", "Metal", "MTL", "Vulkan", "HIP", "ROCm", "SYCL", "RPC"):
        if any(device.upper().startswith(name.upper()) for device in devices):
            return "Metal" if name == "MTL" else name
    return "GPU" if devices else "CPU"


def build_info() -> tuple[str, str]:
    """(llama-cpp-python version, llama.cpp's system info: the CPU features it was built for)."""
    lib = llama()
    return lib.__version__, lib.llama_print_system_info().decode("utf-8", errors="replace")


def _cpu_extra_buffer_types():
    """llama.cpp's own list of the CPU's extra buffer types (a null-terminated array of
    pointers that it reads whenever a model loads), and the function naming an entry."""
    ggml = native()
    ggml.ggml_backend_dev_by_type.restype = ctypes.c_void_p
    ggml.ggml_backend_dev_by_type.argtypes = [ctypes.c_int]
    ggml.ggml_backend_dev_backend_reg.restype = ctypes.c_void_p
    ggml.ggml_backend_dev_backend_reg.argtypes = [ctypes.c_void_p]
    ggml.ggml_backend_reg_get_proc_address.restype = ctypes.c_void_p
    ggml.ggml_backend_reg_get_proc_address.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    ggml.ggml_backend_buft_name.restype = ctypes.c_char_p
    ggml.ggml_backend_buft_name.argtypes = [ctypes.c_void_p]
    device = ggml.ggml_backend_dev_by_type(0)  # GGML_BACKEND_DEVICE_TYPE_CPU
    address = ggml.ggml_backend_reg_get_proc_address(ggml.ggml_backend_dev_backend_reg(device),
                                                     b"ggml_backend_dev_get_extra_bufts") if device else None
    if not address:
        return None, ggml.ggml_backend_buft_name
    getter = ctypes.CFUNCTYPE(ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)(address)
    return getter(device), ggml.ggml_backend_buft_name


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
    kept, i = [], 0
    while entries and entries[i]:
        if name(entries[i]) != b"AMX":
            kept.append(entries[i])
        i += 1
    for j in range(i):
        entries[j] = kept[j] if j < len(kept) else None
