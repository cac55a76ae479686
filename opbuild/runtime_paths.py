"""Locations inside the opbuild distribution that every stage may need.

In a source checkout (editable install) the top-level `schemas/` and `templates/` are used;
a wheel carries copies under `opbuild/_data/` (see setup.py).
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def _data_dir(name: str) -> Path:
    checkout = _PACKAGE_DIR.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / name).is_dir():
        return checkout / name
    return _PACKAGE_DIR / "_data" / name


def native_include_dir() -> Path:
    """The public C headers (opbuild/kernel.h, opbuild/tiling.h, ...) kernels compile against."""
    return _PACKAGE_DIR / "runtime" / "native" / "include"


def runtime_dir() -> Path:
    """opbuild/runtime/: where setup.py puts the native libraries (the simulator, the acl library)."""
    return _PACKAGE_DIR / "runtime"


def templates_dir() -> Path:
    """The Jinja2 templates of the code generator."""
    return _data_dir("templates")


def schemas_dir() -> Path:
    """The JSON schemas (op specs, models)."""
    return _data_dir("schemas")


def user_cache_dir() -> Path:
    """opbuild's per-user cache directory ($XDG_CACHE_HOME/opbuild, default ~/.cache/opbuild):
    what the runtime builds on first use (the torch ops' C++ kernel) is kept under it."""
    import os

    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "opbuild"
