"""`opbuild import ascendc` compiles the host source and the bridge core as the build will and
records the objects (opbuild/builder/reuse.py): the first `scons ops` takes them instead of
compiling, the package is byte for byte the one a build without them makes, and an edit since the
import (or a damaged entry) is a compile as before."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
LOOKALIKE = HERE / "ops" / "add_ascendc"

pytestmark = pytest.mark.slow

HOST_COMPILES = 2
"""What an import leaves for the build: the op's host object and the bridge core."""


def _env(validate: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPBUILD_CACHE_DIR", "SCONSFLAGS")}
    env["OPBUILD_VALIDATE_CACHE"] = str(validate)
    return env


def _project(where: Path) -> Path:
    (where / "ops").mkdir(parents=True)
    shutil.copy2(REPO / "SConstruct", where / "SConstruct")
    return where


def _cann_project(where: Path) -> Path:
    shutil.copytree(LOOKALIKE / "op_host", where / "op_host")
    shutil.copytree(LOOKALIKE / "op_kernel", where / "op_kernel")
    return where


def _import(cann: Path, project: Path, env: dict[str, str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "opbuild", "import", "ascendc", str(cann), "-o", str(project / "ops")],
                          env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _build(project: Path, env: dict[str, str]) -> tuple[int, int]:
    """(compiled, from cache) of `scons ops` in `project`."""
    import re

    proc = subprocess.run([sys.executable, "-m", "SCons", "-Q", "-j2", "ops"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    m = re.search(r"^opbuild: ok: .*\((\d+) compiled, (\d+) from cache", proc.stdout, re.M)
    assert m, proc.stdout[-2000:]
    return int(m.group(1)), int(m.group(2))


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_first_build_after_an_import_takes_its_objects(tmp_path):
    cann = _cann_project(tmp_path / "cann")
    env = _env(tmp_path / "validate")
    project = _project(tmp_path / "project")
    _import(cann, project, env)
    compiled, cached = _build(project, env)
    assert cached == HOST_COMPILES
    # the same op built with nothing recorded (another validate cache): every compile runs, and
    # the packages are equal byte for byte
    other = _project(tmp_path / "other")
    shutil.copytree(project / "ops" / "add_ascendc", other / "ops" / "add_ascendc")
    compiled_alone, cached_alone = _build(other, _env(tmp_path / "validate-other"))
    assert (compiled_alone, cached_alone) == (compiled + HOST_COMPILES, 0)
    assert _files(project / "out" / "opp") == _files(other / "out" / "opp")


def test_an_edit_since_the_import_is_compiled(tmp_path):
    """A header beside the host source edited after the import: its object is not taken (the
    core, which does not read it, still is); a damaged recorded object is not taken either."""
    cann = _cann_project(tmp_path / "cann")
    env = _env(tmp_path / "validate")
    project = _project(tmp_path / "project")
    _import(cann, project, env)
    header = project / "ops" / "add_ascendc" / "op_host" / "add_ascendc_tiling.h"
    header.write_text(header.read_text() + "\n// edited after the import\n")
    _, cached = _build(project, env)
    assert cached == HOST_COMPILES - 1
    # a second project: the recorded objects damaged (same size, other bytes)
    second = _project(tmp_path / "second")
    _import(cann, second, env)
    for obj in (tmp_path / "validate" / "objects").glob("object-*.o"):
        data = bytearray(obj.read_bytes())
        data[len(data) // 2] ^= 0xFF
        obj.write_bytes(bytes(data))
    _, cached = _build(second, env)
    assert cached == 0
