"""Under `opbuild memcheck`: kernels and AI CPU libraries come from the instrumented build beside
the package, never from the package itself.

`opbuild memcheck` builds the project's ops with the memory checker into `<project>/out/memcheck`
(OUT=out/memcheck: its own objects and manifest, so the plain `out/opp` is never touched) and runs
the command with OPBUILD_MEMCHECK_PACKAGES=`<plain opp>=<instrumented opp>` (os.pathsep between
pairs). The runtime reads the package as always (configs, kernel JSONs, tiling and op_proto
libraries) and loads each kernel binary and libcust_aicpu_kernels.so from the same relative path
of the instrumented tree (`instrumented`). A file missing there is an error, never the plain one;
a kernel from outside the redirected packages (another OPP the command found) runs unchecked, and
says so once on stderr (`warn_unchecked`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ENV = "OPBUILD_MEMCHECK_PACKAGES"
MEMCHECK_OUT = "out/memcheck"
"""Where `opbuild memcheck` builds, relative to the project (its OPP root: MEMCHECK_OUT/opp)."""


def pairs(value: str) -> list[tuple[Path, Path]]:
    """The (plain, instrumented) OPP roots of an OPBUILD_MEMCHECK_PACKAGES value; ValueError if malformed."""
    out = []
    for item in value.split(os.pathsep):
        plain, sep, instr = item.partition("=")
        if not sep or not plain or not instr:
            raise ValueError(f"{ENV}={value!r}: expected PLAIN_OPP=INSTRUMENTED_OPP (pairs separated by {os.pathsep!r})")
        out.append((Path(plain).resolve(), Path(instr).resolve()))
    return out


def instrumented(path: Path) -> Path:
    """The instrumented build's file for `path` when `path` is in a package the checker redirects
    (OPBUILD_MEMCHECK_PACKAGES), else `path`. ValueError when the instrumented build lacks it."""
    value = os.environ.get(ENV)
    if not value:
        return path
    real = path.resolve()
    for plain, instr in pairs(value):
        try:
            rel = real.relative_to(plain)
        except ValueError:
            continue
        target = instr / rel
        if not target.is_file():
            raise ValueError(f"the memory checker's build has no {rel} ({target} is missing; {ENV} maps {plain} "
                             f"to it): run `opbuild memcheck` again, it rebuilds (with the package's build options: "
                             f"--build-option SOC=..., VENDOR=...)")
        return target
    return path


_WARNED: set[Path] = set()


def warn_unchecked(path: Path) -> None:
    """One line on stderr (once per file) when the checker loads a binary it has no checked build
    of: its accesses are not checked, and the user should know rather than trust a clean run."""
    if not os.environ.get(ENV) or path in _WARNED:
        return
    _WARNED.add(path)
    print(f"opbuild memcheck: {path} is not in the checked build ({ENV}): its memory accesses are not "
          f"checked", file=sys.stderr)
