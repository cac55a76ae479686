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


def env_script(pc_dir: Path | None = None, packages: list[Path] = ()) -> str:
    """The `export` lines `opbuild env` prints (POSIX sh), prepending to any value already set;
    `packages`: op packages whose op_api/lib go first on LD_LIBRARY_PATH (what CANN's installer
    tells you to add for a custom package)."""
    pc = write_pc(pc_dir or default_pc_dir())
    exports = {**native_libs.environment(), "PKG_CONFIG_PATH": str(pc.parent)}
    libs = [str(Path(p).resolve() / "op_api" / "lib") for p in packages]
    exports["LD_LIBRARY_PATH"] = os.pathsep.join([*libs, exports["LD_LIBRARY_PATH"]])
    lines = []
    for name, value in exports.items():
        lines.append(f'export {name}={shlex.quote(value)}"${{{name}:+:${name}}}"')
    return "\n".join(lines) + "\n"


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
