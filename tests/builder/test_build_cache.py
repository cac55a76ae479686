"""OPBUILD_CACHE_DIR: a second checkout builds nothing. Whole ops come back as one bundle each
(opbuild/builder/bundles.py); without bundles, every compile comes from SCons's per-file cache."""

from __future__ import annotations

from build_helpers import BUILTIN, CUSTOM_WHERE, SAMPLE_BINARIES, SAMPLE_PACKAGES, expected_kernel_steps, tree

OPS = "OPS=AddNCustom,MulCustom"  # MulCustom: custom and built-in
BUNDLED = {
    # steps: sources, tiling object, aclnn C API, per binary its kernel and launch objects (once:
    # every package links the same) and per package its link, per package kernel JSONs and the
    # header copy; files: tiling object, aclnn .h and .c, per binary and package the binary and
    # its JSON, per package the op config and header
    "AddNCustom": (3 + 3 * 2 + 3 * 1 + 2, 3 + 3 * 2 + 2),
    "MulCustom": (3 + 4 * 2 + 2 * (4 * 1 + 2), 3 + 2 * (4 * 2 + 2)),
}


def _package_links_from_cache(cached: list[str]) -> None:
    for where in (CUSTOM_WHERE, BUILTIN):
        assert f"CACHE LINK libcust_opmaster_rt2.0.so ({where})" in cached
        assert f"CACHE LINK libcust_opsproto_rt2.0.so ({where})" in cached
        assert f"CACHE CC op_proto.c ({where})" in cached
    for lib, where in (("libcust_opapi.so", CUSTOM_WHERE), ("libopapi.so", BUILTIN), ("libopapi_math.so", BUILTIN)):
        assert f"CACHE LINK {lib} ({where})" in cached


def test_a_second_project_restores_every_op_from_its_bundle(project, tmp_path):
    cache = {"OPBUILD_CACHE_DIR": str(tmp_path / "cache")}
    first = project()
    result = first.build(OPS, env=cache)
    ops = {op: SAMPLE_BINARIES[op] for op in ("AddNCustom", "MulCustom")}
    assert sorted(result.kernel_steps()) == expected_kernel_steps(ops)
    assert len(list((tmp_path / "cache").glob("*/*.opbundle"))) == 2

    second = project()  # another directory: same relative command lines, same keys
    result = second.build(OPS, env=cache)
    compiled = [s for s in result.steps if s.startswith(("CC ", "LINK libcust", "LINK libopapi", "LINK kernel"))]
    assert compiled == [], f"compiled instead of retrieving: {compiled}\n{result}"
    assert result.bundles() == BUNDLED, result.steps
    _package_links_from_cache([s for s in result.steps if s.startswith("CACHE ")])
    # + the package links (5) and, per package, op_proto.c's object and its library
    compiles = sum(len(b) * (2 + len(SAMPLE_PACKAGES[op])) + 1 for op, b in ops.items()) + 5 + 2 * 2
    assert f"(0 compiled, {compiles} from cache, 0 remote)" in result.stdout.strip().splitlines()[-1]
    assert tree(second.out / "opp") == tree(first.out / "opp")
    assert second.build(OPS, env=cache).steps == []


def test_without_bundles_every_compile_comes_from_the_per_file_cache(project, tmp_path):
    cache = {"OPBUILD_CACHE_DIR": str(tmp_path / "cache")}
    ops = {op: SAMPLE_BINARIES[op] for op in ("AddNCustom", "MulCustom")}
    first = project()
    first.build(OPS, env=cache)
    for bundle in (tmp_path / "cache").glob("*/*.opbundle"):
        bundle.unlink()

    second = project()
    result = second.build(OPS, env=cache)
    compiled = [s for s in result.steps if s.startswith(("CC ", "LINK libcust", "LINK libopapi"))]
    assert compiled == [], f"compiled instead of retrieving: {compiled}\n{result}"
    assert result.bundles() == {}
    assert sorted(result.kernel_steps("CACHE ")) == expected_kernel_steps(ops)
    _package_links_from_cache([s for s in result.steps if s.startswith("CACHE ")])
    assert "from cache" in result.stdout.strip().splitlines()[-1]
    assert "Retrieved `" not in result.stdout  # SCons's own line is replaced by the CACHE step line
    assert tree(second.out) == tree(first.out)
    assert second.build(OPS, env=cache).steps == []
    assert len(list((tmp_path / "cache").glob("*/*.opbundle"))) == 2  # stored again after that build
