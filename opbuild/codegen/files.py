"""Writing generated files: atomically, and only when the content changed."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_umask()


def write_if_changed(path: str | os.PathLike[str], text: str | bytes) -> bool:
    """Write `text` (str as UTF-8) to `path` unless it already holds exactly that; True if written.

    The new content goes to a temporary file in the same directory which then replaces `path`
    (os.replace), so readers see the old or the new file, never a partial one. Parent
    directories are created. An unchanged file keeps its mtime, so nothing downstream rebuilds.
    """
    path = Path(path)
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    try:
        if path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data, _FILE_MODE)
    return True


def atomic_write(path: str | os.PathLike[str], data: bytes, mode: int = _FILE_MODE, prefix: str | None = None) -> None:
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
