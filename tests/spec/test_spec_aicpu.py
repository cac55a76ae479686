"""Spec errors of AI CPU ops (`engine: aicpu`), each at the line and column of what is wrong."""

from __future__ import annotations

import pytest

from opbuild.spec import SpecError, load_spec
from spec_helpers import AICPU_SPEC, BASE_SPEC, COMPUTE_C, where, write_op



def problems(tmp_path, text: str, compute: str = COMPUTE_C) -> list[tuple[int, int, str]]:
    spec = write_op(tmp_path, text, kernel=None, tiling=None, files={"compute.c": compute})
    with pytest.raises(SpecError) as info:
        load_spec(spec)
    return [(p.line, p.col, p.message) for p in info.value.problems]


def test_a_valid_ai_cpu_spec_loads(tmp_path):
    spec = load_spec(write_op(tmp_path, AICPU_SPEC, kernel=None, tiling=None, files={"compute.c": COMPUTE_C}))
    assert spec.is_aicpu and spec.compute.symbol == "test_op_compute" and spec.binaries == ()
    assert spec.kernel is None and spec.tiling is None and spec.data_dependent


@pytest.mark.parametrize("section, text", [
    ("kernel", "kernel: {source: compute.c, entry: test_op_compute}\n"),
    ("tiling", "tiling: {source: compute.c, function: test_op_compute}\n"),
    ("binaries", "binaries:\n  - {name: B, when: {x: float32, y: int64}}\n"),
    ("simplified_key", "simplified_key: {mode: default}\n"),
    ("tiling_data", "tiling_data:\n  - {name: n, type: uint64}\n"),
    ("core_type", "core_type: AiCore\n"),
])
def test_ai_core_sections_on_an_ai_cpu_op(tmp_path, section, text):
    full = AICPU_SPEC + text
    found = problems(tmp_path, full)
    line, col = where(full, f"{section}:")
    assert found == [(line, col, f"{section} is for AI Core ops: an engine: aicpu op runs its compute function "
                                 f"(remove {section})")]


def test_compute_entry_not_defined_in_the_source(tmp_path):
    text = AICPU_SPEC.replace("entry: test_op_compute", "entry: test_op_compute2")
    [(line, col, message)] = problems(tmp_path, text)
    assert (line, col) == where(text, "test_op_compute2")
    assert message.startswith("compute function 'test_op_compute2' is not defined in compute source 'compute.c'")
    assert "did you mean 'test_op_compute'" in message


def test_compute_only_declared_is_not_defined(tmp_path):
    [(_, _, message)] = problems(tmp_path, AICPU_SPEC, compute="uint32_t test_op_compute(void *ctx);\n")
    assert "is not defined in compute source" in message


def test_ai_cpu_op_without_compute(tmp_path):
    text = AICPU_SPEC.replace("compute: {source: compute.c, entry: test_op_compute}\n", "")
    assert problems(tmp_path, text) == [(1, 1, "engine: aicpu needs a compute section: {source: <file.c>, entry: "
                                               "<function>}")]


def test_compute_source_missing(tmp_path):
    text = AICPU_SPEC.replace("source: compute.c", "source: nope.c")
    [(line, col, message)] = problems(tmp_path, text)
    assert (line, col) == where(text, "nope.c") and "compute source 'nope.c' not found" in message


def test_compute_on_an_ai_core_op(tmp_path):
    text = BASE_SPEC + "compute: {source: tiling.c, entry: test_op_tiling}\n"
    spec = write_op(tmp_path, text)
    with pytest.raises(SpecError) as info:
        load_spec(spec)
    found = [(p.line, p.col, p.message) for p in info.value.problems]
    assert found == [(*where(text, "compute:"), "compute is for engine: aicpu ops (set engine: aicpu, or remove "
                                                "compute)")]


def test_data_dependent_shape_on_an_ai_core_op(tmp_path):
    text = BASE_SPEC.replace("shape: {same_as: x}", "shape: {data_dependent: true, max: [size(x)]}")
    spec = write_op(tmp_path, text)
    with pytest.raises(SpecError) as info:
        load_spec(spec)
    [problem] = info.value.problems
    assert (problem.line, problem.col) == where(text, "data_dependent")
    assert "data_dependent shapes need engine: aicpu" in problem.message


def test_max_names_no_input(tmp_path):
    text = AICPU_SPEC.replace("size(x)", "size(z)")
    [(line, col, message)] = problems(tmp_path, text)
    assert (line, col) == where(text, "size(z)")
    assert message == "output 'y' shape: max 'size(z)' names 'z', which is not an input of the op (inputs: x)"


@pytest.mark.parametrize("bound", ["size(x", "2x", "dim(x)", "rank()"])
def test_max_that_is_no_bound(tmp_path, bound):
    text = AICPU_SPEC.replace("size(x)", bound)
    [(line, col, message)] = problems(tmp_path, text)
    assert (line, col) == where(text, bound) and "is not a dimension bound" in message


def test_an_unquoted_dim_bound_split_by_yaml_says_to_quote_it(tmp_path):
    """`max: [dim(x, 0)]` is two YAML items, 'dim(x' and '0)': each error says how to write it."""
    text = AICPU_SPEC.replace("[rank(x), size(x)]", "[size(x), dim(x, 0)]")
    assert "[size(x), dim(x, 0)]" in text
    found = problems(tmp_path, text)
    assert [(line, col) for line, col, _ in found] == [where(text, "dim(x"), where(text, "0)]")]
    assert found[0][2] == ("'dim(x' is not a dimension bound: N, rank(<input>), size(<input>) or dim(<input>, <axis>); "
                           "quote a dim bound inside [...], as in max: ['dim(x, 0)'] (YAML splits [dim(x, 0)] at its "
                           "comma)")
    fixed = AICPU_SPEC.replace("[rank(x), size(x)]", "[size(x), 'dim(x, 0)']")
    spec = load_spec(write_op(tmp_path, fixed, kernel=None, tiling=None, files={"compute.c": COMPUTE_C}))
    assert spec.outputs[0].shape.operands == ("size(x)", "dim(x, 0)")


def test_data_dependent_needs_max(tmp_path):
    text = AICPU_SPEC.replace(", max: [rank(x), size(x)]", "")
    [(line, col, message)] = problems(tmp_path, text)
    assert line == where(text, "shape:")[0] and "max" in message


def test_infer_shape_function_on_an_ai_cpu_op(tmp_path):
    text = AICPU_SPEC.replace("shape: {data_dependent: true, max: [rank(x), size(x)]}", "shape: {function: f}")
    [(line, col, message)] = problems(tmp_path, text)
    assert (line, col) == where(text, "function")
    assert "has no tiling library for an infer-shape function" in message


def test_ai_core_op_without_kernel_names_each_missing_field(tmp_path):
    text = BASE_SPEC.replace("kernel: {source: kernel.c, entry: test_op}\n", "")
    spec = write_op(tmp_path, text)
    with pytest.raises(SpecError) as info:
        load_spec(spec)
    [problem] = info.value.problems
    assert problem.message.startswith("missing required field 'kernel' (an AI Core op needs kernel, tiling, binaries")
