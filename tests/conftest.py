"""The `slow` marker, applied where it is true: a test is slow when it needs a built package.

`python -m pytest -m "not slow"` is the fast loop (no `scons ops`, no package compile); CI runs
everything. A test is marked here when it uses (directly or through other fixtures) one of the
fixtures below, each of which runs `scons ops` or compiles whole op packages once per session;
a test module that builds in its own code says so itself with `pytestmark = pytest.mark.slow`.
"""

from __future__ import annotations

import pytest
from ccompiler import cc  # noqa: F401  (the fixture, for the tests of the C/Python border)

BUILDING_FIXTURES = frozenset({
    "project", "clean_build",  # tests/builder: `scons ops` in throw-away projects
    "package",  # tests/capi: the sample ops built (tests/runtime: the custom package of sample_opp)
    "opp",  # tests/fallback, tests/om, tests/test_cli_explain.py: the sample ops built
    "sample_opp", "probe_package",  # tests/runtime: the sample ops / ProbeCustom built
    "build", "real_build",  # tests/ops_c: every sample op compiled with -Werror
    "buggy_project",  # tests/debug: examples/debugging/ops (+ NonZeroCustom) built
})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slow = pytest.mark.slow
    for item in items:
        if BUILDING_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(slow)
