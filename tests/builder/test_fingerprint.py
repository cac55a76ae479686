"""The fingerprint (opbuild/fingerprint.py): what changes a key and what does not, the one list of
our code, and the one cache interface (opbuild/builder/stores.py) its layers go through."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from build_helpers import snapshot_code

from opbuild import codegen, fingerprint
from opbuild.builder import bundles, cache, scons_tool
from opbuild.builder.select import SpecCache
from opbuild.builder.stores import LocalStore, SharedStore
from opbuild.fingerprint import Key, code_files, file_stat

REPO = Path(__file__).resolve().parent.parent.parent


def _op(root: Path) -> Path:
    op = root / "ops" / "a"
    op.mkdir(parents=True)
    (op / "kernel.c").write_text("int k;\n")
    (op / "tiling.c").write_text("int t;\n")
    return op


def _key(root: Path, kind: str = "test") -> str:
    op = root / "ops" / "a"
    key = Key(kind).text("a")
    for name in sorted(os.listdir(op)):
        key.file(str(op / name), root)
    return key.hexdigest()


def test_a_key_follows_content_and_names_not_the_path_or_mtime(tmp_path):
    _op(tmp_path / "one"), _op(tmp_path / "elsewhere" / "two")
    key = _key(tmp_path / "one")
    assert _key(tmp_path / "elsewhere" / "two") == key  # another checkout path: the same key
    tiling = tmp_path / "one" / "ops" / "a" / "tiling.c"
    os.utime(tiling, (1, 1))  # an older mtime, same content
    assert _key(tmp_path / "one") == key
    tiling.write_text("int t2;\n")
    assert _key(tmp_path / "one") != key  # content
    tiling.write_text("int t;\n")
    assert _key(tmp_path / "one") == key
    tiling.rename(tiling.with_name("tiling2.c"))
    assert _key(tmp_path / "one") != key  # a file's name
    assert _key(tmp_path / "elsewhere" / "two", kind="other") != _key(tmp_path / "elsewhere" / "two")  # the kind


def test_key_parts_do_not_run_together():
    assert Key("k").text("ab", "c").hexdigest() != Key("k").text("a", "bc").hexdigest()
    assert Key("k").json({"a": 1, "b": 2}).hexdigest() == Key("k").json({"b": 2, "a": 1}).hexdigest()
    base = Key("k").text("x")
    assert base.copy().text("y").hexdigest() == Key("k").text("x", "y").hexdigest()
    assert base.hexdigest() == Key("k").text("x").hexdigest()  # the copy did not touch the original


def test_opbuild_install_locations_become_tokens_in_keys():
    from opbuild.runtime_paths import native_include_dir

    header = native_include_dir() / "opbuild" / "tiling.h"
    text = Key("k").json({"cmd": ["-I", str(native_include_dir())]}).hexdigest()
    assert text == Key("k").json({"cmd": ["-I", "opbuild"]}).hexdigest()
    assert Key("k").file(str(header), "/nowhere").hexdigest() == Key("k").text(
        "opbuild/opbuild/tiling.h", fingerprint.ContentHashes().digest(str(header))).hexdigest()


def test_file_stat_is_the_local_check():
    path = str(REPO / "pyproject.toml")
    st = file_stat(path)
    assert st is not None and st[0] == path and st == file_stat(path)
    assert file_stat(str(REPO / "no-such-file")) is None
    assert fingerprint.stats([path, str(REPO / "no-such-file")]) is None


def test_one_list_of_our_code_serves_every_layer():
    files = code_files()
    names = {Path(p).relative_to(REPO).as_posix() for p in files if Path(p).is_relative_to(REPO)}
    for required in ("opbuild/fingerprint.py", "opbuild/suggest.py", "opbuild/builder/select.py",
                     "opbuild/validate/__init__.py", "opbuild/codegen/aclnn_c.py", "opbuild/spec/fields.py",
                     "templates/aclnn_source.c.j2", "schemas/op_spec.schema.json",
                     "opbuild/runtime/native/include/opbuild/tiling.h"):
        assert required in names, required
    assert not any(n.startswith(("templates/scaffold/", "opbuild/runtime/api", "opbuild/om/")) for n in names)
    assert [str(p) for p in codegen.GENERATOR_FILES] == sorted(files)  # the generator stamp's inputs
    assert SpecCache(None).checker == fingerprint.stats(files)  # the spec cache's checker
    assert codegen.generator_digest() == fingerprint.code_digest()


def _code_digest(install: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(install), "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run([sys.executable, "-c", "import opbuild.fingerprint as f; print(f.code_digest(), f.__file__)"],
                         env=env, capture_output=True, text=True, check=True, cwd=install).stdout.split()
    assert out[1].startswith(str(install)), out  # this copy's code, not the repository's
    return out[0]


def test_code_digest_is_the_same_for_two_installs_and_follows_content(tmp_path):
    one, two = snapshot_code(tmp_path / "one"), snapshot_code(tmp_path / "team" / "two")
    digest = _code_digest(one)
    template = two / "templates" / "aclnn_source.c.j2"
    os.utime(template, (1, 1))
    assert _code_digest(two) == digest  # another path, another mtime: same code
    template.write_text(template.read_text() + "\n")
    assert _code_digest(two) != digest  # an edited template


def test_the_actions_read_no_module_globals():
    assert not hasattr(scons_tool, "_REGISTRY") and not hasattr(scons_tool, "PROGRESS")
    from opbuild.builder import sconstruct

    assert not hasattr(sconstruct, "_REGISTRY_TOOLS")


# ---- the cache interface ---------------------------------------------------------------------------------

def test_local_store_writes_atomically_and_reads_back(tmp_path):
    store = LocalStore(tmp_path / "out" / ".opbuild", "ops")
    assert store.get("ops.json") is None and not store.has("ops.json")
    store.put("ops.json", b"{}")
    assert store.get("ops.json") == b"{}" and store.layer == "ops record"
    assert os.listdir(store.directory) == ["ops.json"]  # no temporary left
    store.discard("ops.json")
    assert store.get("ops.json") is None


def test_shared_store_verifies_entries_and_logs_events(tmp_path, capsys):
    store = SharedStore(str(tmp_path), "bundles")
    key = "ab" * 32
    assert store.get(key, "A") is None  # a miss
    store.put(key, b"bundle bytes", target="A")
    assert store.path(key) == str(tmp_path / "AB" / (key + cache.BUNDLE_SUFFIX)) and store.has(key)
    assert store.get(key, "A") == b"bundle bytes"
    Path(store.path(key)).write_bytes(b"other bytes")
    assert store.get(key, "A") is None
    assert "corrupt op bundle" in capsys.readouterr().err and not store.has(key)
    assert cache.read_events(tmp_path) == {"hit": 1, "miss": 2, "push": 1, "corrupt": 1}


def test_shared_store_with_a_secret_rejects_an_entry_rewritten_with_its_hash(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(cache.SECRET_ENV, "team secret")
    store = SharedStore(str(tmp_path), "compile")
    key = "cd" * 32
    store.put(key, b"object")
    assert store.get(key) == b"object"
    path = store.path(key)
    Path(path).write_bytes(b"evil")
    Path(cache.hash_path(path)).write_text(cache.sha256_bytes(b"evil") + "\n")  # a matching sha256, no HMAC
    assert cache.verify(tmp_path, remove=False)[0][1].startswith("no HMAC")
    assert store.get(key) is None and "no HMAC" in capsys.readouterr().err


def test_a_read_only_shared_store_writes_nothing(tmp_path):
    store = SharedStore(str(tmp_path), "shared_specs", readonly=True)
    store.put("ef" * 32, b"spec")
    assert not store.has("ef" * 32) and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("layer", ["compile", "bundles", "shared_specs"])
def test_shared_entries_keep_the_cache_dir_layout(tmp_path, layer):
    store = SharedStore(str(tmp_path), layer)
    store.put("0a" * 32, b"x")
    assert [e.path for e in cache.entries(tmp_path)] == [Path(store.path("0a" * 32))]
    problems = [problem for _, problem in bundles.verify_cache(tmp_path)]  # `opbuild cache verify` sees every kind
    assert problems == (["malformed op bundle: not an op bundle (bad magic)"] if layer == "bundles" else [])
