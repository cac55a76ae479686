"""Collection of the whole suite.

pytest's default `norecursedirs` includes `build`, so `python -m pytest` (the README's and CI's
test command) would silently skip tests/build, the end-to-end `scons ops` tests. This collects
that one directory anyway (an explicit --ignore still wins); every other default stays.
"""

from __future__ import annotations

from pathlib import Path

import pytest

_BUILD_TESTS = Path(__file__).resolve().parent / "build"


@pytest.hookimpl(tryfirst=True)
def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if collection_path.resolve() != _BUILD_TESTS:
        return None
    ignored = [Path(p).resolve() for p in config.getoption("ignore") or []]
    if _BUILD_TESTS in ignored or any(_BUILD_TESTS.is_relative_to(p) for p in ignored):
        return True
    return False
