"""specgen's own cache folder, and the one way it writes a file there.

Step costs, kernel verdicts and (on request) the lookup memory are small files that several
specgen processes may read and write at once: each is written whole to a temporary file beside
its place and moved over it, so a reader sees the old file or the new one, never half of one.
"""

from __future__ import annotations

import os
from pathlib import Path


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
        temporary.unlink(missing_ok=True)
        return False
