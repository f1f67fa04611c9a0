"""The verify-cost curves that tests/copyreplay.py prices replayed passes with: measured curves by
machine (`CURVES`, with their switch costs), this machine's cached ones (`cached_curves`), selecting
them by name, and a curve's own ceiling. Apart from the replay so that it stays one job (and under
500 lines); copyreplay re-exports these names for its importers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from specgen.decoding.costs import StepCosts
from specgen.decoding.policy import LOOKUP_MAX

# seconds of a target pass by batch size, logits for every row, 1.5B Q4_K_M, 2 threads
CURVES = {
    # a 2-vCPU Xeon VM that reports AMX, repacked AVX kernels without AMX (measured 2026-11-25)
    "xeon-vm": {1: 0.065, 2: 0.101, 4: 0.107, 8: 0.194, 12: 0.215, 16: 0.227, 24: 0.33, 32: 0.389, 48: 0.55, 64: 0.738},
    # the same VM in a spell where one token costs 9% less and batches the same (measured later that day)
    "xeon-vm-fast": {
        1: 0.0605,
        2: 0.0963,
        3: 0.1195,
        4: 0.1092,
        6: 0.1634,
        8: 0.1968,
        12: 0.2411,
        16: 0.2366,
        24: 0.3669,
        32: 0.406,
        64: 0.7657,
    },
    # the 2-vCPU Xeon VM of 2026-11-26, repacked AVX kernels without AMX: one token 68-78 ms, and a
    # steeper curve than the day before (the mean of two calibrations)
    "xeon-vm-2611": {
        1: 0.0733,
        2: 0.107,
        3: 0.146,
        4: 0.203,
        6: 0.293,
        8: 0.505,
        12: 0.614,
        16: 0.509,
        24: 0.758,
        32: 0.878,
        64: 1.59,
    },
    # the 2-vCPU AMD EPYC of 2026-11-26 (no AMX, no AVX-512), as `specgen bench` measured it at 07:16
    "epyc-2611": {1: 0.074, 2: 0.118, 4: 0.216, 8: 0.426, 16: 0.559, 32: 0.941, 64: 1.758},
    # the 2-vCPU AMD EPYC of 2026-11-29, with AVX-512 and no AMX: a 2-token pass 2.1 single ones, the
    # steepest start measured (the mean of two calibrations, benchmarks/results/2026-11-29-overlap)
    "epyc-2911": {
        1: 0.0403,
        2: 0.0831,
        3: 0.103,
        4: 0.13,
        6: 0.178,
        8: 0.2996,
        12: 0.3584,
        16: 0.3698,
        24: 0.5715,
        32: 0.6393,
        64: 1.022,
    },
    # the 2-vCPU Xeon VM of 2026-11-30, AVX-512; it reports AMX, whose kernels fail there (repacked
    # AVX kernels): the median of three calibrations by size (benchmarks/results/2026-11-30-depth)
    "xeon-vm-3011": {
        1: 0.0838,
        2: 0.1316,
        3: 0.1714,
        4: 0.1296,
        6: 0.2299,
        8: 0.2466,
        12: 0.309,
        16: 0.3462,
        24: 0.517,
        32: 0.6099,
        64: 1.0364,
    },
    # the 2-vCPU AMD EPYC of 2026-12-01, AVX2 only (no AVX-512, no AMX): a 64-token pass 30-32 single
    # ones; the mean of two calibrations 23 minutes apart, which read sizes 1.16-1.63 times apart
    # (benchmarks/results/2026-12-01-epyc-avx2)
    "epyc-0112": {
        1: 0.0522,
        2: 0.0851,
        3: 0.1295,
        4: 0.1455,
        6: 0.2403,
        8: 0.398,
        12: 0.4809,
        16: 0.4927,
        24: 0.7213,
        32: 0.8303,
        64: 1.6237,
    },
    # simulated, not measured: a GPU's nearly flat verify (12 ms for one token, 30 ms for 64)
    "gpu-sim": {1: 0.012, 2: 0.0122, 4: 0.0125, 8: 0.013, 16: 0.015, 32: 0.02, 64: 0.03},
    # a 2-vCPU AMD EPYC, repacked kernels (measured 2026-11-22; calibrate.DEFAULT)
    "epyc": {
        1: 0.030,
        2: 0.051,
        3: 0.069,
        4: 0.084,
        6: 0.123,
        8: 0.200,
        12: 0.243,
        16: 0.228,
        24: 0.348,
        32: 0.414,
        48: 0.549,
        64: 0.750,
    },
    # an H100 80GB, CUDA build, the 1.5B target's shapes and quantization: each pass after one of its
    # size, the median of four calibrations (benchmarks/results/2026-11-27-h100-4, *-new-*.json)
    "h100": {
        1: 0.00211,
        2: 0.00228,
        3: 0.0026,
        4: 0.00295,
        6: 0.00327,
        8: 0.0037,
        12: 0.00437,
        16: 0.00467,
        24: 0.00507,
        32: 0.00591,
        64: 0.00783,
    },
    # an H200, CUDA build, a 7B target (Qwen2.5-Coder-7B's shapes, random weights, Q4_K_M): each
    # pass after one of its size, the median of three calibrations (benchmarks/results/2026-11-29-h200-7b)
    "h200-7b": {
        1: 0.00401,
        2: 0.00411,
        3: 0.00476,
        4: 0.00556,
        6: 0.00696,
        8: 0.00829,
        12: 0.00698,
        16: 0.00726,
        24: 0.00814,
        32: 0.0094,
        64: 0.01289,
    },
}
# what a pass costs more where the pass before it had another size; on the H100 1- and 4-token
# passes alternating took 1.09 and 1.16 ms more than in runs of one size (graphs-on.json there);
# on the H200 the calibration's 1- and 2-token passes alternating, 0.94-1.18 ms (median 1.07);
# the CPU curves' calibrations read 0-1.5 ms of a 30-75 ms pass there, left out
SWITCHES = {"h100": 0.0011, "h200-7b": 0.00107}
FLAT = ("gpu-sim", "h100", "h200-7b")  # the curves where a longer pass costs little more


def costs_of(curve: dict[int, float] | StepCosts) -> StepCosts:
    """A curve as the policy reads it: a verify table (no switch cost), or step costs as they are."""
    return curve if isinstance(curve, StepCosts) else StepCosts(dict(curve), {})


def named_costs(name: str) -> StepCosts:
    """The step costs of a curve in `CURVES`, with its switch cost."""
    return StepCosts(dict(CURVES[name]), {}, SWITCHES.get(name, 0.0))


def cached_curves(folder: Path | None = None) -> dict[str, StepCosts]:
    """The target verify curves cached on this machine (`calibrate.cached_costs`' files, in
    specgen's cache folder unless `folder`), named `cached:` and the first 8 characters of each
    file's key; files that are not step costs are left out."""
    if folder is None:
        from specgen.storage import cache_dir

        folder = cache_dir() / "step-costs"
    found = {}
    for path in sorted(folder.glob("*.json")):
        costs = curve_file(path)
        if costs is not None:
            found[f"cached:{path.stem[:8]}"] = costs
    return found


def curve_file(path: Path) -> StepCosts | None:
    """The target verify curve in a step-costs file (the cache's format, as `calibrate` writes it
    or benchmarks/scripts/depth_curve.py), with its switch cost; None where it holds none."""
    try:
        data = json.loads(path.read_text())
        verify = {int(size): float(seconds) for size, seconds in data["verify"].items()}
        switch = float(data.get("switch", 0.0))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return StepCosts(verify, {}, switch) if 1 in verify else None


def ceiling(curve: dict[int, float] | StepCosts) -> float:
    """The speedup where every pass verifies a copy kept whole, at the curve's best batch size."""
    return costs_of(curve).copy_ceiling(LOOKUP_MAX)[1]


def select_curves(names: list[str]) -> dict[str, StepCosts]:
    """The curves named (`cached`: every one in this machine's step-cost cache; a path ending in
    .json: the curve in that step-costs file, named by its file's stem); exits naming an unknown
    one, a missing file or one without a curve, or `cached` where nothing is cached."""
    out: dict[str, StepCosts] = {}
    for name in names:
        if name == "cached":
            found = cached_curves()
            if not found:
                sys.exit("no cached step costs on this machine: run `specgen bench` once to calibrate")
            out.update(found)
        elif name in CURVES:
            out[name] = named_costs(name)
        elif name.endswith(".json"):
            if not Path(name).is_file():
                sys.exit(f"no such file: {name}")
            costs = curve_file(Path(name))
            if costs is None:
                sys.exit(f"no verify curve in {name}: want a step-costs file with a one-token cost")
            out[f"file:{Path(name).stem}"] = costs
        else:
            sys.exit(f"unknown curve {name!r}: use one of {', '.join(CURVES)}, cached, or a step-costs FILE.json")
    return out
