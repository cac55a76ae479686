"""Fixtures of the op_fallback tests.

`opp`: the sample ops built ONCE per session with `scons -C <tmp copy> ops -j2` (SConstruct +
ops/ copied to a temporary directory). The op API libraries are taken from that build when it
makes them (custom `vendors/customize/op_api/lib/libcust_opapi.so`, built-in
`built-in/op_api/lib/libopapi{,_<domain>}.so`); whichever is missing is made here the way the
build does: generated aclnn wrappers (opbuild.codegen.aclnn_c) compiled with
opbuild.abi.native_libs.opapi_command, custom ops into libcust_opapi.so, built-in ops into the
library of their domain (libopapi.so for none, always made), the built-in package's other files
copied from the custom package.

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
    made_here: tuple[str, ...]  # libraries this fixture had to build (empty once `scons ops` makes them)

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
    from opbuild.abi.native_libs import opapi_command
    from opbuild.codegen.aclnn_c import header_name, render_aclnn_header, render_aclnn_source, source_name
    from opbuild.spec import load_specs

    _require_acl()
    tmp = tmp_path_factory.mktemp("fallback")
    shutil.copy(REPO / "SConstruct", tmp / "SConstruct")
    shutil.copytree(REPO / "ops", tmp / "ops")
    _run([sys.executable, "-m", "SCons", "-C", str(tmp), "-Q", "ops", "-j2"])
    opp_dir = tmp / "out" / "opp"
    custom = opp_dir / "vendors" / "customize"
    builtin = opp_dir / "built-in"
    specs = load_specs([str(tmp / "ops")])
    gen = tmp / "fallback_gen"
    gen.mkdir()
    cmds: list[list[str]] = []
    made: list[str] = []

    def library(lib: Path, package: Path, group: list) -> None:
        include = package / "op_api" / "include"
        include.mkdir(parents=True, exist_ok=True)
        lib.parent.mkdir(parents=True, exist_ok=True)
        src_dir = gen / lib.stem
        src_dir.mkdir()
        sources = []
        for spec in group:
            (include / header_name(spec)).write_text(render_aclnn_header(spec))
            (src_dir / source_name(spec)).write_text(render_aclnn_source(spec))
            sources.append(src_dir / source_name(spec))
        if not sources:  # libopapi.so with no op of its own: ResetCacheThreadLocal through the acl library
            (src_dir / "empty.c").write_text("/* no op without a domain */\n"
                                             "extern void ResetCacheThreadLocal(void);\n"
                                             "void *opbuild_opapi_anchor(void) { return (void *)&ResetCacheThreadLocal; }\n")
            sources.append(src_dir / "empty.c")
        cmds.append([*opapi_command(sources, lib, [include]), "-Werror"])
        made.append(str(lib))

    custom_lib = custom / "op_api" / "lib" / "libcust_opapi.so"
    if not custom_lib.exists():
        library(custom_lib, custom, [s for s in specs if "custom" in s.packages])
    builtin_lib_dir = builtin / "op_api" / "lib"
    if not (builtin_lib_dir / "libopapi.so").exists():
        if not builtin.exists():  # the package's kernels, tiling and Python module: the custom package's
            api_dir = str(custom / "op_api")
            shutil.copytree(custom, builtin, ignore=lambda d, names: [n for n in names if d == api_dir
                                                                       and n in ("lib", "include")])
        by_domain: dict[str | None, list] = {None: []}
        for spec in specs:
            if "built-in" in spec.packages:
                by_domain.setdefault(spec.domain, []).append(spec)
        for domain, group in by_domain.items():
            library(builtin_lib_dir / (f"libopapi_{domain}.so" if domain else "libopapi.so"), builtin, group)
    _run_all(cmds)
    return Opp(opp_dir, custom, builtin, tuple(made))


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
