"""A C/C++ application of the Ascend C tests, built and run the way a CANN user does: compiled with
the flags `opbuild config --cflags --libs --package PKG` prints, run in the environment `opbuild
env --package PKG` prints."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def build_and_run(source: Path, package: Path, work: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """The finished run of `source` (a C++17 file) against `package`; the test fails if it does not build."""
    cxx = shutil.which("c++") or shutil.which("g++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    flags = subprocess.run([sys.executable, "-m", "opbuild", "config", "--cflags", "--libs", "--package", str(package)],
                           capture_output=True, text=True, check=True).stdout.split()
    exe = work / source.stem
    build = subprocess.run([cxx, "-std=c++17", str(source), *flags, "-o", str(exe)], capture_output=True, text=True)
    assert build.returncode == 0, build.stdout + build.stderr
    env_text = subprocess.run([sys.executable, "-m", "opbuild", "env", "--package", str(package)],
                              capture_output=True, text=True, check=True).stdout
    return subprocess.run(["bash", "-c", f'{env_text}\nexec "{exe}"'], capture_output=True, text=True, timeout=timeout)
