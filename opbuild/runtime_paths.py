"""Locations inside the installed opbuild distribution that every stage may need."""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def native_include_dir() -> Path:
    """The public C headers (opbuild/kernel.h, opbuild/tiling.h, ...) kernels compile against."""
    return _PACKAGE_DIR / "runtime" / "native" / "include"


def templates_dir() -> Path:
    """The Jinja2 templates of the code generator (top-level `templates/` of the repository)."""
    return _PACKAGE_DIR.parent / "templates"
