"""One build at a time per output directory: an exclusive lock on `out/`.

Two `scons ops` in one tree would restore bundles, stage and rename the same files at once (one
failed with ENOENT in 3 of 4 rounds). The build takes `flock(LOCK_EX)` on the output directory
itself (no lock file: nothing to clean up, and a killed build releases it with its process)
just before it writes anything; a second build prints one line and waits for the first to end,
then builds (usually finding everything current). The directory is created only then, so a
build stopped by a spec error earlier still leaves no `out/`.
"""

from __future__ import annotations

import fcntl
import os
import sys
from pathlib import Path

_HELD: dict[str, int] = {}
"""Locked directories -> their open descriptors (held until the process exits)."""


def lock_output(out: Path) -> None:
    """Hold the lock on `out` (created if missing) until this process exits; wait for another
    build holding it, saying so on one line. OSError (naming `out`) if it cannot be taken."""
    key = os.path.abspath(out)
    if key in _HELD:
        return
    os.makedirs(key, exist_ok=True)
    fd = os.open(key, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            sys.stdout.write(f"opbuild: waiting for another build of {out} to finish (it holds the lock on {out})\n")
            sys.stdout.flush()
            fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    _HELD[key] = fd
