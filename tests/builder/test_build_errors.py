"""Failing builds: they say what failed and where, and leave nothing a later build could take
for done (docs/cli.md, docs/package-format.md §8); a failed build keeps the previous package:
test_build_keeps_package.py."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from build_helpers import SAMPLE_BINARIES, SOC, edit, kill_group, tree


def test_broken_spec_reports_every_problem_and_writes_nothing(project):
    p = project()
    spec = p.op_dir("MulCustom") / "op.yaml"
    spec.write_text(spec.read_text().replace("description:", "bogus_field: 1\ndescription:", 1))
    spec2 = p.op_dir("AddCustomTemplate") / "op.yaml"
    spec2.write_text(spec2.read_text().replace("dtypes: [float16, float32]", "dtypes: [float16, float99]", 1))
    result = p.scons("ops")
    assert result.rc == 1, str(result)
    assert re.search(r"ops/mul_custom/op\.yaml:\d+:\d+: .*bogus_field", result.stderr), result.stderr
    assert re.search(r"ops/add_custom_template/op\.yaml:\d+:\d+: .*float99", result.stderr), result.stderr
    assert not p.out.exists(), sorted(tree(p.out))


def test_ops_that_clash_fail_before_anything_is_written(project):
    # each op valid alone; together two ops of the custom package map ONNX Mul for opsets 11-13,
    # and two tiling sources define one global helper (opbuild/spec/project_checks.py, as validate)
    p = project()
    spec = p.op_dir("AddCustomTemplate") / "op.yaml"
    spec.write_text(spec.read_text().replace("{op_type: AddCustomTemplate, domain: com.example.custom, min_opset: 1}",
                                             "{op_type: Mul, min_opset: 11, max_opset: 13}"))
    for op in ("AddCustomTemplate", "MulCustom"):
        edit(p.op_dir(op) / "tiling.c", "uint32_t opbuild_test_helper(void) { return 0; }\n")
    result = p.scons("ops")
    assert result.rc == 1, str(result)
    assert re.search(r"^ops/mul_custom/op\.yaml:\d+:\d+: framework\.onnx\[0\] of op MulCustom \(opsets \[7, ∞\)\) and "
                     r"framework\.onnx\[0\] of op AddCustomTemplate \(opsets \[11, 13\], ops/add_custom_template/op\.yaml:"
                     r"\d+:\d+\) both map ai\.onnx::Mul in the custom package", result.stderr, re.M), result.stderr
    assert re.search(r"^ops/mul_custom/tiling\.c:\d+:10: tiling\.c's global function 'opbuild_test_helper' of op "
                     r"MulCustom clashes with .* of op AddCustomTemplate \(ops/add_custom_template/tiling\.c:\d+:10\)",
                     result.stderr, re.M), result.stderr
    assert not p.out.exists(), sorted(tree(p.out))

def test_kernel_syntax_error_names_the_op_binary_and_line(project):
    p = project()
    kernel = p.op_dir("MulCustom") / "kernel.c"
    line = kernel.read_text().count("\n") + 1
    edit(kernel, "int broken( {\n")
    result = p.scons("ops", "OPS=MulCustom")
    assert result.rc != 0, str(result)
    err = result.stderr
    assert "op MulCustom" in err and re.search(r"binary MulCustom_\w+", err), err
    assert f"kernel.c:{line}:" in err, err
    # the summary lists the failed step
    assert re.search(r"step\(s\) failed:\n  CC kernel MulCustom_\w+ \(" + SOC + r", (vendors/customize|built-in)\)",
                     err), err
    # no (partial) binary is left for a later build to pick up
    kdir = p.pkg / "op_impl/ai_core/tbe/kernel" / SOC / "mul_custom"
    assert not kdir.exists() or not list(kdir.glob("*.tmp")) and not list(kdir.glob(".*.tmp"))


def test_missing_compiler_is_named(project):
    p = project()
    result = p.scons("ops", "CC=/nonexistent/cc")
    assert result.rc != 0
    assert "/nonexistent/cc" in result.stderr, str(result)
    assert not p.out.exists()
    result = p.scons("ops", env={"CC": "no-such-compiler-xyz"})
    assert result.rc != 0
    assert "no-such-compiler-xyz" in result.stderr, str(result)


def test_bad_vendor_name_is_an_error(project):
    p = project()
    result = p.scons("ops", "VENDOR=a/b")
    assert result.rc != 0
    assert "a/b" in result.stderr and "Traceback" not in result.output, str(result)


def test_table_missing_a_declared_combination_fails_naming_it(project):
    p = project()
    spec = p.op_dir("AddCustomTemplate") / "op.yaml"
    text = spec.read_text()
    fp32 = "  - name: AddCustomTemplate_FP32\n    when: {x: float32, y: float32, z: float32}\n    key: custom_fp32\n"
    assert fp32 in text
    spec.write_text(text.replace(fp32, ""))
    result = p.scons("ops")
    assert result.rc != 0, str(result)
    assert re.search(r"^ops/add_custom_template/op\.yaml:\d+:\d+: dtype combination \(x=float32, y=float32, "
                     r"z=float32\) has no binary", result.stderr, re.M), result.stderr
    assert "x=float32/ND, y=float32/ND, z=float32/ND" in result.stderr, result.stderr
    assert not p.out.exists()


def test_c_key_callback_with_a_wrong_fragment_fails_before_building(project):
    # the C callback runs from the tiling source compiled alone (opbuild validate's check), so the
    # build stops before it writes anything, naming the callback's line in tiling.c
    p = project()
    tiling = p.op_dir("AddNCustom") / "tiling.c"
    good = 'snprintf(frag, sizeof frag, "diy,addn,%d", first->dtype);'
    text = tiling.read_text()
    assert good in text
    tiling.write_text(text.replace(good, 'snprintf(frag, sizeof frag, "diy,addn,%d", '
                                         'first->dtype == OPBUILD_DT_INT32 ? 99 : first->dtype);'))
    result = p.scons("ops", "OPS=AddNCustom")
    assert result.rc != 0, str(result)
    assert result.steps == [], str(result)
    err = result.stderr
    line = text[:text.index("add_n_custom_gen_simplified_key(")].count("\n") + 1
    assert re.search(rf"^ops/add_n_custom/tiling\.c:{line}:\d+: GenSimplifiedKey add_n_custom_gen_simplified_key "
                     r"returns 'diy,addn,99', which no binary has as its key .* \(for a call with x=int32/ND", err, re.M), err
    assert re.search(r"^ops/add_n_custom/op\.yaml:\d+:\d+: binary 'AddNCustom_INT32' is reached by no declared call",
                     err, re.M), err
    assert not p.out.exists()


def _temporaries(root: Path) -> list[str]:
    return [k for k in tree(root) if k.endswith(".tmp")] if root.exists() else []


def test_interrupted_build_then_rebuild_equals_a_clean_build(project, clean_build):
    reference, _ = clean_build
    p = project()
    proc = p.start("ops")
    lines = []
    try:
        for line in proc.stdout:  # SIGKILL the build and its compilers in the middle of a compile
            lines.append(line)
            if "] CC kernel " in line:
                break
        until = time.monotonic() + 3  # preferably while a compiler's temporary output exists
        while not _temporaries(p.out) and time.monotonic() < until and proc.poll() is None:
            time.sleep(0.002)
    finally:
        kill_group(proc)
    assert any("] CC kernel " in line for line in lines), "".join(lines)
    left = _temporaries(p.out)

    result = p.build()
    assert result.steps, str(result)
    assert tree(p.out) == tree(reference.out), f"temporaries left by the killed build: {left}"
    assert p.build().steps == []


def test_failed_build_then_fixed_source_builds_cleanly(project, clean_build):
    reference, _ = clean_build
    p = project()
    kernel = p.op_dir("AddNCustom") / "kernel.c"
    good = kernel.read_text()
    edit(kernel, "#error deliberately broken\n")
    assert p.scons("ops", "OPS=AddNCustom").rc != 0
    kernel.write_text(good)
    edit(kernel, "")
    result = p.build("OPS=AddNCustom")
    assert set(result.kernels()) >= set(SAMPLE_BINARIES["AddNCustom"])
    kernels = f"opp/vendors/customize/op_impl/ai_core/tbe/kernel/{SOC}/add_n_custom/"
    built = {k: v for k, v in tree(p.out).items() if k.startswith(kernels)}
    assert built and built == {k: v for k, v in tree(reference.out).items() if k.startswith(kernels)}


def test_spec_broken_after_a_good_build_is_still_caught(project):
    """Checked specs are cached between builds (out/.opbuild/specs.pickle): an edit must
    invalidate the entry."""
    p = project()
    p.build("OPS=AddCustomTemplate")
    spec = p.op_dir("ReduceSumCustom") / "op.yaml"
    spec.write_text(spec.read_text().replace("socs:", "bogus_field: 2\nsocs:", 1))
    result = p.scons("ops")
    assert result.rc == 1, str(result)
    assert re.search(r"ops/reduce_sum_custom/op\.yaml:\d+:\d+: .*bogus_field", result.stderr), result.stderr
    assert result.steps == []


def test_renamed_tiling_function_fails_before_building(project):
    p = project()
    p.build("OPS=MulCustom")
    before = tree(p.out)
    tiling = p.op_dir("MulCustom") / "tiling.c"
    tiling.write_text(tiling.read_text().replace("uint32_t mul_custom_tiling(", "uint32_t mul_custom_tiling_v2(", 1))
    result = p.scons("ops", "OPS=MulCustom")
    assert result.rc != 0 and result.steps == [], str(result)
    assert re.search(r"^ops/mul_custom/op\.yaml:\d+:\d+: tiling\.function 'mul_custom_tiling' is not defined in the "
                     r"tiling source ops/mul_custom/tiling\.c .*did you mean 'mul_custom_tiling_v2'\?", result.stderr,
                     re.M), result.stderr
    assert tree(p.out) == before  # the previous package is untouched


# A failed tiling link or check keeps the previous package: test_build_keeps_package.py
