"""Structural errors (JSON Schema), reported all at once with line:col and JSON path."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator

from opbuild.spec import SpecError, load_spec
from opbuild.spec.schema import SCHEMA_PATH
from spec_helpers import BASE_SPEC, where, write_op


def problems_of(tmp_path, text, **kw):
    path = write_op(tmp_path, text, **kw)
    with pytest.raises(SpecError) as exc:
        load_spec(path)
    return exc.value.problems


def test_schema_is_valid_draft_2020_12():
    schema = json.loads(SCHEMA_PATH.read_text())
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"

    def closed(node):
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node:
                assert node.get("additionalProperties") is False or isinstance(node.get("additionalProperties"), dict)
            for v in node.values():
                closed(v)
        elif isinstance(node, list):
            for v in node:
                closed(v)

    closed(schema)


def test_unknown_field_points_at_the_key(tmp_path):
    text = BASE_SPEC.replace("    dtypes: [float16, float32]\noutputs", "    dtypes: [float16, float32]\n    dtype: x\noutputs")
    (p,) = problems_of(tmp_path, text)
    assert (p.line, p.col) == where(text, "dtype: x")
    assert p.message.startswith("unknown field 'dtype'") and p.json_path == "$.inputs[0].dtype"


def test_missing_required_field(tmp_path):
    text = BASE_SPEC.replace("tiling: {source: tiling.c, function: test_op_tiling}", "tiling: {source: tiling.c}")
    (p,) = problems_of(tmp_path, text)
    assert p.message == "missing required field 'function'"
    assert (p.line, p.col, p.json_path) == (*where(text, "{source: tiling.c}"), "$.tiling")


def test_bad_enum_and_pattern(tmp_path):
    text = BASE_SPEC.replace("op: TestOp", "op: test_op").replace("[float16, float32]\noutputs", "[float16, float99]\noutputs")
    probs = problems_of(tmp_path, text)
    assert [(p.line, p.col) for p in probs] == [where(text, "test_op"), where(text, "float99")]
    assert "not CamelCase" in probs[0].message
    assert probs[1].message.startswith("'float99' is not one of: float16, float32")
    assert probs[1].json_path == "$.inputs[0].dtypes[1]"


@pytest.mark.parametrize("spelling, meant", [("fp16", "float16"), ("half", "float16"), ("bf16", "bfloat16"),
                                             ("FP32", "float32"), ("DT_INT32", "int32"), ("double", "float64")])
def test_a_dtype_spelt_as_elsewhere_suggests_its_name(tmp_path, spelling, meant):
    """fp16, half, bf16, DT_INT32: spellings of torch, C, msopgen and GE (difflib alone finds none)."""
    text = BASE_SPEC.replace("[float16, float32]\noutputs", f"[float16, {spelling}]\noutputs")
    [problem] = problems_of(tmp_path, text)
    assert (problem.line, problem.col) == where(text, spelling)
    assert problem.message.startswith(f"'{spelling}' is not one of: float16, float32")
    assert problem.message.endswith(f"; did you mean '{meant}'?")


def test_shape_needs_exactly_one_rule(tmp_path):
    text = BASE_SPEC.replace("shape: {same_as: x}", "shape: {same_as: x, function: f}")
    (p,) = problems_of(tmp_path, text)
    assert "exactly one of: same_as, broadcast, reduce" in p.message
    assert p.json_path == "$.outputs[0].shape" and (p.line, p.col) == where(text, "{same_as")


def test_reduce_needs_axes_and_keep_dims(tmp_path):
    text = BASE_SPEC.replace("shape: {same_as: x}", "shape: {reduce: x, axes: a}")
    (p,) = problems_of(tmp_path, text)
    assert "'keep_dims' is a dependency of 'reduce'" in p.message


@pytest.mark.parametrize("value,ok", [("ignore", True), ("true", True), ("false", True), ("1", False),
                                      ("'true'", False), ("maybe", False)])
def test_deterministic_values(tmp_path, value, ok):
    text = BASE_SPEC.replace("{x: float16, y: float16}}", "{x: float16, y: float16}, deterministic: %s}" % value)
    path = write_op(tmp_path, text)
    if ok:
        load_spec(path)
    else:
        with pytest.raises(SpecError, match="deterministic must be ignore, true or false"):
            load_spec(path)


def test_output_param_type_cannot_be_optional(tmp_path):
    text = BASE_SPEC.replace("    shape: {same_as: x}", "    shape: {same_as: x}\n    param_type: optional")
    (p,) = problems_of(tmp_path, text)
    assert p.json_path == "$.outputs[0].param_type" and "required, dynamic" in p.message


def test_every_schema_problem_at_once_sorted_by_line(tmp_path):
    text = (BASE_SPEC.replace("op: TestOp", "op: TestOp\ncolor: red")
            .replace("type: uint64}", "type: u64}")
            .replace("entry: test_op}", "entry: 1}")
            + "socs: []\ncore_type: GPU\n")
    probs = problems_of(tmp_path, text)
    assert [p.json_path for p in probs] == [
        "$.color", "$.tiling_data[0].type", "$.kernel.entry", "$.socs", "$.core_type"]
    assert [p.line for p in probs] == sorted(p.line for p in probs)


def test_root_must_be_a_mapping(tmp_path):
    (p,) = problems_of(tmp_path, "- a\n- b\n")
    assert (p.line, p.col) == (1, 1) and "is not of type 'object'" in p.message


def test_broken_structure_skips_dependent_checks_without_crashing(tmp_path):
    # inputs is not a list: its schema error is reported, checks that read inputs are skipped,
    # independent semantic checks still run.
    text = BASE_SPEC.replace("  - name: x\n    dtypes: [float16, float32]\noutputs", "  5\noutputs").replace(
        "kernel: {source: kernel.c", "kernel: {source: missing.c")
    probs = problems_of(tmp_path, text)
    assert [p.json_path for p in probs] == ["$.inputs", "$.kernel.source"]
    assert "is not of type 'array'" in probs[0].message
    assert "kernel source 'missing.c' not found" in probs[1].message


def test_each_missing_field_reported_once(tmp_path):
    """jsonschema yields one `required` error per missing field; each must appear exactly once."""
    from opbuild.spec import SpecError, load_spec

    op_dir = tmp_path / "bad"
    op_dir.mkdir()
    (op_dir / "op.yaml").write_text("op: Bad\ninputs: [{name: x, dtypes: [float16]}]\n")
    try:
        load_spec(op_dir / "op.yaml")
    except SpecError as exc:
        messages = [p.message for p in exc.problems]
    else:
        raise AssertionError("a spec without outputs/kernel/tiling/binaries must not load")
    missing = [m for m in messages if m.startswith("missing required field")]
    assert sorted(missing) == sorted(set(missing)) and len(missing) == 4, messages
