"""Issue 12 item 4, issue 23 item 3: `opbuild pack` writes CANN's self-extracting installer
custom_opp_<os>_<arch>.run (makeself layout: sh header + tar.gz), reproducible; running it
installs the real sample package into an OPP tree like `opbuild install` (the same install.sh),
and the installed tree runs ops from Python and from a CANN-style C program, also set up by
sourcing the bin/set_env.bash an --install-path install writes. (The options one by one:
tests/deploy/test_run_installer.py.)"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from opbuild.deploy.pack import pack, run_file_name

HERE = Path(__file__).resolve().parent
CC = shutil.which(os.environ.get("CC", "cc")) or "gcc"
OPBUILD = [sys.executable, "-m", "opbuild.cli"]


def _tree(root: Path) -> dict[str, bytes | str]:
    found: dict[str, bytes | str] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        found[rel] = os.readlink(p) if p.is_symlink() else p.read_bytes() if p.is_file() else "dir"
    return found


@pytest.fixture(scope="module")
def installer(package, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("pack") / run_file_name()
    return pack(package.root, out)


def _run(installer: Path, *args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    (cwd / "tmpdir").mkdir(exist_ok=True)
    full = {k: v for k, v in os.environ.items() if k not in ("ASCEND_OPP_PATH", "ASCEND_CUSTOM_OPP_PATH")}
    full.update(TMPDIR=str(cwd / "tmpdir"), **(env or {}))
    return subprocess.run(["sh", str(installer), *args], capture_output=True, text=True, env=full, cwd=cwd, timeout=120)


def test_the_installer_is_named_like_canns_and_reproducible(package, installer, tmp_path):
    assert re.fullmatch(r"custom_opp_[a-z0-9.-]+_[A-Za-z0-9_]+\.run", installer.name)
    assert os.access(installer, os.X_OK)
    data = installer.read_bytes()
    assert data.startswith(b"#!/bin/sh\n")
    # the same package elsewhere, with other mtimes: the same bytes
    copy = tmp_path / "elsewhere" / "vendors" / "customize"
    shutil.copytree(package.root, copy, symlinks=True)
    for p in copy.rglob("*"):
        if not p.is_symlink():
            os.utime(p, (12345, 12345))
    assert pack(copy, tmp_path / installer.name).read_bytes() == data
    assert str(package.root).encode() not in data and str(package.opp).encode() not in data


def test_help_and_bad_options(installer, tmp_path):
    helped = _run(installer, "--help", cwd=tmp_path)
    assert helped.returncode == 0 and "--install-path=ABS" in helped.stdout and "--quiet" in helped.stdout
    assert _run(installer, "--install-path=relative", cwd=tmp_path).returncode == 2
    assert _run(installer, cwd=tmp_path).returncode == 2  # no --install-path, no ASCEND_OPP_PATH


def _package_files(installed: Path) -> dict[str, bytes | str]:
    """The installed tree without what the installer adds (scripts/uninstall.sh, bin/set_env.bash)."""
    return {k: v for k, v in _tree(installed).items() if not k.startswith(("scripts", "bin"))}


def test_install_like_opbuild_install_refusing_a_different_package_without_replace(package, installer, tmp_path):
    opp = tmp_path / "opp"
    (opp / "vendors").mkdir(parents=True)
    (opp / "vendors" / "config.ini").write_text("load_priority=other,customize\n")
    env = {"ASCEND_OPP_PATH": str(opp)}
    quiet = _run(installer, "--quiet", cwd=tmp_path, env=env)
    assert quiet.returncode == 0 and quiet.stdout == "" and quiet.stderr == "", quiet
    assert _package_files(opp / "vendors" / "customize") == _tree(package.root)

    # the same as `opbuild install` does to a tree in the same state
    other = tmp_path / "other-opp"
    (other / "vendors").mkdir(parents=True)
    (other / "vendors" / "config.ini").write_text("load_priority=other,customize\n")
    subprocess.run([*OPBUILD, "install", str(package.root), "--opp-path", str(other)], check=True, capture_output=True)
    assert (opp / "vendors" / "config.ini").read_text() == (other / "vendors" / "config.ini").read_text() \
        == "load_priority=customize,other\n"

    info = opp / "vendors" / "customize" / "version.info"
    info.write_text(info.read_text() + "# changed\n")  # a different package of the vendor
    refused = _run(installer, cwd=tmp_path, env=env)
    assert refused.returncode == 1 and "--replace" in refused.stderr, refused
    assert info.read_text().endswith("# changed\n")
    replaced = _run(installer, "--replace", cwd=tmp_path, env=env)
    assert replaced.returncode == 0 and "load_priority has customize first" in replaced.stdout, replaced
    assert _package_files(opp / "vendors" / "customize") == _tree(package.root)
    assert _tree(opp / "vendors" / "customize") == _tree(other / "vendors" / "customize")
    assert list((tmp_path / "tmpdir").iterdir()) == []  # its temporary directories are removed


def test_the_installed_tree_runs_from_python_and_from_c(installer, tmp_path):
    opp = tmp_path / "opp"
    assert _run(installer, f"--install-path={opp}", "--quiet", cwd=tmp_path).returncode == 0
    installed = opp / "vendors" / "customize"

    # Python, in a fresh interpreter, no set-up step
    script = ("import numpy as np, sys, opbuild.runtime as rt\n"
              "ops = rt.import_ops(sys.argv[1])\n"
              "x = np.arange(64, dtype=np.float16).reshape(4, 16); y = np.ones_like(x)\n"
              "z = ops.add_custom_template(x, y)\n"
              "assert np.array_equal(z, x + y), z\n"
              "print('ok')\n")
    proc = subprocess.run([sys.executable, "-c", script, str(installed)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr

    # C, built and run the CANN way against the installed tree
    opbuild = " ".join(shlex.quote(a) for a in OPBUILD)
    pkg = shlex.quote(str(installed))
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    c = subprocess.run(["sh", "-ec", f"{CC} -pthread -o app {shlex.quote(str(HERE / 'sample_add.c'))} "
                        f"$({opbuild} config --cflags --libs --package {pkg})\n"
                        f'eval "$({opbuild} env --pc-dir pc --package {pkg})"\n./app'],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert c.returncode == 0, c.stdout + c.stderr
    values = [float(line.split("=")[1]) for line in c.stdout.splitlines() if line.startswith("result[")]
    assert values == [i + 0.5 * i + 1.0 for i in range(8)]
    assert np.isfinite(values).all()

    # CANN's way for an --install-path install: source its bin/set_env.bash (the op API library
    # on LD_LIBRARY_PATH, the vendor dir on ASCEND_CUSTOM_OPP_PATH), `opbuild env` for the acl library
    c = subprocess.run(["bash", "-ec", f"source {pkg}/bin/set_env.bash\n"
                        f'eval "$({opbuild} env --pc-dir pc)"\n./app\necho "ASCEND_CUSTOM_OPP_PATH=$ASCEND_CUSTOM_OPP_PATH"'],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert c.returncode == 0, c.stdout + c.stderr
    assert [float(line.split("=")[1]) for line in c.stdout.splitlines() if line.startswith("result[")] == values
    assert f"ASCEND_CUSTOM_OPP_PATH={installed}" in c.stdout.splitlines()

    # ... and the runtime searches the vendor dir set_env.bash names (ASCEND_CUSTOM_OPP_PATH): op_fallback
    # finds the op's aclnn function in its libcust_opapi.so first
    find = ("from opbuild.runtime.fallback import find_op_api\n"
            "print(find_op_api('aclnnAddCustomTemplateGetWorkspaceSize')[1])\n")
    py = subprocess.run(["bash", "-ec", f"source {pkg}/bin/set_env.bash\n{shlex.quote(sys.executable)} -c {shlex.quote(find)}"],
                        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert py.returncode == 0, py.stdout + py.stderr
    assert py.stdout.strip() == str(installed / "op_api" / "lib" / "libcust_opapi.so")
