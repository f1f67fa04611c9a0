"""What one forward pass costs on this machine, measured, not assumed.

Whether speculation pays depends on the shape of the target's verify cost over batch size
(nearly flat on a GPU, close to linear on two CPU cores, with plateaus where the kernels tile)
and on what a draft step costs next to it. `calibrate` times isolated passes of both models at
a few batch sizes and interpolates between them; the result is cached per machine, model
files, threads and llama.cpp build in the user cache folder, so only the first run pays.
The adaptive policy starts from these numbers and `specgen bench` predicts speedups from them.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path

SIZES = (1, 2, 3, 4, 6, 8, 12, 16)  # batch sizes timed; others are interpolated
_REPEATS = 2  # timed passes per size after one warm-up; the fastest counts


@dataclass(frozen=True)
class StepCosts:
    """Seconds of one target pass by batch size, and of the draft model's passes likewise."""

    verify: dict[int, float]
    draft: dict[int, float]

    @property
    def draft_step(self) -> float | None:
        return self.draft.get(1)

    def verify_cost(self, n: int) -> float:
        return _interpolate(self.verify, n)

    def draft_cost(self, n: int) -> float:
        """A draft pass over n tokens (n > 1 when it catches up on tokens it skipped)."""
        return _interpolate(self.draft, n) if self.draft else 0.0


def _interpolate(table: dict[int, float], n: int) -> float:
    """Piecewise linear between measured sizes; past the largest, its cost per token."""
    if n in table:
        return table[n]
    sizes = sorted(table)
    if n > sizes[-1]:
        return table[sizes[-1]] * n / sizes[-1]
    if n < sizes[0]:
        return table[sizes[0]]
    hi = next(s for s in sizes if s > n)
    lo = max(s for s in sizes if s < n)
    return table[lo] + (table[hi] - table[lo]) * (n - lo) / (hi - lo)


def time_passes(model, sizes: tuple[int, ...] = SIZES, repeats: int = _REPEATS) -> dict[int, float]:
    """Fastest of `repeats` timed passes at each size, after the model's current cache, rolled back."""
    base = len(model.tokens)
    filler = model.tokens[-1] if model.tokens else (model.bos if model.bos >= 0 else 0)
    room = model.n_ctx - base
    out = {}
    for n in (s for s in sizes if s <= min(room, model.n_batch)):
        best = float("inf")
        for attempt in range(repeats + 1):
            start = time.perf_counter()
            model.forward([filler] * n, all_logits=True)
            elapsed = time.perf_counter() - start
            model.truncate(base)
            if attempt:
                best = min(best, elapsed)
        out[n] = best
    return out


def cache_dir() -> Path:
    """specgen's cache folder: $SPECGEN_CACHE_DIR, else the platform's user cache folder."""
    if os.environ.get("SPECGEN_CACHE_DIR"):
        return Path(os.environ["SPECGEN_CACHE_DIR"]).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("specgen"))


def calibrate(target, draft=None) -> StepCosts:
    """Time both models now (about 30 single-token passes of the target in all). A larger
    batch never costs less than a smaller one, so a pass slowed by a hiccup cannot make a
    longer draft look cheaper than a shorter one."""
    return StepCosts(_monotone(time_passes(target)), _monotone(time_passes(draft)) if draft is not None else {})


def _monotone(table: dict[int, float]) -> dict[int, float]:
    """Each size's cost lowered to the cheapest of the sizes at or above it."""
    out, floor = {}, float("inf")
    for size in sorted(table, reverse=True):
        floor = min(floor, table[size])
        out[size] = floor
    return dict(sorted(out.items()))


def cached_costs(target, draft) -> StepCosts:
    """`calibrate`'s result for this machine, these files and settings: from the cache, or measured once."""
    path = cache_dir() / "step-costs" / f"{_key(target, draft)}.json"
    try:
        data = json.loads(path.read_text())
        return StepCosts(_table(data["verify"]), _table(data["draft"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    costs = calibrate(target, draft)
    _write_atomically(path, json.dumps({"verify": costs.verify, "draft": costs.draft}))
    return costs


def _table(raw: dict) -> dict[int, float]:
    table = {int(size): float(seconds) for size, seconds in raw.items()}
    if table and 1 not in table:
        raise ValueError("no single-token cost")
    return table


def _key(target, draft) -> str:
    parts = [platform.node(), platform.machine(), str(target.threads), target.identity]
    parts.append(draft.identity if draft is not None else "-")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:24]


def _write_atomically(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(text)
        os.replace(temporary, path)
    except OSError:
        pass  # a read-only cache only means measuring again next time
