"""Running the scripts under benchmarks/scripts from the tests of tests/benchmarks: where they
are, and one call that runs a Python script with this interpreter from the repository root."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "benchmarks" / "scripts"
RESULTS = ROOT / "benchmarks" / "results"


def script(name: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run benchmarks/scripts/NAME with this Python from the repository root."""
    return subprocess.run(
        [sys.executable, str(SCRIPTS / name), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])},
    )


def ran(result: subprocess.CompletedProcess) -> str:
    """A script's stdout, once it exited 0 (else its stderr's end, as the failure)."""
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout
