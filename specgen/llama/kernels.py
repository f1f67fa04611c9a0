"""Decide whether llama.cpp may use its extra CPU buffer types (repacked weights, fast kernels).

Repacked kernels make plain decoding about a third faster on CPUs, so they are on by default.
The AMX kernels of builds that have them die with a signal at the first decode on some CPUs
(and VMs) that report AMX without enabling it. On such a CPU a child process (`python -m
specgen.llama.probe MODEL`) loads the model with extra buffer types on and decodes a few tokens
once; if it dies by a signal, a second child tries the repacked AVX kernels without AMX (the
other extra buffer type, most of the speed-up), and only if that dies too are they off. The verdict is
cached per llama.cpp build and CPU in specgen's cache folder ($SPECGEN_CACHE_DIR, else the
platform's user cache folder for "specgen"). SPECGEN_EXTRA_BUFTS=0 or 1 forces the choice.
`extra_buffer_types()` is the one question the engine (and `specgen doctor`) asks.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

from specgen.errors import UsageError
from specgen.llama.library import build_info
from specgen.storage import cache_dir, write_atomically

ENV = "SPECGEN_EXTRA_BUFTS"
PROBE_TIMEOUT_S = 300


class KernelChoice(NamedTuple):
    """Whether models load with extra buffer types, and why (one short phrase); `amx`: whether
    the AMX type is among them (False: it crashed here, so only the repacked AVX kernels are)."""

    on: bool
    reason: str
    amx: bool = True


def extra_buffer_types(model_path: str | Path | None = None) -> KernelChoice:
    """The choice for this machine; probes (once, cached) with `model_path` where AMX may crash.

    Without a model path and without a cached verdict, an AMX machine reports "off, not yet probed".
    """
    forced = os.environ.get(ENV, "").strip()
    if forced not in ("", "0", "1"):
        raise UsageError(f"{ENV} must be 0 or 1, not {forced!r}; unset it to let specgen decide")
    if forced:
        return KernelChoice(forced == "1", f"forced by {ENV}={forced}")
    model_name, flags = cpu_info()
    if "amx_tile" not in flags:
        return KernelChoice(True, "no AMX on this CPU")
    version, system = build_info()
    if "AMX" not in system:
        return KernelChoice(True, "this llama.cpp build has no AMX kernels")
    key = cache_key(version, system, model_name, flags)
    cached = read_verdicts().get(key)
    if cached is not None:
        return KernelChoice(bool(cached["on"]), f"{cached['reason']} (cached)", bool(cached.get("amx", True)))
    if model_path is None:
        return KernelChoice(False, "AMX CPU not probed yet; the next model load probes it")
    choice, final = probe(probe_command(model_path), "AMX probe")
    if final and not choice.on:  # AMX died by a signal: try the repacked kernels without it
        without, final = probe(probe_command(model_path, amx=False), "probe without AMX")
        choice = KernelChoice(without.on, f"{choice.reason}; {without.reason}", amx=False)
    if final:
        write_verdict(key, choice, {"llama_cpp": version, "cpu": model_name})
    return choice


def probe(command: list[str], what: str, timeout: float = PROBE_TIMEOUT_S) -> tuple[KernelChoice, bool]:
    """Run a probe child: (choice, whether the verdict is final and may be cached)."""
    env = {**os.environ, ENV: "1"}
    try:
        done = subprocess.run(command, env=env, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return KernelChoice(False, f"{what} did not finish in {timeout:g} s; off to be safe"), False
    if os.environ.get("SPECGEN_DEBUG") == "1":
        sys.stderr.write(done.stderr.decode("utf-8", errors="replace"))
    if done.returncode < 0:
        name = signal.Signals(-done.returncode).name
        return KernelChoice(False, f"{what} died with {name}"), True
    if done.returncode == 0:
        return KernelChoice(True, f"{what} passed"), True
    return KernelChoice(False, f"{what} failed (exit {done.returncode}); off to be safe"), False


def probe_command(model_path: str | Path, amx: bool = True) -> list[str]:
    return [sys.executable, "-m", "specgen.llama.probe", str(model_path), *([] if amx else ["--no-amx"])]


def cpu_info(path: str = "/proc/cpuinfo") -> tuple[str, frozenset[str]]:
    """The CPU's model name and feature flags (empty where there is no /proc/cpuinfo)."""
    fields = cpuinfo_fields(path)
    return fields.get("model name", ""), frozenset(fields.get("flags", "").split())


def cpuinfo_fields(path: str = "/proc/cpuinfo") -> dict[str, str]:
    """The first processor's fields in /proc/cpuinfo, names lowercased (none where it is missing)."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    fields: dict[str, str] = {}
    for line in text.splitlines():
        name, _, value = line.partition(":")
        fields.setdefault(name.strip().lower(), value.strip())
    return fields


def cache_key(version: str, system: str, model_name: str, flags: frozenset[str]) -> str:
    text = "\n".join(["2", version, system, model_name, " ".join(sorted(flags))])  # 2: verdicts with "amx"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def verdicts_path() -> Path:
    return cache_dir() / "kernels.json"


def read_verdicts() -> dict[str, Any]:
    """Cached probe verdicts by key; an unreadable file counts as none (the probe runs again)."""
    try:
        data = json.loads(verdicts_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_verdict(key: str, choice: KernelChoice, about: dict[str, str]) -> None:
    """Add one verdict, atomically; a cache that cannot be written only costs a probe next time."""
    path = verdicts_path()
    data = {
        **read_verdicts(),
        key: {"on": choice.on, "reason": choice.reason, "amx": choice.amx, **about, "date": time.strftime("%Y-%m-%d")},
    }
    write_atomically(path, json.dumps(data, indent=2) + "\n")
