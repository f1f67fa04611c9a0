"""The step-cost cache as tests plant it: a table measured on this machine, rewritten as if it had
been measured while the machine was busy."""

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
