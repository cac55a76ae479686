"""Issue 28 item 4: the native libraries are the same bytes from any checkout path.

The op API libraries (libcust_opapi.so, libopapi*.so) link against the acl library, and the shared
build cache keys each link by the content of what it reads. A library recording the directory it
was built in (DWARF's comp_dir, from setup.py's compiles) made those 4 links miss the cache from a
second clone at another path ("4 compiled"): here the libraries are built by setup.py in two
directories at different paths and must be byte for byte the same."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from build_helpers import REPO

pytestmark = pytest.mark.slow

COPIED = ("setup.py", "pyproject.toml", "README.md", "opbuild/runtime/native")


def _build(root: Path) -> dict[str, bytes]:
    for name in COPIED:
        src, dest = REPO / name, root / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dest)
    (root / "opbuild" / "runtime" / "__init__.py").touch()
    (root / "opbuild" / "__init__.py").touch()
    proc = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=root,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    libs = {p.name: p.read_bytes() for p in (root / "opbuild" / "runtime").glob("_*.so")}
    assert len(libs) == 3, sorted(libs)
    return libs


def test_native_libraries_are_the_same_bytes_built_at_two_paths(tmp_path):
    first = _build(tmp_path / "a")
    second = _build(tmp_path / "another" / "checkout")
    assert {n: len(b) for n, b in first.items()} == {n: len(b) for n, b in second.items()}
    assert [n for n in first if first[n] != second[n]] == []
    for name, data in second.items():
        assert str(tmp_path).encode() not in data, name
