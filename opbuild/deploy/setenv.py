"""`opbuild env` and `opbuild config`: how C programs find opbuild's acl library, the CANN way.

CANN's `set_env.sh` exports the library path so that programs and op API libraries find
`libascendcl.so` by name. `opbuild env` prints the same for opbuild (`eval "$(opbuild env)"`):
LD_LIBRARY_PATH to the acl library (its fixed name, opbuild/abi/native_libs.py), and
PKG_CONFIG_PATH to a directory holding `opbuild.pc`, written there on demand (the paths of this
install are only known once installed). `opbuild config --cflags --libs` prints the same flags
as `pkg-config --cflags --libs opbuild`.
"""

from __future__ import annotations

import hashlib
import os
import shlex
from pathlib import Path
from typing import Sequence

from opbuild.abi import native_libs
from opbuild.abi.package_layout import opapi_lib_dir, opapi_lib_names
from opbuild.atomic import atomic_write

PC_NAME = "opbuild.pc"


def default_pc_dir() -> Path:
    """Where `opbuild env` writes opbuild.pc: one directory per opbuild install, under the user's
    cache ($XDG_CACHE_HOME or ~/.cache)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    install = hashlib.sha256(str(native_libs.acl_library_dir()).encode()).hexdigest()[:16]
    return Path(base) / "opbuild" / "pkgconfig" / install


def write_pc(directory: Path) -> Path:
    """`directory`/opbuild.pc (created, or rewritten if different)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / PC_NAME
    text = native_libs.pkg_config_text().encode()
    try:
        if path.read_bytes() == text:
            return path
    except OSError:
        pass
    atomic_write(path, text)
    return path


def env_script(pc_dir: Path | None = None, packages: Sequence[Path] = ()) -> tuple[str, list[str]]:
    """(the `export` lines `opbuild env` prints (POSIX sh), prepending to any value already set;
    warnings for stderr). `packages`: op packages whose op_api/lib go first on LD_LIBRARY_PATH (what
    CANN's installer tells you to add for a custom package). The warnings name op API libraries
    that the resulting LD_LIBRARY_PATH (with the caller's current one) holds twice."""
    pc = write_pc(pc_dir or default_pc_dir())
    exports = {**native_libs.environment(), "PKG_CONFIG_PATH": str(pc.parent)}
    libs = [str(Path(p).resolve() / opapi_lib_dir()) for p in packages]
    exports["LD_LIBRARY_PATH"] = os.pathsep.join([*libs, exports["LD_LIBRARY_PATH"]])
    lines = []
    for name, value in exports.items():
        lines.append(f'export {name}={shlex.quote(value)}"${{{name}:+:${name}}}"')
    resulting = os.pathsep.join([exports["LD_LIBRARY_PATH"], os.environ.get("LD_LIBRARY_PATH", "")])
    return "\n".join(lines) + "\n", duplicate_library_warnings(resulting)


def duplicate_library_warnings(ld_library_path: str) -> list[str]:
    """One warning per op API library name (libcust_opapi.so, libopapi.so, ...) found in more than one
    directory of `ld_library_path`: the loader finds a library by name, so a program linked with
    `-lcust_opapi` loads the first one whatever package it was built against, and then fails with
    "undefined symbol: aclnn<Op>" (or runs another vendor's op of the same name)."""
    warnings = []
    dirs = list(dict.fromkeys(d for d in ld_library_path.split(os.pathsep) if d))
    for name in opapi_lib_names():
        holding = [d for d in dirs if (Path(d) / name).is_file()]
        if len(holding) > 1:
            listed = "; ".join(f"{d} ({_aclnn_count(Path(d))})" for d in holding)
            warnings.append(f"warning: {name} is in {len(holding)} directories of LD_LIBRARY_PATH: {listed}. "
                            f"A program linked with -l{name[3:-3]} loads the first whatever package it was built "
                            f"against; link the other one by path with an rpath (-Wl,-rpath,DIR), or list only its "
                            f"package (--package)")
    return warnings


def _aclnn_count(lib_dir: Path) -> str:
    """`3 aclnn headers` of the package whose op_api/lib is `lib_dir` (what it serves), for a warning."""
    include = lib_dir.parent / "include"
    count = len(list(include.glob("aclnn_*.h"))) if include.is_dir() else 0
    return f"{count} aclnn header{'s' if count != 1 else ''} in {include}" if count else "no aclnn headers beside it"


def config_flags(cflags: bool, libs: bool, packages: Sequence[Path] = ()) -> list[str]:
    """What `opbuild config` prints: compile flags, link flags (the acl library; with packages,
    their headers and every op API library of each, custom or built-in, in the order given)."""
    flags: list[str] = []
    if cflags:
        flags += native_libs.acl_cflags()
    for package in packages:
        pkg = native_libs.package_flags(package)
        flags += [f for f in pkg if f.startswith("-I")] if cflags else []
        flags += [f for f in pkg if not f.startswith("-I")] if libs else []
    if libs:
        flags += native_libs.acl_libs()
    return flags
