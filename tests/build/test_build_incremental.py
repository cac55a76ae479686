"""Incremental builds: an edit rebuilds exactly what depends on it (DESIGN.md §4).

Edits append text AND move the file's mtime forward (the decider is content-timestamp). An
appended comment leaves the compiled bytes unchanged, so steps downstream of a compile (kernel
JSONs, the link) may stop there; an appended function changes them and must propagate.
"""

from __future__ import annotations

import json

from build_helpers import SAMPLE_BINARIES, SOC, backdate, bump, edit, mtimes, snapshot_code

MARKER_FN = "\nint opbuild_test_marker_{n}(void) {{ return {n}; }}\n"
TWO_OPS = "OPS=MulCustom,AddCustomTemplate"  # enough to see that the other op is left alone


def _kernel_json(p, op_dir: str, binary: str) -> dict:
    return json.loads((p.pkg / "op_impl/ai_core/tbe/kernel" / SOC / op_dir / f"{binary}.json").read_text())


def test_edited_kernel_rebuilds_only_that_ops_binaries(project):
    p = project()
    p.build(TWO_OPS)
    before = mtimes(p.out)

    edit(p.op_dir("MulCustom") / "kernel.c", "/* an edit that changes no code */\n")
    result = p.build(TWO_OPS)
    assert sorted(result.kernels()) == sorted(SAMPLE_BINARIES["MulCustom"]), str(result)
    assert set(result.steps) <= {f"CC kernel {b} ({SOC})" for b in SAMPLE_BINARIES["MulCustom"]} | {
        f"GEN MulCustom kernel JSONs ({SOC})"}, result.steps

    # a real code change: the binaries differ, so their JSONs (sha256) are regenerated too
    old = {b: _kernel_json(p, "mul_custom", b)["sha256"] for b in SAMPLE_BINARIES["MulCustom"]}
    edit(p.op_dir("MulCustom") / "kernel.c", MARKER_FN.format(n=1))
    result = p.build(TWO_OPS)
    assert sorted(result.kernels()) == sorted(SAMPLE_BINARIES["MulCustom"]), str(result)
    assert f"GEN MulCustom kernel JSONs ({SOC})" in result.steps
    assert set(result.steps) <= {f"CC kernel {b} ({SOC})" for b in SAMPLE_BINARIES["MulCustom"]} | {
        f"GEN MulCustom kernel JSONs ({SOC})"}, result.steps
    for b in SAMPLE_BINARIES["MulCustom"]:
        assert _kernel_json(p, "mul_custom", b)["sha256"] != old[b]
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
    assert compiled[:2] == ["CC tiling AddCustomTemplate", "LINK libcust_opmaster_rt2.0.so"], str(result)
    assert not [s for s in result.steps if s.startswith("CC kernel")]
    # the C key callbacks are re-checked against the new library
    assert f"GEN binary_info_config.json ({SOC})" in result.steps


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
    # every kernel compiles the launch shim; tiling objects do not
    assert sorted(result.kernels()) == sorted(b for bs in ops.values() for b in bs)
    assert not [s for s in result.steps if s.startswith(("CC tiling", "LINK"))], result.steps
    after = mtimes(p.out)
    for rel, mtime in after.items():
        if rel.endswith("_launch.c"):
            assert mtime != before[rel], rel
            assert "edited by a test" in (p.out / rel).read_text()
        elif not rel.endswith((".so", "generator.stamp")):
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
