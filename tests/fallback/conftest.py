"""Fixtures of the op_fallback tests.

`opp`: the sample ops built ONCE per session with `scons -C <tmp copy> ops -j2` (SConstruct +
ops/ copied to a temporary directory): the custom package `vendors/customize` with
op_api/lib/libcust_opapi.so (AddCustomTemplate, AddNCustom, MulCustom) and the built-in package
`built-in` with op_api/lib/libopapi.so (no op: ResetCacheThreadLocal), libopapi_math.so
(MulCustom, ReduceSumCustom) and libopapi_nn.so (LeakyReluCustom).

`fakes`: fake op API libraries (fake_opapi.c) in their own package roots, for failure points.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
DOMAIN_LIBS = ("math", "nn", "cv", "transformer", "oam", "ras")


@dataclass(frozen=True)
class Opp:
    opp: Path          # <tmp>/out/opp (ASCEND_OPP_PATH)
    custom: Path       # opp/vendors/customize
    builtin: Path      # opp/built-in

    @property
    def custom_lib(self) -> Path:
        return self.custom / "op_api" / "lib" / "libcust_opapi.so"

    def builtin_lib(self, domain: str | None = None) -> Path:
        return self.builtin / "op_api" / "lib" / (f"libopapi_{domain}.so" if domain else "libopapi.so")

    @property
    def search_order(self) -> list[Path]:
        return [self.custom_lib, self.builtin_lib(), *(self.builtin_lib(d) for d in DOMAIN_LIBS)]


@dataclass(frozen=True)
class Fakes:
    full: Path         # a custom package root: libcust_opapi.so linked to the acl library
    no_acl: Path       # a custom package root: libcust_opapi.so without it (no ResetCacheThreadLocal)
    work: Path


def _run(cmd: list[str], cwd: Path | None = None) -> None:
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode:
        raise AssertionError(f"command failed ({proc.returncode}): {' '.join(map(str, cmd))}\n{proc.stdout}")


def _run_all(cmds: list[list[str]]) -> None:
    procs = [(cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
             for cmd in cmds]
    failures = []
    for cmd, proc in procs:
        out, _ = proc.communicate()
        if proc.returncode:
            failures.append(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{out}")
    if failures:
        raise AssertionError("\n".join(failures))


def _require_acl() -> None:
    from opbuild.abi.native_libs import NativeLibraryMissing, acl_library

    try:
        acl_library()
    except NativeLibraryMissing as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def opp(tmp_path_factory: pytest.TempPathFactory) -> Opp:
    _require_acl()
    tmp = tmp_path_factory.mktemp("fallback")
    shutil.copy(REPO / "SConstruct", tmp / "SConstruct")
    shutil.copytree(REPO / "ops", tmp / "ops")
    _run([sys.executable, "-m", "SCons", "-C", str(tmp), "-Q", "ops", "-j2"])
    opp_dir = tmp / "out" / "opp"
    found = Opp(opp_dir, opp_dir / "vendors" / "customize", opp_dir / "built-in")
    expected = [found.custom_lib, found.builtin_lib(), found.builtin_lib("math"), found.builtin_lib("nn")]
    missing = [str(p) for p in expected if not p.is_file()]
    assert not missing, f"`scons ops` did not make the op API libraries {missing}"
    return found


@pytest.fixture(scope="session")
def fakes(tmp_path_factory: pytest.TempPathFactory) -> Fakes:
    from opbuild.abi.native_libs import opapi_command

    _require_acl()
    tmp = tmp_path_factory.mktemp("fallback_fakes")
    full = tmp / "fake_full"
    no_acl = tmp / "fake_no_acl"
    for root in (full, no_acl):
        (root / "op_api" / "lib").mkdir(parents=True)
    src = HERE / "fake_opapi.c"
    cc = os.environ.get("CC") or "cc"
    _run_all([
        [*opapi_command([src], full / "op_api" / "lib" / "libcust_opapi.so"), "-Werror"],
        [cc, "-std=gnu11", "-O2", "-fPIC", "-shared", "-fvisibility=hidden", "-Wall", "-Werror", "-DFAKE_NO_ACL",
         "-o", str(no_acl / "op_api" / "lib" / "libcust_opapi.so"), str(src)],
    ])
    work = tmp / "work"
    work.mkdir()
    return Fakes(full, no_acl, work)


@pytest.fixture
def env(opp: Opp, monkeypatch: pytest.MonkeyPatch) -> Opp:
    """The environment of a CANN install whose OPP tree is the session's build."""
    monkeypatch.setenv("ASCEND_OPP_PATH", str(opp.opp))
    monkeypatch.delenv("ASCEND_CUSTOM_OPP_PATH", raising=False)
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    return opp


@pytest.fixture
def live():
    """Live acl objects of every kind (opbuild_acl_live_objects(-1))."""
    from opbuild.runtime import capi

    return lambda: capi.live_objects(-1)
