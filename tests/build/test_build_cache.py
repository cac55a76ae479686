"""OPBUILD_CACHE_DIR: compiled files are shared between builds (SCons CacheDir)."""

from __future__ import annotations

from build_helpers import SAMPLE_BINARIES, tree


def test_a_second_project_retrieves_every_compile_from_the_cache(project, tmp_path):
    cache = {"OPBUILD_CACHE_DIR": str(tmp_path / "cache")}
    ops = {op: SAMPLE_BINARIES[op] for op in ("AddNCustom", "MulCustom")}
    first = project()
    result = first.build("OPS=AddNCustom,MulCustom", env=cache)
    assert len(result.kernels()) == sum(len(b) for b in ops.values())
    assert any((tmp_path / "cache").rglob("*")), "nothing was pushed to the cache"

    second = project()  # another directory: same relative command lines, same cache keys
    result = second.build("OPS=AddNCustom,MulCustom", env=cache)
    compiled = [s for s in result.steps if s.startswith(("CC ", "LINK libcust"))]
    assert compiled == [], f"compiled instead of retrieving: {compiled}\n{result}"
    cached = [s for s in result.steps if s.startswith("CACHE ")]
    assert sorted(s.split()[3] for s in cached if s.startswith("CACHE CC kernel ")) == sorted(
        b for bs in ops.values() for b in bs)
    assert "CACHE LINK libcust_opmaster_rt2.0.so" in cached
    assert "from cache" in result.stdout.strip().splitlines()[-1]
    assert "Retrieved `" not in result.stdout  # SCons's own line is replaced by the CACHE step line
    assert tree(second.out) == tree(first.out)
    assert second.build("OPS=AddNCustom,MulCustom", env=cache).steps == []
