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


def default_threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def backend_name() -> str:
    """The accelerator this llama.cpp build offloads to, or "CPU"."""
    lib = llama()
    if not lib.llama_supports_gpu_offload():
        return "CPU"
    info = lib.llama_print_system_info().decode("utf-8", errors="replace")
    for name in ("CUDA", "Metal", "Vulkan", "HIP", "SYCL"):
        if name in info:
            return name
    return "GPU"


def build_info() -> tuple[str, str]:
    """(llama-cpp-python version, llama.cpp's system info: the CPU features it was built for)."""
    lib = llama()
    return lib.__version__, lib.llama_print_system_info().decode("utf-8", errors="replace")
