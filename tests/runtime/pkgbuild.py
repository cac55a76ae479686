"""Building op packages for the runtime tests (used by tests/runtime/conftest.py and
tests/test_cli_explain.py).

The sample ops are built once per test session: SConstruct and ops/ are copied to the
session's base temp directory and `scons -j2 ops` runs there, so the tests never depend on (or
touch) the developer's out/. The result is reused by every fixture that asks for it in the same
session (a marker file records a finished build).

The build makes two packages under out/opp (issue 4): the custom vendor package
`vendors/customize` and the `built-in` package. SAMPLE_OP_PACKAGES says which sample op is in
which (the tests check the build against it); `package_of(op)` is the package a test uses for an
op: the custom one when the op is in both, as the runtime's search order prefers it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OPP = Path("out/opp")
CUSTOM, BUILTIN = "custom", "built-in"
PACKAGE_DIRS = {CUSTOM: Path("vendors/customize"), BUILTIN: Path("built-in")}
"""Each package's directory, relative to the OPP root."""
VENDOR = OPP / PACKAGE_DIRS[CUSTOM]

SAMPLE_OP_PACKAGES: dict[str, tuple[str, ...]] = {
    "AddCustomTemplate": (CUSTOM,),
    "AddNCustom": (CUSTOM,),
    "MulCustom": (CUSTOM, BUILTIN),
    "ReduceSumCustom": (BUILTIN,),
    "LeakyReluCustom": (BUILTIN,),
}
"""The packages of each sample op (ops/<op>/op.yaml `package:`), custom first."""
SAMPLE_OP_DOMAINS = {"MulCustom": "math", "ReduceSumCustom": "math", "LeakyReluCustom": "nn"}
"""The built-in domain of each built-in sample op (its ops_<domain> sub-package, libopapi_<domain>.so)."""


def package_of(op: str) -> str:
    """The package a test takes `op` from: the custom one when it is in both."""
    return SAMPLE_OP_PACKAGES[op][0]


def ops_in(kind: str) -> list[str]:
    """The sample ops of a package kind (CUSTOM or BUILTIN)."""
    return [op for op, kinds in SAMPLE_OP_PACKAGES.items() if kind in kinds]


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


def sample_opp(base_temp: Path) -> Path:
    """ops/ (the sample ops) built once under `base_temp` (a pytest session's base temp
    directory); the OPP root (out/opp) holding both packages."""
    root = base_temp / "opbuild_runtime_samples"
    done = root / ".built"
    if not done.is_file():
        if root.exists():
            shutil.rmtree(root)
        new_project(root)
        result = scons(root, "-j2", "ops")
        if result.returncode != 0:
            raise RuntimeError(f"scons ops failed in {root} (exit {result.returncode}):\n{result.stdout}\n{result.stderr}")
        (root / SUMMARY).write_text(result.stdout.strip().splitlines()[-1] + "\n")
        done.write_text("ok\n")
    return root / OPP


SUMMARY = "build-summary.txt"
"""The last line `scons -j2 ops` printed for the sample build (sample_opp), beside out/: the docs
show it (tests/test_docs.py holds them equal)."""


def sample_build_summary(base_temp: Path) -> str:
    """The summary line of the sample build (built first if needed)."""
    sample_opp(base_temp)
    return (base_temp / "opbuild_runtime_samples" / SUMMARY).read_text().strip()


def sample_package(base_temp: Path, kind: str = CUSTOM) -> Path:
    """One package (CUSTOM: vendors/customize, BUILTIN: built-in) of the sample build (sample_opp)."""
    return sample_opp(base_temp) / PACKAGE_DIRS[kind]
