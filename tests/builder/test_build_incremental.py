"""Incremental builds: an edit rebuilds exactly what depends on it (docs/package-format.md §8).

Edits append text AND move the file's mtime forward (the decider is content-timestamp). An
appended comment leaves the compiled bytes unchanged, so steps downstream of a compile (kernel
JSONs, the link) may stop there; an appended function changes them and must propagate.
"""

from __future__ import annotations

import json

import pytest

from build_helpers import (
    BUILTIN,
    CUSTOM_WHERE,
    SAMPLE_BINARIES,
    SOC,
    backdate,
    bump,
    edit,
    expected_kernel_compiles,
    expected_kernel_steps,
    mtimes,
    snapshot_code,
)

MARKER_FN = "\nint opbuild_test_marker_{n}(void) {{ return {n}; }}\n"
TWO_OPS = "OPS=MulCustom,AddCustomTemplate"  # enough to see that the other op is left alone
# MulCustom is built into the custom and the built-in package (ops_math), AddCustomTemplate into the custom one
MUL_WHERE = (CUSTOM_WHERE, BUILTIN)


def _kernel_json(p, op_dir: str, binary: str, where: str = CUSTOM_WHERE) -> dict:
    kernel = (p.pkg / "op_impl/ai_core/tbe/kernel" / SOC / op_dir if where == CUSTOM_WHERE
              else p.builtin / "op_impl/ai_core/tbe/kernel" / SOC / "ops_math" / op_dir)
    return json.loads((kernel / f"{binary}.json").read_text())


def _mul_kernel_steps() -> set[str]:
    return {f"{k}{b} ({SOC}, {w})" for b in SAMPLE_BINARIES["MulCustom"] for w in MUL_WHERE
            for k in ("CC kernel ", "CC launch ", "LINK kernel ")} | {
        f"GEN MulCustom kernel JSONs ({SOC}, {w})" for w in MUL_WHERE}


def test_edited_kernel_rebuilds_only_that_ops_binaries(project):
    p = project()
    p.build(TWO_OPS)
    before = mtimes(p.out)

    mul = {"MulCustom": SAMPLE_BINARIES["MulCustom"]}
    edit(p.op_dir("MulCustom") / "kernel.c", "/* an edit that changes no code */\n")
    result = p.build(TWO_OPS)
    # compiled once (both packages link the objects); the same objects: nothing relinked
    assert sorted(result.kernel_steps()) == expected_kernel_compiles(mul), str(result)
    assert set(result.steps) <= _mul_kernel_steps(), result.steps

    # a real code change: the binaries differ, so their JSONs (sha256) are regenerated too
    old = {(b, w): _kernel_json(p, "mul_custom", b, w)["sha256"] for b in SAMPLE_BINARIES["MulCustom"]
           for w in MUL_WHERE}
    edit(p.op_dir("MulCustom") / "kernel.c", MARKER_FN.format(n=1))
    result = p.build(TWO_OPS)
    assert sorted(result.kernel_steps()) == expected_kernel_steps(mul), str(result)
    for w in MUL_WHERE:
        assert f"GEN MulCustom kernel JSONs ({SOC}, {w})" in result.steps
    assert set(result.steps) <= _mul_kernel_steps(), result.steps
    for (b, w), sha in old.items():
        assert _kernel_json(p, "mul_custom", b, w)["sha256"] != sha, (b, w)
    after = mtimes(p.out)
    changed = {k for k in after if after[k] != before.get(k)}
    assert changed and not [k for k in changed if "/mul_custom/" not in k], sorted(changed)


def test_edited_tiling_source_recompiles_its_object_and_relinks(project):
    p = project()
    p.build(TWO_OPS)
    edit(p.op_dir("AddCustomTemplate") / "tiling.c", "/* comment only */\n")
    result = p.build(TWO_OPS)
    assert [s for s in result.steps if s.startswith(("CC ", "LINK"))] == ["CC tiling AddCustomTemplate"], str(result)

    edit(p.op_dir("AddCustomTemplate") / "tiling.c", MARKER_FN.format(n=2))
    result = p.build(TWO_OPS)
    compiled = [s for s in result.steps if s.startswith(("CC ", "LINK"))]
    assert compiled[:2] == ["CC tiling AddCustomTemplate", f"LINK libcust_opmaster_rt2.0.so ({CUSTOM_WHERE})"], \
        str(result)
    assert not [s for s in result.steps if s.startswith("CC kernel")]
    # the C key callbacks are re-checked against the new library
    assert f"GEN binary_info_config.json ({SOC}, {CUSTOM_WHERE})" in result.steps
    # the built-in package has no AddCustomTemplate: its tiling library stays
    assert not [s for s in result.steps if s.endswith(f"({BUILTIN})")], result.steps

    # an op in both packages: both tiling libraries are relinked, both configs re-checked
    edit(p.op_dir("MulCustom") / "tiling.c", MARKER_FN.format(n=4))
    result = p.build(TWO_OPS)
    assert "CC tiling MulCustom" in result.steps, str(result)
    for w in MUL_WHERE:
        assert f"LINK libcust_opmaster_rt2.0.so ({w})" in result.steps
    assert f"GEN binary_info_config.json ({SOC}, {CUSTOM_WHERE})" in result.steps
    assert f"GEN ops_math/binary_info_config.json ({SOC}, {BUILTIN})" in result.steps
    assert not [s for s in result.steps if s.startswith("CC kernel")]


def test_edited_spec_regenerates_that_op(project):
    p = project()
    p.build(TWO_OPS)
    spec = p.op_dir("AddCustomTemplate") / "op.yaml"
    spec.write_text(spec.read_text().replace("description: z = x + y, elementwise, same shape",
                                             "description: z = x + y (edited)"))
    bump(spec)
    result = p.build(TWO_OPS)
    assert "GEN AddCustomTemplate sources" in result.steps
    assert not [s for s in result.steps if s.startswith("CC ")], result.steps  # same header, same shim
    assert not [s for s in result.steps if "MulCustom" in s]


def test_generator_files_cover_every_template_and_codegen_module():
    from opbuild import codegen
    from opbuild.codegen.env import TEMPLATES_DIR

    files = set(codegen.GENERATOR_FILES)
    assert set(TEMPLATES_DIR.glob("*.j2")) <= files
    codegen_dir = TEMPLATES_DIR.parent / "opbuild" / "codegen"
    if not codegen_dir.is_dir():  # an installed wheel
        codegen_dir = codegen.GENERATOR_FILES[0].parent
    assert {p for p in codegen_dir.glob("*.py") if p.name != "scaffold.py"} <= files


def test_edited_template_regenerates_what_it_renders(tmp_path, project):
    code = snapshot_code(tmp_path / "code")  # this test edits the generator: its own copy
    p = project(code)
    ops = {op: SAMPLE_BINARIES[op] for op in ("MulCustom", "AddCustomTemplate")}
    p.build(TWO_OPS)
    before = mtimes(p.out)

    template = code / "templates" / "launch_shim.c.j2"
    edit(template, "/* launch shim template edited by a test */\n")
    result = p.build(TWO_OPS)
    for op in ops:
        assert f"GEN {op} sources" in result.steps, str(result)
    # every binary compiles the launch shim (once, for every package of its op); tiling objects do not
    assert sorted(result.kernel_steps()) == expected_kernel_compiles(ops)
    assert not [s for s in result.steps if s.startswith(("CC tiling", "LINK lib"))], result.steps
    after = mtimes(p.out)
    for rel, mtime in after.items():
        if rel.endswith("_launch.c"):
            assert mtime != before[rel], rel
            assert "edited by a test" in (p.out / rel).read_text()
        elif not rel.endswith((".so", ".o", "generator.stamp")):  # compiled: the launch objects and binaries
            assert mtime == before[rel], f"{rel} was rewritten"

    # a generator module edit that changes no output: generation re-runs, nothing is rewritten
    before = mtimes(p.out)
    edit(code / "opbuild" / "codegen" / "naming.py", "# a comment\n")
    result = p.build(TWO_OPS)
    assert "GEN generator.stamp" in result.steps
    assert not [s for s in result.steps if s.startswith(("CC ", "LINK"))], result.steps
    after = mtimes(p.out)
    assert {k for k in after if after[k] != before[k]} == {"build/customize/generator.stamp"}


def test_up_to_date_manifest_skips_the_graph_and_notices_edits(project):
    """A build from files that were not just edited records the up-to-date manifest; the next
    no-op run answers from it, and any edit (or another option) goes back to SCons."""
    p = project()
    backdate(p.root)
    p.build(TWO_OPS)
    assert (p.out / ".opbuild" / "uptodate.pickle").is_file()
    before = mtimes(p.out)
    result = p.build(TWO_OPS)
    assert result.steps == [] and "nothing changed" in result.stdout, str(result)
    assert mtimes(p.out) == before

    # asked to check everything: the normal SCons path, which agrees
    result = p.build(TWO_OPS, env={"OPBUILD_FULL_CHECK": "1"})
    assert result.steps == [] and "is up to date" in result.stdout and "nothing changed" not in result.stdout
    assert mtimes(p.out) == before

    # other options: another key
    assert "nothing changed" not in p.build("OPS=AddCustomTemplate,MulCustom").stdout

    # an edited kernel: SCons decides again
    edit(p.op_dir("AddCustomTemplate") / "kernel.c", MARKER_FN.format(n=3))
    result = p.build(TWO_OPS)
    assert sorted(result.kernels()) == sorted(SAMPLE_BINARIES["AddCustomTemplate"]), str(result)
    assert not (p.out / ".opbuild" / "uptodate.pickle").exists()  # just edited: not trusted yet

    # a deleted output is rebuilt, not reported up to date
    backdate(p.root / "ops")
    p.build(TWO_OPS)
    p.build(TWO_OPS)
    victim = p.pkg / "op_impl/ai_core/tbe/kernel" / SOC / "mul_custom" / "MulCustom_INT32.so"
    victim.unlink()
    result = p.build(TWO_OPS)
    assert result.kernels() == ["MulCustom_INT32"], str(result)
    assert victim.is_file()

    # a new op directory is noticed
    backdate(p.root / "ops")
    p.build(TWO_OPS)
    p.build(TWO_OPS)
    (p.root / "ops" / "empty_dir").mkdir()
    result = p.build(TWO_OPS)
    assert "nothing changed" not in result.stdout


def test_edited_compute_source_recompiles_that_op_and_relinks_the_ai_cpu_library(project):
    """AI CPU ops: one compile per compute source, one library per package; an edit recompiles its
    op's object and relinks libcust_aicpu_kernels.so, nothing else."""
    aicpu_ops = "OPS=NonZeroCustom,SortCustom"
    p = project()
    p.build(aicpu_ops)
    library = p.pkg / "op_impl/cpu/aicpu_kernel/impl/libcust_aicpu_kernels.so"
    before = library.read_bytes()
    edit(p.op_dir("SortCustom") / "compute.c", "/* comment only */\n")
    result = p.build(aicpu_ops)
    assert result.steps == ["CC compute SortCustom"], str(result)  # same object: the link stops there
    edit(p.op_dir("SortCustom") / "compute.c", MARKER_FN.format(n=5))
    result = p.build(aicpu_ops)
    assert sorted(result.steps) == ["CC compute SortCustom", f"LINK libcust_aicpu_kernels.so ({CUSTOM_WHERE})"], \
        str(result)
    assert library.read_bytes() != before
    assert p.build(aicpu_ops).steps == []


def test_memcheck_variant_is_part_of_the_build_signature(project):
    """OPBUILD_MEMCHECK is the build's variant: after a no-op build (the manifest recorded), a
    checked build is not "nothing changed" but rebuilds instrumented, and a plain one afterwards
    rebuilds plain (before, the manifest's key left it out: both were answered "up to date" and
    the kernels stayed what they were)."""
    import shutil as _shutil
    import subprocess as _subprocess

    cc = _shutil.which("cc") or "gcc"
    asan = _subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    if not asan.startswith("/"):
        pytest.skip("the C compiler has no AddressSanitizer runtime")
    p = project()
    backdate(p.root)
    one = "OPS=AddCustomTemplate"
    kernel = p.pkg / "op_impl/ai_core/tbe/kernel" / SOC / "add_custom_template" / "AddCustomTemplate_FP32.so"
    p.build(one)
    assert "nothing changed" in p.build(one).stdout
    checked = p.build(one, env={"OPBUILD_MEMCHECK": "1"})
    assert "nothing changed" not in checked.stdout and "AddCustomTemplate_FP32" in checked.kernels(), str(checked)
    assert b"libasan" in kernel.read_bytes()
    plain = p.build(one)
    assert "nothing changed" not in plain.stdout and "AddCustomTemplate_FP32" in plain.kernels(), str(plain)
    assert b"libasan" not in kernel.read_bytes()
