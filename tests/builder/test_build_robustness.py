"""Issue 12 item 7: one build at a time per out/ (a second waits), a failed write of the
up-to-date manifest or of the installed-ops record ends the build non-zero with one line, and
with OPBUILD_CACHE_SECRET a cache entry rewritten together with its .sha256 is rejected."""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from build_helpers import kill_group, tree

pytestmark = pytest.mark.slow

OPS = "OPS=AddNCustom"


def test_a_build_waits_for_the_one_holding_the_lock_on_out(project, clean_build):
    p = project()
    p.out.mkdir()
    fd = os.open(p.out, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # another build holds out/
    proc = p.start("ops")
    try:
        first = ""
        while "opbuild: waiting for another build of" not in first:
            line = proc.stdout.readline()
            assert line, first  # (it must not end while out/ is locked)
            first += line
        assert not (p.out / "opp").exists()  # nothing written while it waits
    except BaseException:
        kill_group(proc)
        raise
    finally:
        os.close(fd)  # released: the build goes on
    rest, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, first + rest
    assert tree(p.out / "opp") == tree(clean_build[0].out / "opp")


def test_two_concurrent_builds_in_one_tree_both_succeed(project, clean_build):
    p = project()
    procs = [p.start("ops"), p.start("ops")]
    outputs = [proc.communicate(timeout=300)[0] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], outputs
    assert tree(p.out / "opp") == tree(clean_build[0].out / "opp")


def test_a_failed_manifest_write_ends_the_build_non_zero_with_one_line(project, tmp_path):
    inject = tmp_path / "inject"
    inject.mkdir()
    # a full disk when (and only when) the manifest is written
    (inject / "sitecustomize.py").write_text(
        "import errno, os, opbuild.atomic as a\n"
        "_real = a.atomic_write\n"
        "def atomic_write(path, *args, **kw):\n"
        "    if os.path.basename(path) == 'uptodate.pickle':\n"
        "        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))\n"
        "    return _real(path, *args, **kw)\n"
        "a.atomic_write = atomic_write\n")
    p = project()
    result = p.scons("ops", OPS, env={"PYTHONPATH": f"{inject}{os.pathsep}{p.code}"})
    assert result.rc == 1, str(result)
    assert "Traceback" not in result.output
    assert result.stderr.strip().splitlines()[-1] == \
        f"error: cannot write the up-to-date manifest: {p.out / '.opbuild' / 'uptodate.pickle'}: No space left on device"
    assert not (p.out / ".opbuild" / "uptodate.pickle").exists()
    assert p.build(OPS).rc == 0  # nothing half-written: the next build is fine


def test_a_failed_installed_ops_record_write_ends_the_build_non_zero_with_one_line(project):
    p = project()
    record = p.out / ".opbuild" / "ops.json"
    (record / "in-the-way").mkdir(parents=True)  # the record cannot be written
    result = p.scons("ops", OPS)
    assert result.rc != 0, str(result)
    assert "Traceback" not in result.output
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and str(record) in last, result.stderr


def _opbuild(code: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k not in ("OPBUILD_CACHE_DIR", "OPBUILD_CACHE_SECRET")}
    full.update(env, PYTHONPATH=str(code))
    return subprocess.run([sys.executable, "-m", "opbuild.cli", *args], env=full, capture_output=True, text=True)


def _rewrite(entry: Path) -> None:
    """Change an entry and write its new sha256, as someone with write access to the cache could
    (the HMAC line, which they cannot compute, is kept)."""
    data = bytearray(entry.read_bytes())
    data[-1] ^= 0xFF
    entry.write_bytes(bytes(data))
    lines = Path(f"{entry}.sha256").read_text().splitlines()
    Path(f"{entry}.sha256").write_text("\n".join([hashlib.sha256(bytes(data)).hexdigest(), *lines[1:]]) + "\n")


def test_with_a_cache_secret_a_rewritten_entry_is_rejected_removed_and_rebuilt(project, tmp_path, code):
    cache = tmp_path / "cache"
    env = {"OPBUILD_CACHE_DIR": str(cache), "OPBUILD_CACHE_SECRET": "team-secret"}
    first = project()
    first.build(OPS, env=env)
    [bundle] = cache.glob("*/*.opbundle")
    assert Path(f"{bundle}.sha256").read_text().splitlines()[1].startswith("hmac-sha256 ")
    assert _opbuild(code, "cache", "verify", env=env).returncode == 0

    _rewrite(bundle)
    # without the secret, the sha256 alone cannot tell (the trust model: docs/cli.md)
    assert _opbuild(code, "cache", "verify", env={"OPBUILD_CACHE_DIR": str(cache)}).returncode == 0
    second = project()
    result = second.build(OPS, env=env)
    assert "opbuild: cache: corrupt op bundle" in result.output and "HMAC does not match" in result.output, str(result)
    assert result.bundles() == {}  # not used: the op was built (its compiles come from the per-file cache)
    assert tree(second.out / "opp") == tree(first.out / "opp")
    [bundle] = cache.glob("*/*.opbundle")  # stored again, with a good HMAC
    assert _opbuild(code, "cache", "verify", env=env).returncode == 0

    victim = max((p for p in cache.glob("*/*") if p.suffix not in (".sha256", ".opbundle", ".opspec")
                  and p.is_file() and not p.name.startswith(".")), key=lambda p: p.stat().st_size)
    _rewrite(victim)
    verified = _opbuild(code, "cache", "verify", env=env)
    assert verified.returncode == 1 and victim.name in verified.stdout and "HMAC" in verified.stdout, verified
    assert not victim.exists()
