"""Time the target's and the draft's forward passes on this machine, once, and cache the result.

`calibrate` times isolated passes of both models at a few batch sizes; `cached_costs` keeps the
result per machine, model files, threads and llama.cpp build in specgen's cache folder, so only
the first run pays. The auto policy starts from these numbers and `specgen bench` predicts
speedups from them.
"""

from __future__ import annotations

import hashlib
import json
import platform
import time

from specgen.decoding.costs import StepCosts
from specgen.decoding.drafters.adaptive import AdaptiveDrafter
from specgen.decoding.drafters.model import ModelDrafter
from specgen.decoding.loop import GenerationConfig
from specgen.decoding.policy import Policy
from specgen.storage import cache_dir, write_atomically

SIZES = (1, 2, 3, 4, 6, 8, 12, 16)  # batch sizes timed; others are interpolated
_REPEATS = 2  # timed passes per size after one warm-up; the fastest counts


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
    write_atomically(path, json.dumps({"verify": costs.verify, "draft": costs.draft}))
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


def drafter_for(target, drafter, config: GenerationConfig):
    """The drafter to hand the loop: `drafter` itself (a draft model, prompt lookup, or None), or
    with `config.adaptive` the auto policy over it, starting from this machine's step costs.

    A seeded run decides from those cached costs alone, not from live timings, so that the
    same seed gives the same draft lengths and so the same text.
    """
    if drafter is None or not config.adaptive:
        return drafter
    model = drafter if isinstance(drafter, ModelDrafter) else None
    costs = cached_costs(target, model.model if model else None)
    return AdaptiveDrafter(model, Policy(costs, config.draft_tokens, timed=config.sampling.seed is None))
