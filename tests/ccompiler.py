"""CCompiler: compile small C programs and shared libraries against opbuild's public C headers
(tests of the C/Python border: tests/abi, tests/runtime's host-context tests)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
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
def cc(tmp_path_factory: pytest.TempPathFactory) -> CCompiler:
    """A CCompiler working in a session temp dir (made available to every test by tests/conftest.py)."""
    return CCompiler(tmp_path_factory.mktemp("cc"))
