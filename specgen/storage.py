"""specgen's own cache folder, and the one way it writes a file there.

Step costs, kernel verdicts and (on request) the lookup memory are small files that several
specgen processes may read and write at once: each is written whole to a temporary file beside
its place and moved over it, so a reader sees the old file or the new one, never half of one;
a file that several processes update goes through `update_locked`, so none loses another's.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]  # no module, so no lock: see update_locked


def cache_dir() -> Path:
    """specgen's cache folder: $SPECGEN_CACHE_DIR, else the platform's user cache folder."""
    if os.environ.get("SPECGEN_CACHE_DIR"):
        return Path(os.environ["SPECGEN_CACHE_DIR"]).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("specgen"))


def write_atomically(path: Path, data: str | bytes) -> bool:
    """Replace `path` with `data` in one step; False (and nothing left behind) when it cannot be written."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            temporary.write_bytes(data)
        else:
            temporary.write_text(data, encoding="utf-8")
        os.replace(temporary, path)
        return True
    except OSError:
        with contextlib.suppress(OSError):  # e.g. a parent that is a file: nothing to remove
            temporary.unlink(missing_ok=True)
        return False


def update_locked(path: Path, update: Callable[[bytes | None], bytes]) -> bool:
    """Read `path` (None if absent), write `update(old)` in its place, under an exclusive lock.

    Several specgen processes may share one file (a lookup memory): the lock on a `.lock` file
    beside it makes their read-merge-write steps take turns, so no process drops what another
    just wrote. Where there is no `fcntl` (Windows) the write is still atomic, only unlocked.
    False when the file cannot be locked or written.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_name(path.name + ".lock"), "a+b") as lock:
            if fcntl is not None:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            try:
                old = path.read_bytes() if path.exists() else None
            except OSError:
                old = None
            return write_atomically(path, update(old))
    except OSError:
        return False
