"""Fixtures: the sample ops built into a package in a temporary copy of the repository's
SConstruct + ops/, with the generated aclnn headers and wrappers compiled into
op_api/lib/libcust_opapi.so (the step `scons ops` will do; see opbuild.abi.native_libs)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Package:
    root: Path        # <tmp>/out/opp/vendors/customize
    include: Path     # root/op_api/include (aclnn_<op>.h)
    lib: Path         # root/op_api/lib/libcust_opapi.so
    work: Path        # scratch directory for programs


def _run(cmd: list[str], cwd: Path | None = None) -> None:
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode:
        raise AssertionError(f"command failed ({proc.returncode}): {' '.join(map(str, cmd))}\n{proc.stdout}")


@pytest.fixture(scope="session")
def package(tmp_path_factory: pytest.TempPathFactory) -> Package:
    from opbuild.abi.native_libs import NativeLibraryMissing, acl_library, opapi_command
    from opbuild.codegen.aclnn_c import header_name, render_aclnn_header, render_aclnn_source, source_name
    from opbuild.spec import load_specs

    try:
        acl_library()
    except NativeLibraryMissing as exc:
        pytest.skip(str(exc))
    tmp = tmp_path_factory.mktemp("capi")
    shutil.copy(REPO / "SConstruct", tmp / "SConstruct")
    shutil.copytree(REPO / "ops", tmp / "ops")
    _run([sys.executable, "-m", "SCons", "-C", str(tmp), "-Q", "ops"])
    root = tmp / "out" / "opp" / "vendors" / "customize"
    include = root / "op_api" / "include"
    lib_dir = root / "op_api" / "lib"
    gen = tmp / "gen"
    for d in (include, lib_dir, gen):
        d.mkdir(parents=True, exist_ok=True)
    sources = []
    for spec in load_specs([str(tmp / "ops")]):
        (include / header_name(spec)).write_text(render_aclnn_header(spec))
        (gen / source_name(spec)).write_text(render_aclnn_source(spec))
        sources.append(gen / source_name(spec))
    lib = lib_dir / "libcust_opapi.so"
    _run([*opapi_command(sources, lib, [include]), "-Werror"])
    work = tmp / "work"
    work.mkdir()
    return Package(root, include, lib, work)
