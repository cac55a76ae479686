"""write_if_changed, the generator file list and digest, the Jinja environment."""

from __future__ import annotations

import os
import stat

import jinja2
import pytest

from opbuild import atomic, codegen
from opbuild.codegen import files as files_mod
from opbuild_spec_factory import REPO


def test_write_if_changed(tmp_path):
    target = tmp_path / "a" / "b" / "out.json"
    assert codegen.write_if_changed(target, "one\n") is True
    assert target.read_text() == "one\n"
    assert stat.S_IMODE(target.stat().st_mode) == atomic._FILE_MODE
    before = target.stat().st_mtime_ns
    os.utime(target, ns=(before - 10**9, before - 10**9))
    before = target.stat().st_mtime_ns
    assert codegen.write_if_changed(target, "one\n") is False
    assert target.stat().st_mtime_ns == before  # untouched
    assert codegen.write_if_changed(target, "two\n") is True
    assert target.read_text() == "two\n"
    assert codegen.write_if_changed(target, b"two\n") is False
    assert codegen.write_if_changed(target, "tw\u00f6\n") is True
    assert target.read_bytes() == "tw\u00f6\n".encode()
    assert sorted(p.name for p in target.parent.iterdir()) == ["out.json"]  # no temp files left


def test_write_if_changed_is_atomic_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "out.txt"
    target.write_text("old\n")

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(files_mod.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        codegen.write_if_changed(target, "new\n")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_generator_files_and_digest():
    names = {p.relative_to(REPO).as_posix() for p in codegen.GENERATOR_FILES}
    for required in ("opbuild/codegen/__init__.py", "opbuild/codegen/files.py", "opbuild/keys/grammar.py",
                     "opbuild/keys/rules.py", "templates/tiling_header.h.j2", "templates/launch_shim.c.j2",
                     "opbuild/abi/ge_types.py"):
        assert required in names
    assert not any(n.startswith("templates/scaffold/") for n in names)
    assert all(p.is_absolute() and p.is_file() for p in codegen.GENERATOR_FILES)
    assert list(codegen.GENERATOR_FILES) == sorted(codegen.GENERATOR_FILES)
    d = codegen.generator_digest()
    assert len(d) == 64 and d == codegen.generator_digest()


def test_environment_is_strict():
    env = codegen.environment()
    assert codegen.TEMPLATES_DIR == REPO / "templates"
    assert env.undefined is jinja2.StrictUndefined and env.keep_trailing_newline
    with pytest.raises(jinja2.UndefinedError):
        env.from_string("{{ missing }}").render()
