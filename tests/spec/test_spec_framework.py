"""The `framework` section (ONNX adapter plugins): what it becomes, each semantic check with the
file:line:col it points at, and the package file written from it."""

from __future__ import annotations

import pytest

from opbuild.codegen.framework_json import PluginFileError, read_onnx_plugins, render_onnx_plugins
from opbuild.spec import SpecError, load_spec
from spec_helpers import BASE_SPEC, REPO, SAMPLES, where, write_op

WITH_ATTR = BASE_SPEC.replace("tiling_data:", "attrs:\n  - {name: alpha, type: float, default: 1.0}\n"
                                              "  - {name: keep, type: bool, default: false}\ntiling_data:")


def spec_with(tmp_path, framework: str, base: str = WITH_ATTR):
    return write_op(tmp_path, base + "framework:\n  onnx:\n" + framework)


def problems(tmp_path, framework: str):
    path = spec_with(tmp_path, framework)
    with pytest.raises(SpecError) as exc:
        load_spec(path)
    return path.read_text(), exc.value.problems


def test_defaults_are_filled_in(tmp_path):
    spec = load_spec(spec_with(tmp_path, "    - {op_type: Elu, max_opset: 5, attrs: {a: alpha}, defaults: {keep: true}}\n"
                                         "    - {op_type: Elu, min_opset: 6, domain: com.x}\n"))
    first, second = spec.framework.onnx
    assert (first.op_type, first.domain, first.min_opset, first.max_opset) == ("Elu", "ai.onnx", 1, 5)
    assert first.inputs == ("x",) and first.outputs == ("y",)
    assert first.attrs == (("a", "alpha"),)
    assert (second.domain, second.min_opset, second.max_opset) == ("com.x", 6, None)
    assert not second.covers(5) and second.covers(99) and first.covers(5)


def test_default_must_have_the_attr_type(tmp_path):
    text, (p,) = problems(tmp_path, "    - {op_type: Elu, defaults: {keep: maybe}}\n")
    assert "default 'maybe' of attr 'keep' is not a bool" in p.message
    assert (p.line, p.col) == where(text, "maybe")


@pytest.mark.parametrize("entry, needle, message", [
    ("{op_type: Elu, attrs: {a: alhpa}}", "alhpa", "not an attr of the op (attrs: alpha, keep); did you mean 'alpha'"),
    ("{op_type: Elu, defaults: {nope: 1}}", "nope", "defaults names 'nope'"),
    ("{op_type: Elu, inputs: [x, z]}", "z]", "inputs names 'z', which is neither an input nor an attr"),
    ("{op_type: Elu, inputs: []}", "inputs", "must map every required input of the op; missing: x"),
    ("{op_type: Elu, outputs: [w]}", "w]", "outputs names 'w', which is not an output"),
    ("{op_type: Elu, min_opset: 9, max_opset: 3}", "3}", "max_opset 3 is below min_opset 9"),
    ("{op_type: Elu, attrs: {a: alpha, b: alpha}}", "b: alpha", "ONNX attributes 'a' and 'b' both map to attr 'alpha'"),
    ("{op_type: Elu, inputs: [x, alpha], attrs: {a: alpha}}", "alpha]", "comes from ONNX input 1 and from ONNX attribute 'a'"),
])
def test_each_check_points_at_the_value(tmp_path, entry, needle, message):
    text, found = problems(tmp_path, f"    - {entry}\n")
    assert len(found) == 1, "\n".join(map(str, found))
    assert message in found[0].message
    assert (found[0].line, found[0].col) == where(text, needle, 2 if needle == "inputs" else 1)


def test_overlapping_opsets_of_one_onnx_op(tmp_path):
    text, (p,) = problems(tmp_path, "    - {op_type: Elu, max_opset: 10}\n    - {op_type: Elu, min_opset: 10}\n"
                                    "    - {op_type: Elu, domain: com.x}\n")
    assert "opsets [10, ∞) overlap those of framework.onnx[0] [1, 10]" in p.message
    assert p.line == where(text, "min_opset: 10")[0]


def test_schema_problems_of_the_section(tmp_path):
    text, found = problems(tmp_path, "    - {op_type: Elu, domain: 'bad domain', min_opset: 0, extra: 1}\n")
    messages = " | ".join(p.message for p in found)
    assert "ONNX domain 'bad domain' is not ai.onnx or a dotted name" in messages
    assert "extra" in messages and len(found) == 3


# SortCustom has no plugin: ONNX's TopK takes K as an input tensor, SortCustom sorts a whole axis.
@pytest.mark.parametrize("name", [s for s in SAMPLES if s != "sort_custom"])
def test_every_sample_has_plugins_and_the_package_file_round_trips(name, tmp_path):
    spec = load_spec(REPO / "ops" / name / "op.yaml")
    assert spec.framework.onnx
    path = tmp_path / "plugins.json"
    path.write_text(render_onnx_plugins([spec]))
    assert read_onnx_plugins(path) == {spec.op: spec.framework}
    assert render_onnx_plugins([spec]) == path.read_text()  # deterministic
    assert str(REPO) not in path.read_text()


@pytest.mark.parametrize("text, message", [
    ("{", "not valid JSON"),
    ('{"format_version": 2, "ops": {}}', "format_version"),
    ('{"format_version": 1, "ops": {"A": {"onnx": [{"op_type": "X", "min_opset": "1"}]}}}', "'1' is not of type 'integer'"),
    ('{"format_version": 1, "ops": {"A": {"onnx": [{"op_type": "X"}]}}}', "lacks inputs or outputs"),
    # two ops of one file mapping one ONNX op for a common opset (the build refuses to write it)
    ('{"format_version": 1, "ops": {"A": {"onnx": [{"op_type": "X", "inputs": [], "outputs": [], "max_opset": 12}]}, '
     '"B": {"onnx": [{"op_type": "X", "inputs": [], "outputs": [], "min_opset": 12}]}}}',
     r"ops\.B\.onnx\[0\] \(opsets \[12, ∞\)\) and ops\.A\.onnx\[0\] \(opsets \[1, 12\]\) both map ai\.onnx::X"),
    ('{"format_version": 1, "ops": {"A": {"onnx": [{"op_type": "X", "inputs": [], "outputs": []}, '
     '{"op_type": "X", "inputs": [], "outputs": [], "min_opset": 5}]}}}', r"ops\.A\.onnx\[1\]"),
])
def test_a_malformed_package_file_names_itself(tmp_path, text, message):
    path = tmp_path / "plugins.json"
    path.write_text(text)
    with pytest.raises(PluginFileError, match=message) as exc:
        read_onnx_plugins(path)
    assert str(path) in str(exc.value)
    assert read_onnx_plugins(tmp_path / "absent.json") == {}


# Two ops of one package mapping one ONNX op for a common opset: tests/spec/test_project_checks.py.
