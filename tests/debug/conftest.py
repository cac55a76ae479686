"""Fixtures of the debugging-tool tests (dump, compare, prof, memcheck).

`buggy_project`: examples/debugging/ops (BuggyAdd, whose attribute `bug` plants a wrong element,
a slow block or an out-of-bounds write) plus the AI CPU sample op NonZeroCustom, built once per
session in a project of its own; `buggy_package` its vendor package (vendors/debugging), `buggy_ops` the generated
Python aclnn module. Slow (tests/conftest.py BUILDING_FIXTURES).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))

import pkgbuild  # noqa: E402

EXAMPLE_OPS = pkgbuild.REPO / "examples" / "debugging" / "ops"
VENDOR = "debugging"
"""The package's vendor: its torch namespace (torch.ops.debugging) is its own, whatever other
tests registered (the sample packages' is torch.ops.customize)."""


@pytest.fixture(scope="session")
def buggy_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = pkgbuild.new_project(tmp_path_factory.mktemp("debugging"), ops=("non_zero_custom",))
    shutil.copytree(EXAMPLE_OPS / "buggy_add", root / "ops" / "buggy_add")
    pkgbuild.build_project(root, f"VENDOR={VENDOR}")
    return root


@pytest.fixture(scope="session")
def buggy_package(buggy_project: Path) -> Path:
    return buggy_project / pkgbuild.OPP / "vendors" / VENDOR


@pytest.fixture(scope="session")
def buggy_ops(buggy_package: Path):
    import opbuild.runtime as rt

    return rt.import_ops(buggy_package)


@pytest.fixture(autouse=True)
def _no_tool_left_on():
    """Every test ends with no dump or profile on (a failing one must not leak hooks)."""
    yield
    from opbuild.runtime.debug import dump, profile

    dump.stop()
    profile.stop()
