"""Helpers for the ABI tests: compile small C programs and shared libraries against the headers."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
INCLUDE = REPO / "opbuild" / "runtime" / "native" / "include"


class CCompiler:
    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.count = 0

    def _run(self, source: str, name: str, extra: list[str]) -> Path:
        self.count += 1
        src = self.workdir / f"{name}_{self.count}.c"
        out = self.workdir / f"{name}_{self.count}{'.so' if '-shared' in extra else ''}"
        src.write_text(source)
        cmd = ["gcc", "-std=c11", "-Wall", "-Werror", f"-I{INCLUDE}", "-O2", *extra, str(src), "-o", str(out)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr}"
        return out

    def shared(self, source: str, name: str = "lib") -> Path:
        """Compile a shared library (-fPIC -shared)."""
        return self._run(source, name, ["-fPIC", "-shared"])

    def run(self, source: str, name: str = "prog") -> str:
        """Compile and run a program; its stdout."""
        exe = self._run(source, name, [])
        return subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="session")
def cc(tmp_path_factory) -> CCompiler:
    return CCompiler(tmp_path_factory.mktemp("abi_cc"))
