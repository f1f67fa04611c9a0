"""What a benchmark was measured on: the machine, the build, and the memory the process used."""

from __future__ import annotations

import platform
import resource
import sys
import time
from typing import Any

from specgen import __version__
from specgen.llama.model import Model


def peak_rss_mib() -> float:
    """This process's peak resident memory (ru_maxrss is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def memory_mib(status: str = "/proc/self/status") -> dict[str, float]:
    """Resident memory now, with both models loaded: anonymous (repacked weights, KV caches, Python)
    apart from file-backed (mapped GGUF pages); empty where there is no /proc."""
    fields = {"RssAnon": "anonymous", "RssFile": "file", "VmRSS": "resident", "VmHWM": "peak"}
    out: dict[str, float] = {}
    try:
        with open(status, encoding="ascii") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return out
    for line in lines:
        name, _, value = line.partition(":")
        if name in fields and value.split():
            out[fields[name]] = int(value.split()[0]) / 1024
    return out


def machine(target: Model) -> dict[str, Any]:
    """What the numbers were measured on (the binding's version from the module itself: a copy
    without package metadata, as on the H100 of 2026-11-26, has one too)."""
    from specgen.llama.library import backend_name, build_info

    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "llama_cpp_python": build_info()[0],
        "specgen": __version__,
        "backend": backend_name(),
        "threads": target.threads,
        "target_layers": target.layers,
        "extra_bufts": target.kernels.on,
        "extra_bufts_reason": target.kernels.reason,
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
