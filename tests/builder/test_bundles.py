"""Op bundles (opbuild/builder/bundles.py) without SCons: the bundle format, restoring from a cache,
the #include scan, and what the op key does and does not depend on."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from opbuild.builder import bundles, cache
from opbuild.builder.plan import Planner
from opbuild.builder.scons_tool import BuildOptions
from opbuild.builder.toolchain import HostToolchain
from opbuild.runtime_paths import native_include_dir
from opbuild.spec import load_spec

REPO = Path(__file__).resolve().parents[2]
KEY = "ab" * 32


def _files(out: Path) -> list[str]:
    made = {"opp/k/A_FP16.so": b"\x7fELF binary", "opp/k/A_FP16.json": b'{"sha256": "..."}', "build/obj/a.o": b""}
    paths = []
    for rel, data in made.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        paths.append(str(path))
    (out / "opp/k/A_FP16.so").chmod(0o755)
    return paths


def _header_and_blobs(files: list[dict], blobs: bytes = b"", key: str = KEY) -> bytes:
    import json

    return bundles.MAGIC + json.dumps({"op": "A", "key": key, "files": files}).encode() + b"\n" + blobs


def test_pack_and_unpack_round_trip(tmp_path):
    out = tmp_path / "out"
    paths = _files(out)
    data = bundles.pack("A", KEY, paths, out)
    other = tmp_path / "other" / "out"
    unpacked = bundles.unpack(data, other, KEY)
    assert [str(p) for p, _, _ in unpacked] == [str(other / Path(p).relative_to(out)) for p in paths]
    assert [bytes(b) for _, _, b in unpacked] == [Path(p).read_bytes() for p in paths]
    assert unpacked[0][1] == 0o755


@pytest.mark.parametrize("data, problem", [
    (b"NOTABUNDLE\n{}\n", "bad magic"),
    (_header_and_blobs([], key="cd" * 32), "not " + KEY[:12]),
    (_header_and_blobs([{"path": "../evil", "mode": 420, "size": 1}], b"x"), "outside the output directory"),
    (_header_and_blobs([{"path": "/etc/evil", "mode": 420, "size": 1}], b"x"), "outside the output directory"),
    (_header_and_blobs([{"path": "a/../../evil", "mode": 420, "size": 1}], b"x"), "outside the output directory"),
    (_header_and_blobs([{"path": "a", "mode": 420, "size": 5}], b"xy"), "truncated"),
    (_header_and_blobs([{"path": "a", "mode": 420, "size": 1}], b"xy"), "after the last file"),
    (_header_and_blobs([{"path": "a"}], b""), "bad file entry"),
    (bundles.MAGIC + b"{not json\n", "unreadable header"),
])
def test_unpack_rejects_malformed_bundles(tmp_path, data, problem):
    with pytest.raises(bundles.BundleError, match=problem.replace("(", r"\(")):
        bundles.unpack(data, tmp_path / "out", KEY)


def test_restore_writes_the_files_of_a_verified_bundle(tmp_path):
    out, cache_dir = tmp_path / "out", tmp_path / "cache"
    paths = _files(out)
    cache.store(bundles.bundle_path(cache_dir, KEY), bundles.pack("A", KEY, paths, out))
    other = tmp_path / "checkout2" / "out"
    expected = [str(other / Path(p).relative_to(out)) for p in paths]
    assert bundles.restore(str(cache_dir), KEY, "A", other, expected) == expected
    assert [Path(p).read_bytes() for p in expected] == [Path(p).read_bytes() for p in paths]
    assert Path(expected[0]).stat().st_mode & 0o777 == 0o755
    # a bundle whose files are not the op's outputs (another build plan) is not used
    assert bundles.restore(str(cache_dir), KEY, "A", other, expected[:1]) is None


@pytest.mark.parametrize("damage", ["content", "escape"])
def test_a_corrupt_bundle_is_reported_removed_and_never_written(tmp_path, capsys, damage):
    out, cache_dir = tmp_path / "out", tmp_path / "cache"
    entry = bundles.bundle_path(cache_dir, KEY)
    if damage == "content":
        data = bytearray(bundles.pack("A", KEY, _files(out), out))
        cache.store(entry, bytes(data))
        data[-3:] = b"!!!"
        Path(entry).write_bytes(bytes(data))  # the stored sha256 no longer matches
    else:  # a well-hashed bundle that would write outside out/
        cache.store(entry, _header_and_blobs([{"path": "../escaped", "mode": 420, "size": 4}], b"evil"))
    target = tmp_path / "checkout2" / "out"
    assert bundles.restore(str(cache_dir), KEY, "A", target, [str(target / "x")]) is None
    err = capsys.readouterr().err
    assert "corrupt op bundle" in err and "building the op" in err
    assert not Path(entry).exists() and not Path(cache.hash_path(entry)).exists()
    assert not (tmp_path / "checkout2" / "escaped").exists() and not target.exists()
    assert cache.read_events(cache_dir)["corrupt"] == 1


def test_the_include_scan_finds_headers_like_the_c_scanner(tmp_path):
    op = tmp_path / "ops" / "a"
    (op / "sub").mkdir(parents=True)
    (tmp_path / "ops" / "common").mkdir()
    inc = tmp_path / "inc"
    inc.mkdir()
    (op / "kernel.c").write_text('#include "local.h"\n  #  include <shared.h>\n#include <stdint.h>\n'
                                 '#include "gen_tiling.h"\n')
    (op / "local.h").write_text('#include "sub/deeper.h"\n')
    (op / "sub" / "deeper.h").write_text('#include "../../common/common.h"\n')
    (tmp_path / "ops" / "common" / "common.h").write_text("/* no includes */\n")
    (inc / "shared.h").write_text("")
    (inc / "gen_tiling.h").write_text('#include "never_followed.h"\n')  # another step writes it
    hasher = bundles.InputHasher()
    found = hasher.scan(str(op / "kernel.c"), [str(inc)], tmp_path, produced={str(inc / "gen_tiling.h")})
    assert found == {str(op / "local.h"), str(op / "sub" / "deeper.h"), str(tmp_path / "ops" / "common" / "common.h"),
                     str(inc / "shared.h")}


# ---- the op key ---------------------------------------------------------------------------------------

def _checkout(root: Path) -> Path:
    shutil.copytree(REPO / "ops" / "add_custom_template", root / "ops" / "add_custom_template")
    (root / "ops" / "common").mkdir()
    (root / "ops" / "common" / "extra.h").write_text("#define EXTRA 1\n")
    kernel = root / "ops" / "add_custom_template" / "kernel.c"
    kernel.write_text('#include "../common/extra.h"\n' + kernel.read_text())
    return root


def _key(root: Path, version: str = "12.2.0", socs=None) -> str:
    spec = load_spec(root / "ops" / "add_custom_template" / "op.yaml")
    options = BuildOptions(root=root, out=root / "out", vendor="customize", socs=socs,
                           toolchain=HostToolchain(root=str(root)))
    base = {"toolchain": "host", "identity": "gcc", "version": version, "generator": "test"}
    planner = Planner(options, str(root / "out" / "build" / "customize" / "generator.stamp"), native_include_dir(),
                      lambda **extra: repr(sorted({**base, **extra}.items())))
    plan = planner.plan_op(spec, planner.packages([spec]))
    hasher = bundles.InputHasher()
    inputs = bundles.op_inputs(plan, root, hasher, {planner.stamp})
    assert str(root / "ops" / "common" / "extra.h") in inputs
    return bundles.op_key(plan, inputs, root, bundles.common_key(base), hasher)


def test_the_op_key_follows_every_input_and_not_the_checkout_path(tmp_path):
    first, second = _checkout(tmp_path / "one"), _checkout(tmp_path / "two")
    key = _key(first)
    assert key == _key(second)  # same content elsewhere: same key (a second checkout hits)
    (tmp_path / "two" / "unrelated.txt").write_text("not an input")
    assert _key(second) == key
    assert _key(first, version="13.1.0") != key  # another compiler version
    assert _key(first, socs=("ascend910b",)) == key  # the op's only SoC, named: same steps
    for edit in ("ops/common/extra.h", "ops/add_custom_template/kernel.c", "ops/add_custom_template/tiling.c",
                 "ops/add_custom_template/op.yaml", "ops/add_custom_template/notes.txt"):
        path = second / edit
        before = path.read_bytes() if path.exists() else None
        path.write_bytes((before or b"") + b"\n/* edited */\n" if edit.endswith((".c", ".h")) else (before or b"") + b"\n")
        assert _key(second) != key, f"editing {edit} did not change the key"
        if before is None:
            path.unlink()
        else:
            path.write_bytes(before)
        assert _key(second) == key


def test_common_key_covers_our_code_and_the_toolchain(monkeypatch):
    from opbuild import fingerprint

    before = bundles.common_key({"toolchain": "host"})
    assert bundles.common_key({"toolchain": "ccec"}) != before
    monkeypatch.setattr(fingerprint, "code_digest", lambda: "0" * 64)  # other code
    assert bundles.common_key({"toolchain": "host"}) != before


def test_cache_verify_rejects_a_well_hashed_but_malformed_bundle(tmp_path):
    cache_dir = tmp_path / "cache"
    good_key, bad_key = "aa" * 32, "bb" * 32
    out = tmp_path / "out"
    cache.store(bundles.bundle_path(cache_dir, good_key), bundles.pack("A", good_key, _files(out), out))
    bad = bundles.bundle_path(cache_dir, bad_key)
    cache.store(bad, _header_and_blobs([{"path": "../../etc/passwd", "mode": 420, "size": 1}], b"x", key=bad_key))
    found = bundles.verify_cache(cache_dir)
    assert [(str(path), "outside" in problem) for path, problem in found] == [(bad, True)]
    assert not Path(bad).exists() and Path(bundles.bundle_path(cache_dir, good_key)).exists()
    assert cache.stats(cache_dir)["bundles"] == 1


def test_installed_ops_record_round_trip_and_staleness(tmp_path):
    out = tmp_path / "out"
    files = _files(out)
    record = bundles.InstalledOps(out)
    assert record.set("A", KEY, "bundle", files) and not record.built_by_scons("A")
    assert not record.set("B", KEY, "build", [str(out / "missing")])  # an output missing: not recorded
    record.save()
    again = bundles.InstalledOps(out)
    assert again.is_current("A", KEY, files) and "B" not in again.ops
    assert not again.is_current("A", "cd" * 32, files)  # another key
    assert not again.is_current("A", KEY, files[:1])  # other outputs
    Path(files[0]).write_bytes(b"changed")
    assert not again.is_current("A", KEY, files)  # an output's stat changed
    (out / bundles.INSTALLED_FILE).write_text("{not json")
    assert bundles.InstalledOps(out).ops == {}  # unreadable: nothing is current


def test_a_bundle_that_cannot_be_written_out_is_reported_and_the_op_built(tmp_path, capsys):
    out, cache_dir = tmp_path / "out", tmp_path / "cache"
    paths = _files(out)
    cache.store(bundles.bundle_path(cache_dir, KEY), bundles.pack("A", KEY, paths, out))
    other = tmp_path / "checkout2" / "out"
    other.mkdir(parents=True)
    (other / "opp").write_text("a file where a directory must go")
    expected = [str(other / Path(p).relative_to(out)) for p in paths]
    assert bundles.restore(str(cache_dir), KEY, "A", other, expected) is None
    assert "cannot restore A from" in capsys.readouterr().err
    assert Path(bundles.bundle_path(cache_dir, KEY)).exists()  # the entry is fine: kept
