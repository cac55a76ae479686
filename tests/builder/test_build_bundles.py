"""End to end: ops whose outputs are current are left out of the SCons graph, whole ops come back
from their bundle, and files SCons did not write itself are never trusted by it."""

from __future__ import annotations

import json
from pathlib import Path

from build_helpers import SOC, edit, tree

OPS = "OPS=AddNCustom,MulCustom"
FULL = {"OPBUILD_FULL_CHECK": "1"}  # past the up-to-date manifest: the SCons path decides


def _cache(tmp_path: Path) -> dict[str, str]:
    return {"OPBUILD_CACHE_DIR": str(tmp_path / "cache")}


def _kernel(project, op: str = "AddNCustom") -> Path:
    return project.op_dir(op) / "kernel.c"


def _binaries_match_their_json(pkg: Path) -> None:
    """Every kernel JSON's sha256 is its binary's (a restored or rebuilt package is coherent)."""
    import hashlib

    jsons = list((pkg / "op_impl" / "ai_core" / "tbe" / "kernel" / SOC).glob("*/*.json"))
    assert jsons
    for path in jsons:
        data = json.loads(path.read_text())
        binary = path.with_name(data["binFileName"] + data["binFileSuffix"])
        assert hashlib.sha256(binary.read_bytes()).hexdigest() == data["sha256"], path


def test_current_ops_are_not_declared(project):
    p = project()
    p.build(OPS)
    edit(_kernel(p), "\nint opbuild_test_edit(void) { return 1; }\n")
    result = p.build(OPS, "--tree=prune", env=FULL)
    assert any(s.startswith("CC kernel AddNCustom_") for s in result.steps)
    assert not any("MulCustom" in s for s in result.steps)
    tree_text = result.stdout
    assert "add_n_custom/AddNCustom_FP16.so" in tree_text
    assert "mul_custom/MulCustom_FP16.so" not in tree_text  # MulCustom is current: not in the graph
    assert "mul_custom_tiling.o" in tree_text  # its tiling object is an input of the package's library
    result = p.build(OPS, env=FULL)
    assert result.steps == []  # nothing changed: SCons finds the package steps up to date


def test_a_removed_output_of_a_current_op_is_built_again(project):
    p = project()
    p.build(OPS)
    binary = p.pkg / "op_impl" / "ai_core" / "tbe" / "kernel" / SOC / "add_n_custom" / "AddNCustom_FP16.so"
    good = binary.read_bytes()
    binary.unlink()
    result = p.build(OPS, env=FULL)
    assert result.steps == [f"LINK kernel AddNCustom_FP16 ({SOC}, vendors/customize)"], result.steps
    assert binary.read_bytes() == good


def test_a_restored_build_is_the_package_of_a_local_build(project, tmp_path):
    first = project()
    first.build(OPS, env=_cache(tmp_path))
    second = project()
    result = second.build(OPS, env=_cache(tmp_path))
    assert set(result.bundles()) == {"AddNCustom", "MulCustom"}
    assert tree(second.out / "opp") == tree(first.out / "opp")
    _binaries_match_their_json(second.pkg)

    # the up-to-date manifest knows the restored ops' inputs: an edit is noticed without FULL_CHECK
    assert "(nothing changed" in second.build(OPS, env=_cache(tmp_path)).stdout
    edit(_kernel(second), "\nint opbuild_test_edit(void) { return 1; }\n")
    result = second.build(OPS, env=_cache(tmp_path))
    assert sorted(b for b, _, _ in result.kernel_steps() if b.startswith("AddNCustom")) == \
        ["AddNCustom_FP16", "AddNCustom_FP32", "AddNCustom_INT32"]
    assert result.bundles() == {}
    _binaries_match_their_json(second.pkg)

    result = second.scons("-c", "ops", env=_cache(tmp_path))
    assert result.rc == 0 and not (second.out / "opp").exists(), str(result)


def test_a_corrupt_bundle_is_reported_and_the_op_built(project, tmp_path):
    first = project()
    first.build("OPS=AddNCustom", env=_cache(tmp_path))
    [bundle] = (tmp_path / "cache").glob("*/*.opbundle")
    good = bundle.read_bytes()
    bundle.write_bytes(good[:-100] + bytes(100))
    second = project()
    result = second.build("OPS=AddNCustom", env=_cache(tmp_path))
    assert f"corrupt op bundle {bundle}" in result.stderr, str(result)
    assert result.bundles() == {}
    assert len(result.kernel_steps("CACHE ")) == 3  # each compile from its own (per-file) entry
    assert tree(second.out / "opp") == tree(first.out / "opp")
    assert bundle.read_bytes() == good  # stored again, from the build's own outputs


def test_scons_never_vouches_for_files_it_did_not_write(project, tmp_path):
    """A: built locally (SCons records v1). The op then changes to v2, whose bundle another
    checkout made: A restores v2. Back at v1, the v1 bundle is gone: SCons must rebuild the op,
    although its own records say the v1 outputs are up to date (the files on disk are v2's)."""
    cache = _cache(tmp_path)
    a = project()
    a.build("OPS=AddNCustom")  # v1, no cache: SCons's own build
    v1 = _kernel(a).read_text()
    v1_tree = tree(a.out / "opp")
    v2 = v1 + "\nint opbuild_test_version(void) { return 2; }\n"  # other code: other binaries
    b = project()
    _kernel(b).write_text(v2)
    b.build("OPS=AddNCustom", env=cache)  # bundle of v2
    _kernel(a).write_text(v2)
    result = a.build("OPS=AddNCustom", env={**cache, **FULL})
    assert set(result.bundles()) == {"AddNCustom"}
    assert tree(a.out / "opp") == tree(b.out / "opp")

    _kernel(a).write_text(v1)
    result = a.build("OPS=AddNCustom", env=FULL)  # no cache: v1 only from SCons
    assert sorted(b for b, _, _ in result.kernel_steps()) == ["AddNCustom_FP16", "AddNCustom_FP32", "AddNCustom_INT32"]
    assert tree(a.out / "opp") == v1_tree


def test_cache_disable_reads_no_bundle_and_cache_readonly_stores_none(project, tmp_path):
    project().build("OPS=AddNCustom", env=_cache(tmp_path))
    result = project().build("OPS=AddNCustom", "--cache-disable", env=_cache(tmp_path))
    assert result.bundles() == {} and len(result.kernel_steps()) == 3 and not result.kernel_steps("CACHE ")
    empty = tmp_path / "empty"
    empty.mkdir()
    result = project().build("OPS=AddNCustom", "--cache-readonly", env={"OPBUILD_CACHE_DIR": str(empty)})
    assert len(result.kernel_steps()) == 3
    assert not [p for p in empty.rglob("*") if p.is_file() and p.name not in ("config", "CACHEDIR.TAG")
                and not p.name.endswith(".jsonl")]


def _ops_in_configs(project) -> dict[str, list[str]]:
    """{config path under out/opp: the ops it lists} for every binary_info_config.json."""
    return {str(c.relative_to(project.out / "opp")): sorted(json.loads(c.read_text()))
            for c in sorted((project.out / "opp").rglob("binary_info_config.json"))}


def test_ops_keeps_the_other_current_ops_in_their_packages(project):
    import subprocess
    import sys

    p = project()
    p.build()
    everything = _ops_in_configs(p)
    assert "MulCustom" in everything["vendors/customize/op_impl/ai_core/tbe/kernel/config/ascend910b/binary_info_config.json"]

    edit(_kernel(p), "\nint opbuild_test_edit(void) { return 1; }\n")
    result = p.build("OPS=AddNCustom")
    assert {s.split()[2] for s in result.steps if s.startswith(("CC kernel", "LINK kernel"))} == \
        {"AddNCustom_FP16", "AddNCustom_FP32", "AddNCustom_INT32"}
    assert _ops_in_configs(p) == everything  # the other four ops stay in both packages
    run = subprocess.run([sys.executable, str(p.code / "examples" / "run_samples.py"), str(p.out / "opp")],
                         env=p.env(), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "all sample ops correct" in run.stdout, run.stdout + run.stderr

    edit(p.op_dir("MulCustom") / "op.yaml", "\n# edited\n")  # MulCustom is no longer what was built
    result = p.build("OPS=AddNCustom")
    assert "left out of the packages, changed since they were built: MulCustom" in result.stdout
    configs = _ops_in_configs(p)
    assert not [path for path, ops in configs.items() if "MulCustom" in ops]
    assert configs["built-in/op_impl/ai_core/tbe/kernel/config/ascend910b/ops_nn/binary_info_config.json"] == \
        ["LeakyReluCustom"]
    p.build()  # all ops: MulCustom back
    assert _ops_in_configs(p) == everything
