"""OPBUILD_CACHE_DIR: compiled files are shared between builds (SCons CacheDir)."""

from __future__ import annotations

from build_helpers import BUILTIN, CUSTOM_WHERE, SAMPLE_BINARIES, expected_kernel_steps, tree


def test_a_second_project_retrieves_every_compile_from_the_cache(project, tmp_path):
    cache = {"OPBUILD_CACHE_DIR": str(tmp_path / "cache")}
    ops = {op: SAMPLE_BINARIES[op] for op in ("AddNCustom", "MulCustom")}  # MulCustom: custom and built-in
    first = project()
    result = first.build("OPS=AddNCustom,MulCustom", env=cache)
    assert sorted(result.kernel_steps()) == expected_kernel_steps(ops)
    assert any((tmp_path / "cache").rglob("*")), "nothing was pushed to the cache"

    second = project()  # another directory: same relative command lines, same cache keys
    result = second.build("OPS=AddNCustom,MulCustom", env=cache)
    compiled = [s for s in result.steps if s.startswith(("CC ", "LINK libcust", "LINK libopapi"))]
    assert compiled == [], f"compiled instead of retrieving: {compiled}\n{result}"
    cached = [s for s in result.steps if s.startswith("CACHE ")]
    assert sorted(result.kernel_steps("CACHE ")) == expected_kernel_steps(ops)
    for where in (CUSTOM_WHERE, BUILTIN):
        assert f"CACHE LINK libcust_opmaster_rt2.0.so ({where})" in cached
    for lib, where in (("libcust_opapi.so", CUSTOM_WHERE), ("libopapi.so", BUILTIN), ("libopapi_math.so", BUILTIN)):
        assert f"CACHE LINK {lib} ({where})" in cached
    assert "from cache" in result.stdout.strip().splitlines()[-1]
    assert "Retrieved `" not in result.stdout  # SCons's own line is replaced by the CACHE step line
    assert tree(second.out) == tree(first.out)
    assert second.build("OPS=AddNCustom,MulCustom", env=cache).steps == []
