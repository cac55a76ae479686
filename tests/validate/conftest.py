"""Fixtures for the validate tests: a validate cache for the session, and for the `scons ops`
runs a snapshot of the repository's code (tests/builder/build_helpers.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "builder"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "spec"))


@pytest.fixture(scope="session")
def validate_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Compiled tiling sources, shared by the session's `opbuild validate` runs."""
    return tmp_path_factory.mktemp("validate-cache")


@pytest.fixture(scope="session")
def code(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from build_helpers import snapshot_code

    return snapshot_code(tmp_path_factory.mktemp("code"))
