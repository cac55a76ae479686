"""Building op packages for the runtime tests (used by tests/runtime/conftest.py and
tests/test_cli_explain.py).

The sample package is built once per test session: SConstruct and ops/ are copied to the
session's base temp directory and `scons -j2 ops` runs there, so the tests never depend on (or
touch) the developer's out/. The result is reused by every fixture that asks for it in the same
session (a marker file records a finished build).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VENDOR = Path("out/opp/vendors/customize")


def scons(project: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run scons in `project` (no shared build cache); the completed process."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPBUILD_CACHE_DIR", "SCONSFLAGS")}
    return subprocess.run([sys.executable, "-m", "SCons", "-Q", *args], cwd=project, env=env, capture_output=True,
                          text=True, timeout=timeout)


def build_project(project: Path, *args: str) -> Path:
    """`scons -j2 ops` in a project directory; the vendor package it produced."""
    result = scons(project, "-j2", "ops", *args)
    if result.returncode != 0:
        raise RuntimeError(f"scons ops failed in {project} (exit {result.returncode}):\n{result.stdout}\n{result.stderr}")
    return project / VENDOR


def new_project(root: Path, ops: tuple[str, ...] | None = None) -> Path:
    """A project directory with the repository's SConstruct and a copy of ops/ (only the named
    op directories when `ops` is given)."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy2(REPO / "SConstruct", root / "SConstruct")
    if ops is None:
        shutil.copytree(REPO / "ops", root / "ops", dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        return root
    (root / "ops").mkdir(exist_ok=True)
    for op in ops:
        shutil.copytree(REPO / "ops" / op, root / "ops" / op, dirs_exist_ok=True)
    return root


def sample_package(base_temp: Path) -> Path:
    """ops/ (the sample ops) built once under `base_temp` (a pytest session's base temp directory)."""
    root = base_temp / "opbuild_runtime_samples"
    done = root / ".built"
    package = root / VENDOR
    if done.is_file():
        return package
    if root.exists():
        shutil.rmtree(root)
    new_project(root)
    build_project(root)
    done.write_text("ok\n")
    return package
