"""Fixtures: the sample ops built by `scons ops` in a temporary copy of the repository's
SConstruct + ops/, into the two packages of out/opp (issue 4), each with its generated aclnn
headers (op_api/include) and op API libraries (op_api/lib):

    vendors/customize  libcust_opapi.so                  AddCustomTemplate, AddNCustom, MulCustom
    built-in           libopapi.so (no op of its own),
                       libopapi_math.so                  MulCustom, ReduceSumCustom
                       libopapi_nn.so                    LeakyReluCustom

`package.lib_of(op)` is the library a program calls an op through: the custom package's when the
op is in both (op_fallback's search order, see opbuild.runtime.fallback)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from opapi_libs import OPAPI_LIBS  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
CUSTOM_LIB = "libcust_opapi.so"


@dataclass(frozen=True)
class Package:
    opp: Path         # <tmp>/out/opp
    root: Path        # opp/vendors/customize
    builtin: Path     # opp/built-in
    include: Path     # root/op_api/include (aclnn_<op>.h of the custom ops)
    lib: Path         # root/op_api/lib/libcust_opapi.so
    work: Path        # scratch directory for programs
    libs_by_op: dict[str, tuple[Path, ...]] = field(default_factory=dict)  # op -> its libraries, custom first

    @property
    def builtin_include(self) -> Path:
        return self.builtin / "op_api" / "include"

    def builtin_lib(self, domain: str | None = None) -> Path:
        return self.builtin / "op_api" / "lib" / (f"libopapi_{domain}.so" if domain else "libopapi.so")

    def lib_of(self, op: str) -> Path:
        """The library an application calls `op` through (the custom one when the op is in both)."""
        return self.libs_by_op[op][0]

    def libs_for(self, *ops: str) -> list[Path]:
        """The libraries to link for calling `ops`, each once, in search order."""
        wanted = {self.lib_of(op) for op in ops}
        order = [self.opp / d / "op_api" / "lib" / name for d, name in OPAPI_LIBS]
        return [lib for lib in order if lib in wanted]


def _run(cmd: list[str], cwd: Path | None = None) -> None:
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode:
        raise AssertionError(f"command failed ({proc.returncode}): {' '.join(map(str, cmd))}\n{proc.stdout}")


@pytest.fixture(scope="session")
def package(tmp_path_factory: pytest.TempPathFactory) -> Package:
    from opbuild.abi.native_libs import NativeLibraryMissing, acl_library

    try:
        acl_library()
    except NativeLibraryMissing as exc:
        pytest.skip(str(exc))
    tmp = tmp_path_factory.mktemp("capi")
    shutil.copy(REPO / "SConstruct", tmp / "SConstruct")
    shutil.copytree(REPO / "ops", tmp / "ops")
    _run([sys.executable, "-m", "SCons", "-C", str(tmp), "-Q", "ops", "-j2"])
    opp = tmp / "out" / "opp"
    libs_by_op: dict[str, list[Path]] = {}
    for (pkg_dir, name), ops in OPAPI_LIBS.items():
        lib = opp / pkg_dir / "op_api" / "lib" / name
        assert lib.is_file(), f"`scons ops` did not make {lib}"
        for op in ops:
            libs_by_op.setdefault(op, []).append(lib)
    root = opp / "vendors" / "customize"
    work = tmp / "work"
    work.mkdir()
    return Package(opp, root, opp / "built-in", root / "op_api" / "include", root / "op_api" / "lib" / CUSTOM_LIB,
                   work, {op: tuple(libs) for op, libs in libs_by_op.items()})
