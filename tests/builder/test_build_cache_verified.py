"""The shared cache is safe to share: entries are verified on read (a corrupt one is reported,
not used, and replaced), the key includes the toolchain's identity, and `opbuild cache
stats|verify|prune` manage it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from build_helpers import SAMPLE_DIRS, tree

OPS = "OPS=AddNCustom"


def _entries(cache: Path, per_file_only: bool = False) -> list[Path]:
    """Cache entries; per_file_only: SCons's (not op bundles nor checked specs)."""
    return sorted(p for p in cache.glob("*/*") if p.is_file() and not p.name.endswith(".sha256")
                  and not p.name.startswith(".tmp-")
                  and not (per_file_only and p.name.endswith((".opbundle", ".opspec"))))


def _opbuild(code: Path, *args: str, cache: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(code)}
    env.pop("OPBUILD_CACHE_DIR", None)
    if cache is not None:
        env["OPBUILD_CACHE_DIR"] = str(cache)
    return subprocess.run([sys.executable, "-m", "opbuild.cli", *args], env=env, capture_output=True, text=True)


def test_corrupt_entries_are_reported_replaced_and_never_used(project, tmp_path, code):
    cache = tmp_path / "cache"
    env = {"OPBUILD_CACHE_DIR": str(cache)}
    first = project()
    first.build(OPS, env=env)
    entries = _entries(cache, per_file_only=True)
    assert len(entries) == 14  # 3 kernels and their 6 objects, 1 tiling and 1 op_proto object, 3 libraries
    [bundle] = list(cache.glob("*/*.opbundle"))  # and the op's bundle
    assert len(list(cache.glob("*/*.opspec"))) == len(SAMPLE_DIRS)  # and every sample spec, checked
    for e in [*entries, bundle]:  # every entry has its hash beside it
        assert Path(f"{e}.sha256").read_text().splitlines()[0] == __import__("hashlib").sha256(e.read_bytes()).hexdigest()

    victim = max(entries, key=lambda e: e.stat().st_size)
    good = victim.read_bytes()
    victim.write_bytes(good[:-64] + b"\0" * 64)  # same size, wrong content
    bundle.unlink()  # the op is then built step by step: each compile reads its own entry
    second = project()
    result = second.build(OPS, env=env)
    assert "opbuild: cache: corrupt entry" in result.stderr and victim.name in result.stderr, str(result)
    compiled = [s for s in result.steps if s.startswith(("CC ", "LINK lib", "LINK kernel ")) and "liboptiling" not in s]
    assert len(compiled) == 1, result.steps  # the corrupt entry's output was built, not retrieved
    assert tree(second.out) == tree(first.out)
    assert victim.read_bytes() == good  # replaced by the rebuilt output

    assert bundle.exists()  # stored again by the second build
    stats = json.loads(_opbuild(code, "cache", "stats", "--json", cache=cache).stdout)
    # per-file: 14 + 1 misses (the corrupt one), 13 hits, 14 + 1 pushes; the bundle: a miss and a
    # push in each build
    # entries: the 14 per-file ones, the bundle and every sample's checked spec
    assert stats["entries"] == 15 + len(SAMPLE_DIRS) and stats["bundles"] == 1 and stats["specs"] == len(SAMPLE_DIRS)
    assert stats["corrupt"] == 1 and stats["hits"] == 13
    assert stats["misses"] == 17 and stats["pushes"] == 17
    assert stats["bytes"] == sum(e.stat().st_size for e in _entries(cache))
    assert stats["bundle_bytes"] == bundle.stat().st_size

    verified = _opbuild(code, "cache", "verify", cache=cache)
    assert verified.returncode == 0 and f"{15 + len(SAMPLE_DIRS)} entries checked, 0 corrupt" in verified.stdout, verified
    Path(f"{victim}.sha256").write_text("0" * 64 + "\n")
    verified = _opbuild(code, "cache", "verify", cache=cache)
    assert verified.returncode == 1 and victim.name in verified.stdout, verified
    assert not victim.exists() and len(_entries(cache)) == 14 + len(SAMPLE_DIRS)  # all but the victim

    old = _entries(cache)[0]
    os.utime(old, (1, 1))
    pruned = _opbuild(code, "cache", "prune", "--max-age", "30d", cache=cache)
    assert pruned.returncode == 0 and "removed 1 entries" in pruned.stdout, pruned
    assert not old.exists() and not Path(f"{old}.sha256").exists()
    pruned = _opbuild(code, "cache", "prune", "--dir", str(cache), "--max-size", "0")
    assert pruned.returncode == 0 and _entries(cache) == []
    assert _opbuild(code, "cache", "stats").returncode == 1  # no directory given


def test_another_compiler_version_never_hits(project, tmp_path):
    """Same command lines (`cc ...`), another `cc --version`: no entry is shared."""
    cache = tmp_path / "cache"
    project().build(OPS, env={"OPBUILD_CACHE_DIR": str(cache)})
    bindir = tmp_path / "bin"
    bindir.mkdir()
    real = subprocess.run(["sh", "-c", "command -v cc"], capture_output=True, text=True).stdout.strip()
    (bindir / "cc").write_text(f'#!/bin/sh\nif [ "$1" = --version ]; then echo "cc (fake) 99.1"; exit 0; fi\n'
                               f'exec {real} "$@"\n')
    (bindir / "cc").chmod(0o755)
    env = {"OPBUILD_CACHE_DIR": str(cache), "PATH": f"{bindir}:{os.environ['PATH']}", "CC": "cc"}
    result = project().build(OPS, env=env)
    assert not [s for s in result.steps if s.startswith("CACHE ")], result.steps
    assert "(14 compiled, 0 from cache" in result.stdout.strip().splitlines()[-1]


def test_a_cache_dir_that_is_not_a_directory_stops_the_build_before_anything_is_written(project, tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    p = project()
    for given, problem in ((not_a_dir, "is not a directory"), (not_a_dir / "sub", "cannot create the cache directory")):
        result = p.scons("ops", OPS, env={"OPBUILD_CACHE_DIR": str(given)})
        assert result.rc == 1 and f"error: OPBUILD_CACHE_DIR={given}" in result.stderr and problem in result.stderr, str(result)
        assert "Traceback" not in result.output and not p.out.exists()


def test_a_compiler_environment_variable_is_part_of_the_key(project, tmp_path):
    """CPATH adds include directories to every compile: with it set, nothing is shared with a
    build without it (neither per-file entries nor op bundles), and the manifest notices it."""
    cache = {"OPBUILD_CACHE_DIR": str(tmp_path / "cache")}
    first = project()
    first.build(OPS, env=cache)
    headers = tmp_path / "headers"
    headers.mkdir()
    result = project().build(OPS, env={**cache, "CPATH": str(headers)})
    assert not [s for s in result.steps if s.startswith("CACHE ")], result.steps
    assert "(14 compiled, 0 from cache" in result.stdout.strip().splitlines()[-1]
    result = first.build(OPS, env={**cache, "CPATH": str(headers)})  # not "nothing changed"
    assert "nothing changed" not in result.stdout and result.bundles() == {"AddNCustom": (14, 11)}
