"""Time the target's and the draft's forward passes on this machine, once, and cache the result.

`calibrate` times isolated passes of both models at batch sizes up to 64 (long copies are
verified in one batch), keeping the curve as measured; `cached_costs` keeps the result per
machine, model files, threads and llama.cpp build in specgen's cache folder, so only the first
run pays, until a reply shows the cached costs were measured on a busy machine
(`forget_costs`), or `specgen bench` measures them again (`measured_costs`): the key names the
host and its CPU, and a VM that moved to another host of the same name and CPU model would
otherwise keep deciding from the old host's curve. None ever raises: what does not fit in the
context is left out, and with no room at all a fixed profile stands in. The auto policy starts
from these numbers and `specgen bench` predicts speedups from them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import statistics
from pathlib import Path
from typing import TYPE_CHECKING

from specgen.decoding.clock import now
from specgen.decoding.costs import StepCosts
from specgen.llama.kernels import cpu_info
from specgen.storage import cache_dir, write_atomically

if TYPE_CHECKING:
    from specgen.llama.model import Model
    from specgen.llama.vocabmap import DraftVocabulary

SIZES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64)  # target batch sizes timed; others interpolated
DRAFT_SIZES = (1, 2, 4, 8, 16)  # a draft model drafts one token a pass, catches up in larger ones
DEPTH_SIZES = (4, 16, 64)  # target batch sizes timed again after a prompt, against one-token passes there
DEPTH_MIN = 256  # prompts shorter than this are priced at the calibration (passes there cost about as much)
_DEPTH_PAIRS = 3  # one-token passes timed between n-token ones per size, their ratios' median kept
_PASSES = 4  # passes in a row at most per size: one after another size, then its steady state
_STEADY_S = 0.1  # seconds a size's passes in a row may take (a costly size runs once)
SWEEPS = 3  # times a size is timed at most, each against the one-token pass before it; the median kept
_AGREE = 0.1  # a size whose timings in the sweeps before the last agree within this share skips the last
_VERSION = "4"  # of the cached tables: sizes to 64, dips kept, steady costs, the switch cost, medians of sweeps

# Seconds by batch size for the 1.5B target and 0.5B draft (Qwen2.5-Coder, Q4_K_M, 2 CPU threads,
# logits for every row). A seeded run that can neither read nor write cached costs decides from
# these, so its choices (and so its text) do not depend on timing noise; see `cached_costs`.
DEFAULT = StepCosts(
    {
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
    {1: 0.018, 2: 0.031, 4: 0.046, 8: 0.077, 16: 0.112},
    0.001,
)


def time_passes(
    model: Model | DraftVocabulary, sizes: tuple[int, ...] = SIZES, switching: bool = True
) -> tuple[dict[int, float], float]:
    """Seconds of one pass at each size that fits after the model's current cache (rolled back
    after each) where the pass before it had the same size, and what a pass costs more after one
    of another size (`StepCosts.switch`, from `_switch_cost`; 0 unless `switching`: the policy
    prices only the target's).

    Every size is timed in sweeps over the sizes (upward, downward, upward), each time in a row
    of passes (`_steady`) after one one-token pass, against which the row's cost is set: on
    shared cores the machine's pace drifts from second to second, and a ratio between
    neighbouring passes cancels the drift where a lone pass does not. The last of `SWEEPS` sweeps
    times again only the sizes whose ratios so far disagree (`_AGREE`). A size's cost is the
    median of its ratios times the median one-token cost, so one slow spell moves no size."""
    base = len(model.tokens)
    filler = model.tokens[-1] if model.tokens else (model.bos if model.bos >= 0 else 0)
    fits = [s for s in sizes if s <= min(model.n_ctx - base, model.n_batch)]
    if 1 not in fits:
        return {}, 0.0
    _passes(model, [1], base, filler)  # warm-up
    switch = _switch_cost(model, base, filler) if switching and 2 in fits else 0.0
    ratios: dict[int, list[float]] = {n: [] for n in fits}
    ones, last = [], 2 if switch else 1  # the size of the pass before
    for sweep in range(SWEEPS):
        sizes_now = fits if sweep < SWEEPS - 1 else [n for n in fits if not _agree(ratios[n])]
        for n in sizes_now if sweep % 2 == 0 else sizes_now[::-1]:
            lead = _passes(model, [1], base, filler)[0] - (switch if last != 1 else 0.0)
            steady = _steady(model, n, base, filler, switch)
            ratios[n].append(steady / max(lead, 1e-9))
            ones += [steady] if n == 1 else []
            last = n
    one = statistics.median(ones)
    return {n: one if n == 1 else one * statistics.median(ratios[n]) for n in fits}, switch


def _agree(ratios: list[float]) -> bool:
    """Whether a size's timings so far agree within `_AGREE` (its last sweep is then spared)."""
    return max(ratios) <= (1.0 + _AGREE) * min(ratios)


def _steady(model: Model | DraftVocabulary, n: int, base: int, filler: int, switch: float) -> float:
    """Seconds of an n-token pass after one of its size: passes in a row, as many as fit in
    `_STEADY_S` (at most `_PASSES`), the first after a pass of another size, the fastest of the
    others kept (on CUDA the second captures a graph, the third replays it); a costly size that
    ran once is its pass less the switch cost."""
    times = _passes(model, [n], base, filler)
    while len(times) < _PASSES and sum(times) < _STEADY_S:
        times += _passes(model, [n], base, filler)
    return min(times[1:]) if len(times) > 1 else max(times[0] - switch, 0.0)


def depth_factors(model: Model, costs: StepCosts) -> dict[int, float]:
    """How much dearer, against a one-token pass, each of `DEPTH_SIZES` is after what the
    model's cache holds (a prompt) than `costs` (the calibration, after an empty cache) say: a
    pass after a long context reads it for every row, so batched passes grow more than a
    one-token pass does, and a copy gains less there. Each size's passes alternate with
    one-token passes (n, 1, n, ... 1, n), and each one-token pass is set against the mean of the
    two beside it, so that the machine's drift cancels out; every pass follows one of another
    size and pays the switch cost (`costs.switch`), which is taken off. The factors: the median
    of those ratios over the calibration's, 1 for a one-token pass; none (an empty table:
    priced as calibrated) where the cache holds fewer than `DEPTH_MIN` tokens or the context
    has no room for the largest size. The cache is rolled back after each pass."""
    base = len(model.tokens)
    if base < DEPTH_MIN or model.n_ctx - base < DEPTH_SIZES[-1] or model.n_batch < DEPTH_SIZES[-1]:
        return {}
    factors = {1: 1.0}
    for n in DEPTH_SIZES:
        times = [
            max(t - costs.switch, 1e-9) for t in _passes(model, [n] + [1, n] * _DEPTH_PAIRS, base, model.tokens[-1])
        ]
        deep, one = times[0::2], times[1::2]
        ratios = [(deep[i] + deep[i + 1]) / 2.0 / one[i] for i in range(_DEPTH_PAIRS)]
        factors[n] = statistics.median(ratios) / (costs.verify_cost(n) / costs.verify_cost(1))
    return factors


def _switch_cost(model: Model | DraftVocabulary, base: int, filler: int) -> float:
    """The extra seconds of a pass whose size differs from the pass before it: 1- and 2-token
    passes alternating against each size's passes in a row (after the first of the row), twice
    over, medians compared; the lesser of the two sizes' differences, so that a burst of noise
    in one group does not read as a switch cost. The second time over runs the groups in the
    reverse order, so that a pace drifting all along weighs on the rows and the alternation alike."""
    same: dict[int, list[float]] = {1: [], 2: []}
    mixed: dict[int, list[float]] = {1: [], 2: []}
    for order in ((1, 2, 0), (0, 2, 1)):  # 0: the alternating passes
        for n in order:
            if n:
                same[n] += _passes(model, [n] * 4, base, filler)[1:]
                continue
            for size, seconds in zip([1, 2] * 3, _passes(model, [1, 2] * 3, base, filler), strict=True):
                mixed[size].append(seconds)
    extra = min(statistics.median(mixed[n]) - statistics.median(same[n]) for n in (1, 2))
    return max(extra, 0.0)


def _passes(model: Model | DraftVocabulary, sizes: list[int], base: int, filler: int) -> list[float]:
    """Seconds of a pass of each of `sizes` in turn, each rolled back to `base` after it."""
    out = []
    for n in sizes:
        start = now()
        model.forward([filler] * n, all_logits=True)
        out.append(now() - start)
        model.truncate(base)
    return out


def calibrate(target: Model, draft: Model | DraftVocabulary | None = None) -> StepCosts:
    """Time both models now (`time_passes`). The curve is kept as measured, dips included: on
    CPUs a 16-token batch can cost less than a 12-token one, and the policy sizes long copies to
    such batches. Where the context has no room for a single pass, the `DEFAULT` profile stands in."""
    return _measure(target, draft)[0]


def _measure(target: Model, draft: Model | DraftVocabulary | None) -> tuple[StepCosts, bool]:
    """The costs, and whether every size was measured (none left out for lack of room)."""
    verify, switch = time_passes(target)
    drafts = time_passes(draft, DRAFT_SIZES, switching=False)[0] if draft is not None else {}
    complete = set(verify) == {s for s in SIZES if s <= target.n_batch}
    if draft is not None:
        complete = complete and set(drafts) == {s for s in DRAFT_SIZES if s <= draft.n_batch}
    fallback = _default(draft)
    return StepCosts(
        verify if 1 in verify else fallback.verify,
        drafts if 1 in drafts or draft is None else fallback.draft,
        switch if 1 in verify else fallback.switch,
    ), complete


def cached_costs(target: Model, draft: Model | DraftVocabulary | None, seeded: bool = False) -> StepCosts:
    """`calibrate`'s result for this machine, these files and settings: from the cache, or
    measured once and cached.

    A seeded run must make the same choices every time, so it decides only from costs that
    are cached (read now, or measured now and written): when the cache folder cannot be written
    or the context left too little room to measure every size, it takes the fixed `DEFAULT`
    profile instead of fresh timings, which would differ from run to run. (Rounding fresh
    timings would not do: noise near a rounding edge still flips a choice.)
    """
    path = _path(target, draft)
    cached = _read(path)
    if cached is not None:
        return cached
    if seeded and not _writable(path):
        return _default(draft)
    costs, stored = _measured(target, draft)
    return costs if stored or not seeded else _default(draft)


def will_measure(target: Model, draft: Model | DraftVocabulary | None, seeded: bool = False) -> bool:
    """Whether `cached_costs` with these arguments would time the passes now (nothing usable is
    cached), so that a front end can say why the first reply is slow to start."""
    path = _path(target, draft)
    return _read(path) is None and not (seeded and not _writable(path))


def _read(path: Path) -> StepCosts | None:
    """The costs cached at `path`; None where there are none, or none that can be read."""
    try:
        data = json.loads(path.read_text())
        return StepCosts(_table(data["verify"]), _table(data["draft"]), float(data["switch"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def measured_costs(target: Model, draft: Model | DraftVocabulary | None) -> StepCosts:
    """`calibrate`'s result now, kept as the cached costs of these models where every size was
    measured: the latest measurement of this machine replaces an earlier one, so the runs after
    a `specgen bench` decide from the curve it reports."""
    return _measured(target, draft)[0]


def _measured(target: Model, draft: Model | DraftVocabulary | None) -> tuple[StepCosts, bool]:
    """The costs measured now, and whether they were written where `cached_costs` reads them
    (only where every size was measured)."""
    costs, complete = _measure(target, draft)
    data = {"verify": costs.verify, "draft": costs.draft, "switch": costs.switch}
    return costs, complete and write_atomically(_path(target, draft), json.dumps(data))


def forget_costs(target: Model, draft: Model | DraftVocabulary | None) -> bool:
    """Remove the cached costs of these models (measured, a reply showed, while the machine was
    busy), so that the next `cached_costs` measures again. Whether they were removed."""
    try:
        _path(target, draft).unlink()
    except OSError:
        return False
    return True


def _path(target: Model, draft: Model | DraftVocabulary | None) -> Path:
    return cache_dir() / "step-costs" / f"{_key(target, draft)}.json"


def _writable(path: Path) -> bool:
    """Whether a file can be written beside `path` (tried, and removed again)."""
    probe = path.with_name(f".probe-{os.getpid()}")
    if not write_atomically(probe, ""):
        return False
    with contextlib.suppress(OSError):
        probe.unlink()
    return True


def _default(draft: Model | DraftVocabulary | None) -> StepCosts:
    return StepCosts(dict(DEFAULT.verify), dict(DEFAULT.draft) if draft is not None else {}, DEFAULT.switch)


def _table(raw: dict[str, float]) -> dict[int, float]:
    table = {int(size): float(seconds) for size, seconds in raw.items()}
    if table and 1 not in table:
        raise ValueError("no single-token cost")
    return table


def _key(target: Model, draft: Model | DraftVocabulary | None) -> str:
    """Costs hold for these files and threads on this CPU: a VM moved to a CPU of another model or
    other features (another day, another host) measures again."""
    model_name, flags = cpu_info()
    parts = [
        _VERSION,
        platform.node(),
        platform.machine(),
        model_name,
        " ".join(sorted(flags)),
        str(target.threads),
        target.identity,
    ]
    parts.append(draft.identity if draft is not None else "-")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:24]
