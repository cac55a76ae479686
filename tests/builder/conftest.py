"""Fixtures for the end-to-end build tests (`scons ops` in temporary projects).

    code          a snapshot of the repository's code for the session (PYTHONPATH of every run)
    project()     a fresh project (SConstruct + ops/) under tmp_path; project(code=...) for another code copy
    clean_build   one project built once with `scons -j2 ops` for the session (read-only: do not edit it)

Helpers (Project, Result, tree, mtimes, ...) live in build_helpers.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from build_helpers import Project, Result, snapshot_code


@pytest.fixture(scope="session")
def code(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return snapshot_code(tmp_path_factory.mktemp("code"))


@pytest.fixture
def project(tmp_path: Path, code: Path) -> Callable[..., Project]:
    count = 0

    def make(code_dir: Path = code) -> Project:
        nonlocal count
        count += 1
        return Project(tmp_path / f"project{count}", code_dir)

    return make


@pytest.fixture(scope="session")
def clean_build(tmp_path_factory: pytest.TempPathFactory, code: Path) -> tuple[Project, Result]:
    p = Project(tmp_path_factory.mktemp("clean") / "project", code)
    return p, p.build()
