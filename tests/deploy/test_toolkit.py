"""`opbuild toolkit install/uninstall` (opbuild/deploy/toolkit.py): the layout, setenv.bash from a
plain shell (`env -i`, no virtualenv), a CMake app linking CANN's library names built and run
against T, the up-to-date / --force / atomic rules, and uninstall."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import opbuild
from opbuild.abi.native_libs import NativeLibraryMissing, acl_library
from opbuild.abi.vocabulary import SOCS
from opbuild.cli import main
from opbuild.deploy import toolkit

try:
    acl_library()
except NativeLibraryMissing as exc:  # pragma: no cover - a checkout without `pip install -e .`
    pytest.skip(str(exc), allow_module_level=True)

ARCH = toolkit.lib_dir_name()

APP_CMAKE = """cmake_minimum_required(VERSION 3.5.1)
project(toolkit_app)
add_compile_options(-std=c++11)
set(INC_PATH $ENV{DDK_PATH})
set(LIB_PATH $ENV{NPU_HOST_LIB})
include_directories(${INC_PATH}/include)
link_directories(${LIB_PATH})
add_executable(app main.cpp)
target_link_libraries(app ascendcl acl_op_compiler nnopbase stdc++)
"""

APP_MAIN = r"""#include <cstdio>
#include <cstring>
#include "acl/acl.h"
#include "aclnn/acl_meta.h"
int main() {
    if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) { printf("init failed\n"); return 1; }
    float host[4] = {1, 2, 3, 4}, back[4] = {0};
    void *dev = nullptr;
    if (aclrtMalloc(&dev, sizeof host, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return 2;
    aclrtMemcpy(dev, sizeof host, host, sizeof host, ACL_MEMCPY_HOST_TO_DEVICE);
    aclrtMemcpy(back, sizeof back, dev, sizeof back, ACL_MEMCPY_DEVICE_TO_HOST);
    int64_t dims[1] = {4}, strides[1] = {1};
    aclTensor *t = aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 1, dev);
    if (t == nullptr) return 3;
    aclDestroyTensor(t);
    aclrtFree(dev);
    aclrtResetDevice(0);
    aclFinalize();
    if (memcmp(host, back, sizeof host) != 0) { printf("mismatch\n"); return 4; }
    printf("test pass\n");
    return 0;
}
"""


def _plain_bash(script: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`script` in bash with an empty environment but PATH=/usr/bin:/bin (no virtualenv)."""
    return subprocess.run(["env", "-i", "PATH=/usr/bin:/bin", f"HOME={os.environ.get('HOME', '/tmp')}",
                           "bash", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def tk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    prefix = tmp_path_factory.mktemp("toolkit") / "latest"
    assert main(["toolkit", "install", "--prefix", str(prefix)]) == 0
    return prefix


def test_layout(tk: Path) -> None:
    for rel in ("bin/setenv.bash", "set_env.sh", "bin/msopgen", "bin/atc", "bin/opbuild", "include/acl/acl.h",
                "include/aclnn/acl_meta.h", f"{ARCH}/include/acl/acl.h", "lib64/libascendcl.so",
                "compiler/version.info", "opp/vendors/config.ini"):
        assert (tk / rel).exists(), rel
    for lib in toolkit.LIBRARY_NAMES:
        assert (tk / ARCH / "lib64" / lib).resolve() == acl_library().resolve()
    for soc in SOCS:
        ini = (tk / ARCH / "data" / "platform_config" / f"{soc.soc_version}.ini").read_text()
        assert f"vector_core_cnt={soc.vector_core_num}\n" in ini and f"ub_size={soc.ub_size}\n" in ini
    assert (tk / "compiler" / "version.info").read_text().startswith("Version=")
    # every header of the runtime's include directory is copied (the Ascend C ones too, when there)
    from opbuild.runtime_paths import native_include_dir
    headers = {p.relative_to(native_include_dir()) for p in native_include_dir().rglob("*.h")}
    assert headers and all((tk / "include" / h).is_file() for h in headers)


def test_setenv_from_plain_shell(tk: Path) -> None:
    proc = _plain_bash(f"source {tk}/bin/setenv.bash && command -v msopgen atc opbuild && "
                       "echo HOME=$ASCEND_HOME_PATH OPP=$ASCEND_OPP_PATH LD=$LD_LIBRARY_PATH && opbuild --help")
    assert proc.returncode == 0, proc.stderr
    assert f"{tk}/bin/msopgen\n{tk}/bin/atc\n{tk}/bin/opbuild\n" in proc.stdout
    assert f"HOME={tk} OPP={tk}/opp LD={tk}/{ARCH}/lib64" in proc.stdout
    assert "toolkit" in proc.stdout  # the wrapper ran this opbuild


def test_msopgen_wrapper_runs_from_plain_shell(tk: Path) -> None:
    proc = _plain_bash(f"source {tk}/set_env.sh && msopgen --help")
    assert proc.returncode == 0, proc.stderr
    assert "gen" in proc.stdout


@pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("c++") is None, reason="needs cmake and c++")
def test_cmake_app_links_cann_library_names_and_runs(tk: Path, tmp_path: Path) -> None:
    (tmp_path / "CMakeLists.txt").write_text(APP_CMAKE)
    (tmp_path / "main.cpp").write_text(APP_MAIN)
    proc = _plain_bash(f"source {tk}/bin/setenv.bash && export DDK_PATH={tk} "
                       f"NPU_HOST_LIB={tk}/{ARCH}/lib64 && cmake -B build -DCMAKE_SKIP_RPATH=TRUE >/dev/null "
                       "&& cmake --build build >/dev/null && ./build/app", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith("test pass")


def test_reinstall_is_up_to_date_and_different_content_needs_force(tmp_path: Path, capsys) -> None:
    prefix = tmp_path / "T"
    assert main(["toolkit", "install", "--prefix", str(prefix)]) == 0
    capsys.readouterr()
    assert main(["toolkit", "install", "--prefix", str(prefix)]) == 0
    assert "up to date" in capsys.readouterr().out
    (prefix / "compiler" / "version.info").write_text("Version=other\n")
    assert main(["toolkit", "install", "--prefix", str(prefix)]) == 1
    err = capsys.readouterr().err
    assert "compiler/version.info" in err and "--force" in err
    assert (prefix / "compiler" / "version.info").read_text() == "Version=other\n"  # nothing written
    assert main(["toolkit", "install", "--prefix", str(prefix), "--force"]) == 0
    assert (prefix / "compiler" / "version.info").read_text() == f"Version={opbuild.version()}\n"
    assert not [p for p in tmp_path.iterdir() if p.name != "T"]  # no staging or old tree left


def test_opp_built_in_is_copied_and_missing_one_is_an_error(tmp_path: Path, capsys) -> None:
    opp = tmp_path / "opp"
    (opp / "built-in" / "op_api" / "lib").mkdir(parents=True)
    (opp / "built-in" / "op_api" / "lib" / "libopapi.so").write_bytes(b"\x7fELF-not-really")
    prefix = tmp_path / "T"
    assert main(["toolkit", "install", "--prefix", str(prefix), "--opp", str(opp)]) == 0
    assert (prefix / "opp" / "built-in" / "op_api" / "lib" / "libopapi.so").read_bytes() == b"\x7fELF-not-really"
    assert main(["toolkit", "install", "--prefix", str(tmp_path / "U"), "--opp", str(tmp_path)]) == 1
    assert "no built-in/ package" in capsys.readouterr().err
    assert not (tmp_path / "U").exists()


def test_uninstall_removes_exactly_what_install_wrote(tmp_path: Path, capsys) -> None:
    prefix = tmp_path / "T"
    assert main(["toolkit", "install", "--prefix", str(prefix)]) == 0
    written = json.loads((prefix / toolkit.MANIFEST).read_text())["paths"]
    assert "bin/setenv.bash" in written
    mine = prefix / "opp" / "vendors" / "customize" / "version.info"  # e.g. a package the .run installed
    mine.parent.mkdir(parents=True)
    mine.write_text("x\n")
    assert main(["toolkit", "uninstall", "--prefix", str(prefix)]) == 0
    assert sorted(p.relative_to(prefix).as_posix() for p in prefix.rglob("*")) == \
        ["opp", "opp/vendors", "opp/vendors/customize", "opp/vendors/customize/version.info"]
    mine.unlink()
    shutil.rmtree(prefix)
    assert main(["toolkit", "uninstall", "--prefix", str(prefix)]) == 1
    assert "not an opbuild toolkit" in capsys.readouterr().err


def test_seeded_config_ini_is_kept_on_reinstall(tmp_path: Path, capsys) -> None:
    prefix = tmp_path / "T"
    assert main(["toolkit", "install", "--prefix", str(prefix)]) == 0
    (prefix / "opp" / "vendors" / "config.ini").write_text("load_priority=customize\n")
    capsys.readouterr()
    assert main(["toolkit", "install", "--prefix", str(prefix)]) == 0
    assert "up to date" in capsys.readouterr().out
    assert (prefix / "opp" / "vendors" / "config.ini").read_text() == "load_priority=customize\n"


def test_force_keeps_installed_packages_and_never_replaces_a_foreign_directory(tmp_path: Path, capsys) -> None:
    prefix = tmp_path / "T"
    assert main(["toolkit", "install", "--prefix", str(prefix)]) == 0
    pkg = prefix / "opp" / "vendors" / "customize" / "version.info"
    pkg.parent.mkdir(parents=True)
    pkg.write_text("custom_opp_compiler_version=x\n")
    (prefix / "opp" / "vendors" / "config.ini").write_text("load_priority=customize\n")
    (prefix / "bin" / "msopgen").write_text("#!/bin/sh\necho edited\n")
    assert main(["toolkit", "install", "--prefix", str(prefix), "--force"]) == 0
    assert pkg.read_text() == "custom_opp_compiler_version=x\n"
    assert (prefix / "opp" / "vendors" / "config.ini").read_text() == "load_priority=customize\n"
    assert "-m opbuild.ascendc.msopgen" in (prefix / "bin" / "msopgen").read_text()
    capsys.readouterr()
    home = tmp_path / "home"
    home.mkdir()
    (home / "notes.txt").write_text("mine\n")
    for extra in ([], ["--force"]):
        assert main(["toolkit", "install", "--prefix", str(home), *extra]) == 1
        assert "not an opbuild toolkit" in capsys.readouterr().err
    assert [p.name for p in home.iterdir()] == ["notes.txt"]
    assert main(["toolkit", "uninstall", "--prefix", str(home)]) == 1
    assert (home / "notes.txt").is_file()


@pytest.mark.skipif(__import__("importlib").util.find_spec("opbuild.om.atc") is None,
                    reason="opbuild.om.atc is not written yet")
def test_atc_wrapper_runs_from_plain_shell(tk: Path) -> None:
    proc = _plain_bash(f"source {tk}/bin/setenv.bash && atc --help")
    assert proc.returncode == 0, proc.stderr
