"""Issue 12: relocation. A package built here, packed into its `.run`, installed into a fresh
directory and used from a *different* virtualenv holding a non-editable install of opbuild (a
wheel): its ops run from Python, and the CANN-style C sample runs against the installed tree.
Nothing of this checkout (nor of its virtualenv) is needed by the package itself."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from opbuild.deploy.pack import pack

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CC = shutil.which(os.environ.get("CC", "cc")) or "gcc"


def _source_copy(dest: Path) -> Path:
    """The repository's files (tracked and untracked-not-ignored), without build products."""
    names = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, names):
        src = REPO / name
        if src.is_file() and src.suffix not in (".so", ".pyc"):
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kw)
    assert proc.returncode == 0, f"{cmd}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def test_a_packed_package_runs_from_another_virtualenv_with_a_wheel_install(package, tmp_path):
    if subprocess.run(["git", "-C", str(REPO), "rev-parse"], capture_output=True).returncode != 0:
        pytest.skip("not a git checkout")
    source = _source_copy(tmp_path / "src")
    wheels = tmp_path / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels),
          str(source)], cwd=tmp_path)
    [wheel] = wheels.glob("opbuild-*.whl")
    venv = tmp_path / "other-venv"  # another path (no space: flags are expanded unquoted by the shell)
    _run([sys.executable, "-m", "venv", str(venv)])
    py = venv / "bin" / "python"
    _run([str(py), "-m", "pip", "install", "-q", str(wheel)], cwd=tmp_path)  # dependencies from the local index
    where = _run([str(py), "-c", "import opbuild; print(opbuild.__file__)"], cwd=tmp_path).stdout
    assert where.startswith(str(venv)), where

    installer = pack(package.root, tmp_path / "dist" / "custom_opp.run")
    opp = tmp_path / "deployed" / "opp"
    env = {"PATH": f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8",
           "OPBUILD_PYTHON": str(py)}
    _run(["sh", str(installer), f"--install-path={opp}", "--quiet"], env=env, cwd=tmp_path)
    installed = opp / "vendors" / "customize"

    script = ("import sys, numpy as np, opbuild.runtime as rt\n"
              "ops = rt.import_ops(sys.argv[1])\n"
              "x = np.arange(48, dtype=np.float32).reshape(3, 16); y = np.full_like(x, 2)\n"
              "assert np.array_equal(ops.add_custom_template(x, y), x + y)\n"
              "assert np.array_equal(ops.mul_custom(x, y), x * y)\n"
              "assert np.array_equal(ops.add_n_custom([x, y, x]), x + y + x)\n"
              "print('ok')\n")
    assert _run([str(py), "-c", script, str(installed)], env=env, cwd=tmp_path).stdout.strip() == "ok"

    pkg = shlex.quote(str(installed))
    c = _run(["sh", "-ec", f"{CC} -pthread -o app {shlex.quote(str(HERE / 'sample_add.c'))} "
              f"$(opbuild config --cflags --libs --package {pkg})\n"
              f'eval "$(opbuild env --pc-dir pc --package {pkg})"\n./app'], env=env, cwd=tmp_path)
    values = [float(line.split("=")[1]) for line in c.stdout.splitlines() if line.startswith("result[")]
    assert values == [i + 0.5 * i + 1.0 for i in range(8)]
    assert str(REPO) not in c.stdout + c.stderr
