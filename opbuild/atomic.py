"""Atomic file writes: a reader, or a crash, never sees a partial file.

Used by every stage that writes files (generated sources, the build's caches and manifest,
.om output); it imports nothing of opbuild so that any stage can use it cheaply.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _default_mode() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


_FILE_MODE = _default_mode()


def atomic_write(path: str | os.PathLike[str], data: bytes | memoryview, mode: int = _FILE_MODE, prefix: str | None = None) -> None:
    """Write `data` to `path` through a temporary file in the same directory and os.replace: a
    reader (or a crash) never sees a partial file. The directory must exist."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=prefix or f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
