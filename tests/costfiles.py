"""The step-cost cache as tests plant it: a table measured on this machine, rewritten as if it had
been measured while the machine was busy, or with passes whose cost does not depend on how busy
it was (flat, no switch cost), so that a seeded run decides the same way under any load."""

from __future__ import annotations

import json
from pathlib import Path


def plant_slow_costs(folder: Path, times: float = 50.0) -> Path:
    """The one cached cost table in `folder`, its passes made `times` as dear; its path."""
    [stored] = (folder / "step-costs").glob("*.json")
    measured = json.loads(stored.read_text())
    stored.write_text(
        json.dumps(
            {
                **measured,
                "verify": {n: times * s for n, s in measured["verify"].items()},
                "draft": {n: times * s for n, s in measured["draft"].items()},
            }
        )
    )
    return stored


def plant_pinned_costs(folder: Path, flat: bool, one: float | None = None) -> Path:
    """The one cached cost table in `folder` with a change of pass size made free (as on a CPU with
    a real model, 0.1 ms of a 30 ms pass there; the tiny models' passes take 0.07 ms and a change
    of size 0.05 ms more, so the loss bound would hold the copies of a short reply back), and with
    `flat`, every pass costing what a one-token pass does (as on a GPU), which is `one` seconds
    where given (a real model's pass, against which weighing a round's drafts, a few tenths of a
    millisecond of Python, is cheap as it is there; on the tiny models it costs several passes and
    auto's look budget weighs few rounds); its path."""
    [stored] = (folder / "step-costs").glob("*.json")
    measured = json.loads(stored.read_text())
    one = measured["verify"]["1"] if one is None else one
    verify = dict.fromkeys(measured["verify"], one) if flat else measured["verify"]
    stored.write_text(json.dumps({**measured, "verify": verify, "switch": 0.0}))
    return stored
