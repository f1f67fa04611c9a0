"""The SHA-256 of a downloaded model file, and the record that it was checked, so it is checked once.

Checking a download against the hub's SHA-256 reads the whole file (gigabytes), so the verdict is
kept in specgen's cache folder (`verified/`, one small JSON file per checked file), tied to the
file's real path, size and modification time: later runs trust it while the file is unchanged
and check again once it changes. The record is written whole or not at all. This module only
reads and writes local files; hub.py asks the hub for the SHA-256 to compare with.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from specgen.storage import cache_dir, write_atomically

BLOCK = 1 << 20  # bytes hashed per read


@dataclass(frozen=True)
class Verdict:
    """What one check of a file found."""

    sha256: str  # the file's own SHA-256; "" when there was nothing to compare it with
    verified: bool  # True: it equals the hub's; False: the hub gives no SHA-256 for the file (not in LFS)
    checked_at: float  # when the check ran (seconds since the epoch)


def file_sha256(path: Path) -> str:
    """The SHA-256 of the file's bytes, as lowercase hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def recorded(path: Path) -> Verdict | None:
    """The verdict kept for the file at `path` while it is unchanged since; None if there is none."""
    real = path.resolve()
    try:
        record = json.loads(_record_path(real).read_text(encoding="utf-8"))
        stat = real.stat()
        if (record["file"], record["size"], record["mtime_ns"]) != (str(real), stat.st_size, stat.st_mtime_ns):
            return None
        return Verdict(str(record["sha256"]), bool(record["verified"]), float(record["checked_at"]))
    except (OSError, ValueError, KeyError, TypeError):  # no record, or one this version cannot read
        return None


def record(path: Path, verdict: Verdict) -> None:
    """Keep `verdict` for the file at `path` as it is now (where the cache folder is not writable
    nothing is kept, and the file is checked again next time)."""
    real = path.resolve()
    stat = real.stat()
    entry = {
        "file": str(real),
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "sha256": verdict.sha256,
        "verified": verdict.verified,
        "checked_at": verdict.checked_at,
    }
    write_atomically(_record_path(real), json.dumps(entry, indent=1) + "\n")


def records_folder() -> Path:
    return cache_dir() / "verified"


def _record_path(real: Path) -> Path:
    return records_folder() / f"{hashlib.sha1(str(real).encode()).hexdigest()}.json"
