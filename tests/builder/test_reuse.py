"""builder/reuse.py: an object is taken only for the same command, the same compiler and the same
content of every file it read; entries are read as untrusted input."""

from __future__ import annotations

import os
from pathlib import Path

from opbuild.builder import reuse

COMMAND = ["c++", "-O2", "-c", "-o", "out/x.o", "src/x.cpp"]


def _entry(tmp_path: Path) -> tuple[Path, Path]:
    store, root = tmp_path / "store", tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "x.cpp").write_text("int x;\n")
    (root / "src" / "x.h").write_text("// h\n")
    obj = tmp_path / "made.o"
    obj.write_bytes(b"\x7fELF object bytes")
    reuse.record(store, "gcc 12", COMMAND, "out/x.o", {"src/x.cpp": root / "src" / "x.cpp", "src/x.h": root / "src" / "x.h"},
                 obj)
    return store, root


def test_taken_for_the_same_command_and_content(tmp_path):
    store, root = _entry(tmp_path)
    target = root / "out" / "x.o"
    target.parent.mkdir()
    assert reuse.take(store, "gcc 12", COMMAND, "out/x.o", root, target)
    assert target.read_bytes() == b"\x7fELF object bytes"
    # the output path is not part of the key: the same compile writing elsewhere
    other = [*COMMAND[:4], "elsewhere/y.o", COMMAND[5]]
    assert reuse.take(store, "gcc 12", other, "elsewhere/y.o", root, tmp_path / "y.o")


def test_not_taken_when_anything_differs(tmp_path):
    store, root = _entry(tmp_path)
    target = tmp_path / "t.o"
    assert not reuse.take(store, "gcc 13", COMMAND, "out/x.o", root, target)  # another compiler
    assert not reuse.take(store, "gcc 12", [*COMMAND, "-DX"], "out/x.o", root, target)  # another command
    (root / "src" / "x.h").write_text("// edited\n")  # a file it read changed
    assert not reuse.take(store, "gcc 12", COMMAND, "out/x.o", root, target)
    assert not target.exists()


def test_damaged_or_hostile_entries_are_not_taken(tmp_path):
    store, root = _entry(tmp_path)
    target = tmp_path / "t.o"
    obj = next(store.glob("object-*.o"))
    obj.write_bytes(b"\x7fELF other bytes!")  # the object no longer has its recorded sha256
    assert not reuse.take(store, "gcc 12", COMMAND, "out/x.o", root, target)
    manifest = next(store.glob("reuse-*.json"))
    manifest.write_text('{"version": 1, "files": 5}')  # not of the expected shape
    assert not reuse.take(store, "gcc 12", COMMAND, "out/x.o", root, target)
    manifest.unlink()
    os.mkfifo(manifest)  # a FIFO in its place: not opened for reading (no hang)
    assert not reuse.take(store, "gcc 12", COMMAND, "out/x.o", root, target)
    assert not target.exists()


def test_dependencies_of_a_make_rule(tmp_path):
    deps = tmp_path / "x.d"
    deps.write_text("out/x.o: src/x.cpp /usr/include/stdio.h \\\n  src/with\\ space.h\n")
    assert reuse.dependencies(deps) == ["src/x.cpp", "/usr/include/stdio.h", "src/with space.h"]
