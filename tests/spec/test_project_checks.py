"""`project_problems`: the checks between the ops of a project (opbuild/spec/project_checks.py),
over small specs written to tmp_path: each problem at the file:line:col of the later op's spec
key (or C source line), naming the earlier op and where it says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from opbuild.spec import SpecError, load_spec, load_specs, snake_case
from opbuild.spec.csource import global_functions
from opbuild.spec.model import OpSpec
from opbuild.spec.project_checks import project_problems
from spec_helpers import BASE_SPEC, OPS, where, write_op
from test_spec_aicpu import AICPU_SPEC

TILING = '#include "opbuild/tiling.h"\n{helpers}OPBUILD_API uint32_t {fn}(TilingContext *ctx) {{ return 0; }}\n'


def op(root: Path, name: str, *, onnx: tuple[str, ...] = (), package: str | None = None, tiling_fn: str | None = None,
       helpers: str = "") -> OpSpec:
    """An AI Core op `name` in root/<snake>/ (its tiling source defines `tiling_fn` and `helpers`)."""
    snake = snake_case(name)
    fn = tiling_fn or f"{snake}_tiling"
    text = BASE_SPEC.replace("TestOp", name).replace("test_op_tiling", fn)
    if package:
        text = text.replace("description:", f"package: {package}\ndescription:")
    if onnx:
        text += "framework:\n  onnx:\n" + "".join(f"    - {entry}\n" for entry in onnx)
    return load_spec(write_op(root, text, dirname=snake, tiling=TILING.format(helpers=helpers, fn=fn)))


def aicpu_op(root: Path, name: str, entry: str, helpers: str = "") -> OpSpec:
    snake = snake_case(name)
    text = AICPU_SPEC.replace("TestOp", name).replace("test_op_compute", entry)
    compute = f'#include "opbuild/aicpu.h"\n{helpers}uint32_t {entry}(AicpuContext *ctx) {{ return AICPU_OK; }}\n'
    return load_spec(write_op(root, text, dirname=snake, kernel=None, tiling=None, files={"compute.c": compute}))


def at(spec: OpSpec, needle: str, nth: int = 1) -> str:
    line, col = where(spec.spec_path.read_text(), needle, nth)
    return f"{spec.spec_path}:{line}:{col}"


# ~~~ ONNX adapter plugins ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~


def test_two_ops_mapping_one_onnx_op_for_a_common_opset(tmp_path):
    a = op(tmp_path, "EluA", onnx=("{op_type: Elu, min_opset: 13}",))
    b = op(tmp_path, "EluB", onnx=("{op_type: Elu, min_opset: 11, max_opset: 13}",))
    (p,) = project_problems([a, b])
    assert f"{p.file}:{p.line}:{p.col}" == at(b, "{op_type: Elu") and p.json_path == "$.framework.onnx[0]"
    assert (f"framework.onnx[0] of op EluB (opsets [11, 13]) and framework.onnx[0] of op EluA (opsets [13, ∞), "
            f"{at(a, '{op_type: Elu')}) both map ai.onnx::Elu in the custom package") in p.message
    assert "a node of opset 13" in p.message


@pytest.mark.parametrize("first, second", [
    ("{op_type: Elu, max_opset: 10}", "{op_type: Elu, min_opset: 11}"),      # disjoint opsets
    ("{op_type: Elu, min_opset: 13}", "{op_type: Elu, domain: com.x}"),      # another domain
    ("{op_type: Elu, min_opset: 13}", "{op_type: Selu, min_opset: 13}"),     # another op type
])
def test_ops_mapping_different_onnx_ops_or_opsets_are_fine(tmp_path, first, second):
    assert project_problems([op(tmp_path, "EluA", onnx=(first,)), op(tmp_path, "EluB", onnx=(second,))]) == []


def test_onnx_overlaps_count_only_inside_one_package(tmp_path):
    a = op(tmp_path, "EluA", onnx=("{op_type: Elu}",))
    b = op(tmp_path, "EluB", onnx=("{op_type: Elu}",), package="built-in")  # a custom op overrides a built-in one
    assert project_problems([a, b]) == []
    both = op(tmp_path / "2", "EluA", onnx=("{op_type: Elu}",), package="[custom, built-in]")
    c = op(tmp_path / "2", "EluC", onnx=("{op_type: Elu}",), package="[built-in, custom]")
    (p,) = project_problems([both, c])
    assert "in the custom and built-in packages" in p.message


def test_the_package_plugin_file_is_written_without_checking_again(tmp_path):
    """The build's private copy of the rule is gone: render_onnx_plugins writes what it gets."""
    import json

    from opbuild.codegen.framework_json import render_onnx_plugins

    a = op(tmp_path, "EluA", onnx=("{op_type: Elu}",))
    b = op(tmp_path, "EluB", onnx=("{op_type: Elu}",))
    assert project_problems([a, b]) and set(json.loads(render_onnx_plugins([a, b]))["ops"]) == {"EluA", "EluB"}


# ~~~ names one library or file tree gets twice ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~


def test_tiling_functions_of_two_ops_clash(tmp_path):
    a = op(tmp_path, "OpA", tiling_fn="shared_tiling")
    b = op(tmp_path, "OpB", tiling_fn="shared_tiling")
    (p,) = project_problems([a, b])
    assert f"{p.file}:{p.line}:{p.col}" == at(b, "shared_tiling") and p.json_path == "$.tiling.function"
    assert (f"tiling.function 'shared_tiling' of op OpB clashes with tiling.function of op OpA "
            f"({at(a, 'shared_tiling')}) in libcust_opmaster_rt2.0.so of the custom package") in p.message
    assert "fail to link" in p.message
    # in different packages they go into different libraries
    assert project_problems([a, op(tmp_path / "2", "OpB", tiling_fn="shared_tiling", package="built-in")]) == []
    both = [op(tmp_path / "3", name, tiling_fn="shared_tiling", package="[custom, built-in]") for name in ("OpA", "OpB")]
    (p,) = project_problems(both)  # said once, for both packages
    assert "in libcust_opmaster_rt2.0.so of the custom and built-in packages" in p.message


def test_global_helper_functions_of_two_tiling_sources_clash_at_their_lines(tmp_path):
    helper = "uint32_t\nceil_div(uint32_t a, uint32_t b) { return (a + b - 1) / b; }\n"
    a = op(tmp_path, "OpA", helpers=helper)
    b = op(tmp_path, "OpB", helpers="/* a helper */\n" + helper)
    (p,) = project_problems([a, b])
    assert (p.file, p.line, p.col, p.json_path) == (str(b.op_dir / "tiling.c"), 4, 1, "")
    assert f"clashes with tiling.c's global function of op OpA ({a.op_dir / 'tiling.c'}:3:1)" in p.message
    assert "make one static or rename it" in p.message
    for local in ("static ", "static inline ", "inline ", "__attribute__((weak)) "):
        c = op(tmp_path / local.strip("_ ()"), "OpC", helpers=local + helper)
        assert project_problems([a, c]) == [], local


def test_a_tiling_function_named_like_a_generated_infer_function(tmp_path):
    a = op(tmp_path, "OpA")
    b = op(tmp_path, "OpB", tiling_fn="OpAInferShape")
    (p,) = project_problems([a, b])
    assert f"{p.file}:{p.line}:{p.col}" == at(b, "OpAInferShape")
    assert f"clashes with the generated infer-shape function of op OpA ({at(a, 'OpA')})" in p.message
    own = op(tmp_path / "own", "OpC", tiling_fn="OpCInferDataType")  # its own generated function
    assert "the generated infer-dtype function of op OpC" in project_problems([own])[0].message


def test_aclnn_names_of_two_ops_clash(tmp_path):
    a = op(tmp_path, "Foo")
    b = op(tmp_path, "FooGetWorkspaceSize")  # its aclnn<Op> is Foo's phase 1
    (p,) = project_problems([a, b])
    assert f"{p.file}:{p.line}:{p.col}" == at(b, "FooGetWorkspaceSize") and p.json_path == "$.op"
    assert (f"the aclnn phase-2 function 'aclnnFooGetWorkspaceSize' of op FooGetWorkspaceSize clashes with the "
            f"aclnn phase-1 function of op Foo ({at(a, 'Foo')})") in p.message


def test_ai_cpu_compute_entries_clash(tmp_path):
    a = aicpu_op(tmp_path, "CpuA", "shared_compute", helpers="int helper(void) { return 0; }\n")
    b = aicpu_op(tmp_path, "CpuB", "shared_compute", helpers="static int helper(void) { return 0; }\n")
    (p,) = project_problems([a, b])
    assert f"{p.file}:{p.line}:{p.col}" == at(b, "shared_compute") and p.json_path == "$.compute.entry"
    assert "in libcust_aicpu_kernels.so of the custom package" in p.message
    (p,) = project_problems([aicpu_op(tmp_path / "2", "CpuC", "RunCpuKernel")])
    assert "compute.entry 'RunCpuKernel' of op CpuC clashes with the generated AI CPU kernel registry" in p.message


def test_an_op_defined_twice_is_said_once(tmp_path):
    a = op(tmp_path / "one", "OpA", onnx=("{op_type: Elu}",))
    again = op(tmp_path / "two", "OpA", onnx=("{op_type: Elu}",))
    (p,) = project_problems([a, again])
    assert f"{p.file}:{p.line}:{p.col}" == at(again, "OpA") and p.message == f"op OpA is also defined in {at(a, 'OpA')}"


def test_two_ops_of_one_snake_case_name(tmp_path):
    a, b = op(tmp_path / "one", "Abc"), op(tmp_path / "two", "ABC", tiling_fn="upper_tiling")  # both abc
    (p,) = project_problems([a, b])
    assert f"{p.file}:{p.line}:{p.col}" == at(b, "ABC")
    assert f"the snake_case name 'abc' of op ABC clashes with the snake_case name of op Abc ({at(a, 'Abc')})" in p.message


def test_load_specs_reports_them_with_every_other_problem(tmp_path):
    op(tmp_path, "EluA", onnx=("{op_type: Elu, min_opset: 13}",))
    op(tmp_path, "EluB", onnx=("{op_type: Elu, min_opset: 11, max_opset: 13}",), tiling_fn="elu_a_tiling")
    broken = write_op(tmp_path, BASE_SPEC.replace("uint64}", "u64}"))
    with pytest.raises(SpecError) as exc:
        load_specs([tmp_path])
    assert sorted((Path(p.file).parent.name, p.json_path) for p in exc.value.problems) == [
        ("elu_b", "$.framework.onnx[0]"), ("elu_b", "$.tiling.function"), ("test_op", "$.tiling_data[0].type")]
    assert broken.exists()


def test_the_samples_fit_together():
    assert project_problems(load_specs([OPS])) == []


def test_global_functions_of_a_c_source():
    text = ('#define BLOCK(x) { x }\nstatic uint32_t\nlocal(int x)\n{\n    if (x) { return "}"; }\n    return 0;\n}\n'
            "/* int commented(void) { } */\nstruct S { int a; };\nstatic const int table[] = {1, 2};\n"
            "OPBUILD_API uint32_t exported(TilingContext *ctx) { return local(1); }\nint prototype(void);\n"
            "char brace = '{';\nuint32_t\nhelper(uint32_t a,\n       uint32_t b)\n{\n    for (;;) { }\n}\n")
    found = [(f.name, f.line, f.col, f.exported) for f in global_functions(text)]
    assert found == [("exported", 11, 22, True), ("helper", 15, 1, False)]
