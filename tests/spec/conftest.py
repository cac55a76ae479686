"""Fixtures of the spec tests (helpers live in spec_helpers.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from spec_helpers import SAMPLES, sample_copy  # noqa: E402


@pytest.fixture
def samples_dir(tmp_path: Path) -> Path:
    """A copy of ops/ (all five samples) that validates even before the C sources exist."""
    root = tmp_path / "ops"
    root.mkdir()
    for name in SAMPLES:
        sample_copy(root, name)
    return root
