"""Writing generated files: atomically, and only when the content changed."""

from __future__ import annotations

import os
from pathlib import Path

from opbuild.atomic import atomic_write


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
    atomic_write(path, data)
    return True

