"""Issue 12 items 1-3: packages carry no path of the build machine, two checkouts at different
paths (each with its own copy of opbuild) build byte-identical out/opp/, and the second, with the
first's OPBUILD_CACHE_DIR, compiles nothing and restores every op from its bundle."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
from build_helpers import REPO, SAMPLE_AICPU_OPS, SAMPLE_BINARIES, snapshot_code, tree

pytestmark = pytest.mark.slow

SUMMARY = re.compile(r"^opbuild: ok: .*\((\d+) compiled, (\d+) from cache, (\d+) remote\)")


def _summary(stdout: str) -> tuple[int, int]:
    """(compiled, from cache) of the build's summary line."""
    m = SUMMARY.match(stdout.strip().splitlines()[-1])
    assert m, stdout[-2000:]
    return int(m.group(1)), int(m.group(2))


def _files_containing(root: Path, needles: list[str]) -> list[str]:
    found = []
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            path = Path(dirpath) / name
            data = path.read_bytes()
            found += [f"{path}: {n}" for n in needles if os.fsencode(n) in data]
    return found


def test_two_checkouts_at_different_paths_share_the_cache_and_build_identical_packages(project, tmp_path):
    cache = {"OPBUILD_CACHE_DIR": str(tmp_path / "cache")}
    first = project(snapshot_code(tmp_path / "a" / "code"))
    compiled, _ = _summary(first.build(env=cache).stdout)
    assert compiled > 0

    second = project(snapshot_code(tmp_path / "checkout-two" / "code"))  # another path, another opbuild copy
    result = second.build(env=cache)
    assert _summary(result.stdout)[0] == 0, result
    assert sorted(result.bundles()) == sorted([*SAMPLE_BINARIES, *SAMPLE_AICPU_OPS]), result.steps
    assert tree(second.out / "opp") == tree(first.out / "opp")

    # no byte of any file names a checkout, a copy of opbuild, the repository or the virtualenv
    for p in (first, second):
        needles = [str(p.root), str(p.code), str(REPO), sys.prefix, os.path.realpath(sys.prefix)]
        assert _files_containing(p.out / "opp", needles) == []


def test_scons_package_writes_the_installer_of_the_vendor_package(project, tmp_path):
    from opbuild.deploy.pack import pack, run_file_name

    p = project()
    result = p.scons("package", "OPS=AddNCustom")
    assert result.rc == 0, str(result)
    run = p.out / run_file_name()
    assert f"opbuild: wrote {run}" in result.stdout
    assert run.read_bytes() == pack(p.pkg, tmp_path / run.name).read_bytes()  # what `opbuild pack` writes
    assert p.scons("-c", "ops").rc == 0 and not run.exists()
