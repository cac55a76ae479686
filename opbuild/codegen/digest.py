"""The generator's own files: the build makes them dependencies of everything they render."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import opbuild
from opbuild.codegen.env import TEMPLATES_DIR

_PKG = Path(opbuild.__file__).resolve().parent
_ROOT = _PKG.parent


def _generator_files() -> tuple[Path, ...]:
    files = set(_PKG.joinpath("codegen").glob("*.py")) | set(_PKG.joinpath("keys").glob("*.py"))
    files |= {_PKG / "abi" / name for name in ("vocabulary.py", "ge_types.py", "package_layout.py", "kernel_launch.py")}
    files.add(_PKG / "spec" / "model.py")
    files |= set(TEMPLATES_DIR.glob("*.j2"))  # not templates/scaffold/: that is not rendered here
    files |= {_PKG / "spec" / "serialize.py", _PKG / "spec" / "fields.py"}  # spec_to_dict, in the Python module
    return tuple(sorted(f for f in files if f.is_file()))


GENERATOR_FILES: tuple[Path, ...] = _generator_files()
"""Every module and template whose content affects generated output (absolute paths, sorted):
opbuild/codegen/*.py, opbuild/keys/*.py, templates/*.j2, and the vocabulary and GE tables, package layout, kernel launch ABI and
spec model they read."""


@functools.lru_cache(maxsize=1)
def generator_digest() -> str:
    """sha256 over GENERATOR_FILES (relative path and content of each), computed once per process."""
    h = hashlib.sha256()
    for f in GENERATOR_FILES:
        rel = f.relative_to(_ROOT).as_posix() if f.is_relative_to(_ROOT) else f.name
        data = f.read_bytes()
        h.update(f"{rel}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()
