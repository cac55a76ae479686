"""Issue 12 items 1 and 5: a C program built and run the CANN way. `opbuild env` prints the
exports (LD_LIBRARY_PATH to the acl library by its fixed name, PKG_CONFIG_PATH to opbuild.pc),
and the program compiles with `pkg-config --cflags --libs opbuild` or
`opbuild config --cflags --libs`: no rpath in it, no path of the build machine in the package."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from opbuild.abi.native_libs import ACL_SONAME

HERE = Path(__file__).resolve().parent
CC = shutil.which(os.environ.get("CC", "cc")) or "gcc"
EXPECTED = [f"result[{i}]={i + 0.5 * i + 1.0:g}" for i in range(8)]


def _sh(script: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """`script` in a clean shell: no virtualenv, no PYTHONPATH (the user's terminal)."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    return subprocess.run(["sh", "-ec", script], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)


def _results(stdout: str) -> list[str]:
    out = []
    for line in stdout.splitlines():
        if line.startswith("result["):
            name, _, value = line.partition("=")
            out.append(f"{name.strip()}={float(value):g}")
    return out


def _no_rpath(exe: Path) -> None:
    dyn = subprocess.run(["readelf", "-d", str(exe)], capture_output=True, text=True, check=True).stdout
    assert f"[{ACL_SONAME}]" in dyn and "RPATH" not in dyn and "RUNPATH" not in dyn, dyn


@pytest.mark.skipif(shutil.which("pkg-config") is None, reason="pkg-config is not installed (.ci/run installs it)")
def test_pkg_config_build_in_the_opbuild_env(package, tmp_path):
    opbuild = f"{shlex.quote(sys.executable)} -m opbuild.cli"
    pkg = shlex.quote(str(package.root))
    src = shlex.quote(str(HERE / "sample_add.c"))
    proc = _sh(f'eval "$({opbuild} env --pc-dir pc --package {pkg})"\n'
               f"{CC} -pthread -o app {src} -I{pkg}/op_api/include -L{pkg}/op_api/lib -lcust_opapi "
               f"$(pkg-config --cflags --libs opbuild)\n./app", tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _results(proc.stdout) == EXPECTED
    assert (tmp_path / "pc" / "opbuild.pc").is_file()
    _no_rpath(tmp_path / "app")


def test_opbuild_config_one_line_build(package, tmp_path):
    opbuild = f"{shlex.quote(sys.executable)} -m opbuild.cli"
    pkg = shlex.quote(str(package.root))
    src = shlex.quote(str(HERE / "sample_add.c"))
    proc = _sh(f"{CC} -pthread -o app {src} $({opbuild} config --cflags --libs --package {pkg})\n"
               f'eval "$({opbuild} env --pc-dir pc --package {pkg})"\n./app', tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _results(proc.stdout) == EXPECTED
    _no_rpath(tmp_path / "app")
    # without the environment, the loader cannot find the libraries: the set-up step is what does it
    assert _sh("./app", tmp_path).returncode != 0


def test_config_needs_a_flag_and_a_built_package(tmp_path):
    run = [sys.executable, "-m", "opbuild.cli", "config"]
    assert subprocess.run(run, capture_output=True).returncode == 2
    bad = subprocess.run([*run, "--libs", "--package", str(tmp_path)], capture_output=True, text=True)
    assert bad.returncode == 1 and str(tmp_path) in bad.stderr


def test_opbuild_config_of_the_built_in_package_links_every_op_api_library(package, tmp_path):
    """Issue 23 item 7: `--package out/opp/built-in` (libopapi.so + libopapi_<domain>.so) works
    like a vendor package; sample_ops.c calls ops of both, built with the two packages' flags."""
    opbuild = " ".join(shlex.quote(a) for a in (sys.executable, "-m", "opbuild.cli"))
    custom, builtin = shlex.quote(str(package.root)), shlex.quote(str(package.builtin))
    flags = subprocess.run([sys.executable, "-m", "opbuild.cli", "config", "--libs", "--package", str(package.builtin)],
                           capture_output=True, text=True, check=True).stdout.split()
    libs = [f for f in flags if f.startswith("-l")]
    assert libs[:3] == ["-lopapi", "-lopapi_math", "-lopapi_nn"], flags  # search order, then the acl library
    assert f"-L{package.builtin.resolve() / 'op_api' / 'lib'}" in flags
    src = shlex.quote(str(HERE / "sample_ops.c"))
    proc = _sh(f"{CC} -pthread -o app {src} $({opbuild} config --cflags --libs --package {custom} --package {builtin})\n"
               f'eval "$({opbuild} env --pc-dir pc --package {custom} --package {builtin})"\n./app', tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    fields = dict(line.split(": ", 1) for line in proc.stdout.splitlines() if ": " in line)
    assert fields["leaky_key"] == "LeakyReluCustom/d=0,p=1/leaky_fp32", proc.stdout
    assert proc.stdout.rstrip().endswith("done")
    _no_rpath(tmp_path / "app")
