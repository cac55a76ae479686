"""A read-only shared cache works read-only (issue 25): the documented setup (a read-only mount
and `--cache-readonly`) died with an OSError traceback creating SCons's `config.lock`. Now the
config is read without a lock file, nothing is written, a corrupt entry is reported and left in
place, and a cache that cannot be written without `--cache-readonly` is one line naming it.

The fast tests make writes fail by patching `os.open`/`os.unlink` to raise EROFS (as root, chmod
does not stop writes); the end-to-end one mounts the cache read-only in a mount namespace
(root with `unshare`) or, when not root, removes its write permissions."""

from __future__ import annotations

import errno
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from opbuild.builder import cache
from opbuild.builder.stores import SharedStore

KEY = "ab" + "0" * 30


def _cache(root: Path) -> Path:
    """A cache SCons has set up (config, CACHEDIR.TAG), holding one entry."""
    cls = cache.verified_cache_class()
    cls(str(root))
    SharedStore(str(root), "compile").put(KEY, b"object bytes")
    return root


def _read_only(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    """Every write under `root` fails as on a read-only mount."""
    real_open, real_unlink = os.open, os.unlink
    writes = os.O_WRONLY | os.O_RDWR | os.O_CREAT

    def ro_open(path, flags, *args, **kwargs):
        if str(path).startswith(str(root)) and flags & writes:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, flags, *args, **kwargs)

    def ro_unlink(path, *args, **kwargs):
        if str(path).startswith(str(root)):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", ro_open)
    monkeypatch.setattr(os, "unlink", ro_unlink)


def test_a_read_only_cache_is_opened_without_a_lock_file_and_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _cache(tmp_path / "cache")
    _read_only(monkeypatch, root)
    cdir = cache.verified_cache_class(readonly=True)(str(root))
    assert cdir.config == {"prefix_len": 2}
    assert cdir.store.read(cdir.store.path(KEY), "x.o") == b"object bytes"
    assert not (root / "config.lock").exists()


def test_a_cache_that_cannot_be_written_without_cache_readonly_is_one_error(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    root = _cache(tmp_path / "cache")
    _read_only(monkeypatch, root)
    with pytest.raises(cache.CacheError, match="cannot write the cache .*give --cache-readonly"):
        cache.verified_cache_class()(str(root))


def test_a_read_only_cache_without_config_is_an_empty_one(tmp_path: Path) -> None:
    """Nothing was ever pushed to it (no config yet): SCons's layout for a new cache, no entries;
    a config that is not a regular file or not a JSON object is named."""
    import SCons.CacheDir  # type: ignore[import-not-found]

    (tmp_path / "cache").mkdir()
    assert cache.verified_cache_class(readonly=True)(str(tmp_path / "cache")).config == {
        "prefix_len": SCons.CacheDir.CACHE_PREFIX_LEN}
    (tmp_path / "cache" / "config").write_text("[1, 2]")
    with pytest.raises(cache.CacheError, match=r"config is not a JSON object"):
        cache.verified_cache_class(readonly=True)(str(tmp_path / "cache"))
    (tmp_path / "cache" / "config").unlink()
    os.mkfifo(tmp_path / "cache" / "config")
    with pytest.raises(cache.CacheError, match=r"read-only cache without a usable .*config"):
        cache.verified_cache_class(readonly=True)(str(tmp_path / "cache"))


@pytest.mark.parametrize("readonly", [True, False], ids=["--cache-readonly", "writable store, read-only mount"])
def test_a_corrupt_entry_of_a_read_only_cache_is_reported_and_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str],
                                                                  readonly: bool) -> None:
    root = _cache(tmp_path / "cache")
    store = SharedStore(str(root), "compile", readonly=readonly)
    entry = store.path(KEY)
    Path(entry).write_bytes(b"object bytez")
    _read_only(monkeypatch, root)
    assert store.read(entry, "x.o") is None
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "corrupt entry" in err and "x.o" in err
    assert ("left in place (read-only cache)" if readonly else "not removed (Read-only file system)") in err
    assert os.path.exists(entry)


# ---- end to end: scons ops --cache-readonly from a read-only cache -------------------------------

OPS = "OPS=AddNCustom"
_MOUNT_RO = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'


def _read_only_command(root: Path) -> list[str] | None:
    """A command prefix under which `root` is read-only (root: a read-only bind mount in a private
    mount namespace), [] when not root (the caller removes write permission), None if neither."""
    if os.geteuid() != 0:
        return []
    if shutil.which("unshare") is None:
        return None
    probe = subprocess.run(["unshare", "-m", "sh", "-c", _MOUNT_RO + "; exit 1", str(root), "true"],
                           capture_output=True)
    return ["unshare", "-m", "sh", "-c", _MOUNT_RO, str(root)] if probe.returncode == 0 else None


@pytest.mark.slow
def test_scons_ops_builds_from_a_read_only_mounted_cache(project, tmp_path: Path) -> None:
    from build_helpers import tree

    root = tmp_path / "cache"
    first = project()
    first.build(OPS, env={"OPBUILD_CACHE_DIR": str(root)})
    [bundle] = root.glob("*/*.opbundle")
    data = bytearray(bundle.read_bytes())
    data[-1] ^= 0xFF  # a corrupt bundle: reported, left in place, the op built from the per-file entries
    bundle.write_bytes(bytes(data))
    prefix = _read_only_command(root)
    if prefix is None:
        pytest.skip("root without a usable `unshare -m` + read-only bind mount")
    before = tree(root)
    second = project()
    if not prefix:
        for d, _, files in os.walk(root):
            os.chmod(d, 0o555)
    try:
        proc = subprocess.run(prefix + second.command(("ops", OPS, "--cache-readonly"), 2), cwd=second.root,
                              env=second.env({"OPBUILD_CACHE_DIR": str(root)}), capture_output=True, text=True,
                              timeout=600)
    finally:
        for d, _, files in os.walk(root):
            os.chmod(d, 0o755)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "config.lock" not in proc.stderr
    assert "corrupt op bundle" in proc.stderr
    assert re.search(r"\(0 compiled, [1-9]\d* from cache", proc.stdout), proc.stdout  # from the per-file entries
    assert tree(second.out / "opp") == tree(first.out / "opp")
    assert tree(root) == before  # nothing written, nothing removed
