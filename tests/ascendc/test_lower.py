"""The Ascend C spec fields and the lowering of an Ascend C op against a host description
(opbuild/ascendc/lower.py), on descriptions written here: no compiler involved."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest

from opbuild.abi.ascendc_bridge import bridge_symbol
from opbuild.ascendc.lower import ascendc_problems, lowered_tiling_fields
from opbuild.codegen.tiling import tiling_struct_size
from opbuild.spec.loader import read_spec
from opbuild.spec.model import TilingField

HERE = Path(__file__).resolve().parent
OPS = HERE / "ops"

LEAKY_DESCRIPTION = {
    "ops": [{
        "op": "LeakyAscendc", "file": "op_host/leaky_ascendc.cpp", "line": 40,
        "inputs": [{"name": "x", "param_type": "required", "dtypes": ["float32"], "formats": ["ND"], "line": 44}],
        "outputs": [{"name": "y", "param_type": "required", "dtypes": ["float32"], "formats": ["ND"], "line": 45}],
        "attrs": [{"name": "negative_slope", "param_type": "optional", "type": "float", "default": 0.0, "line": 46}],
        "socs": ["ascend910b"], "has_tiling": True, "has_infer_shape": True, "has_infer_dtype": True,
    }],
    "tiling": [{"op": "LeakyAscendc", "class": "TilingData", "size": 16, "fields": [
        {"name": "totalLength", "type": "uint32_t", "offset": 0, "size": 4},
        {"name": "tileNum", "type": "uint32_t", "offset": 4, "size": 4},
        {"name": "slope", "type": "float", "offset": 8, "size": 4},
    ]}],
}


def _spec(tmp_path: Path, name: str = "leaky_ascendc", edit=None):
    target = tmp_path / "ops" / name
    shutil.copytree(OPS / name, target)
    if edit is not None:
        path = target / "op.yaml"
        path.write_text(edit(path.read_text()))
    spec, problems, marks = read_spec(target / "op.yaml")
    assert problems == [] and spec is not None
    return spec, marks


def test_an_ascendc_spec_loads_with_its_host_as_tiling(tmp_path):
    spec, _ = _spec(tmp_path)
    assert spec.is_ascendc and spec.kernel_api == "ascendc"
    assert spec.tiling.source == "op_host/leaky_ascendc.cpp"
    assert spec.tiling.symbol == bridge_symbol("leaky_ascendc", "tiling") == "leaky_ascendc_opbuild_tiling"
    assert spec.tiling_data == ()


@pytest.mark.parametrize("edit, message", [
    (lambda t: t + "tiling: {source: tiling.c, function: f}\n", "tiling is for C-API ops"),
    (lambda t: t + "tiling_data:\n  - {name: n, type: uint32}\n", "tiling_data is for C-API ops"),
    (lambda t: t.replace("host: {source: op_host/leaky_ascendc.cpp}\n", ""), "missing required field 'host'"),
    (lambda t: t.replace("api: ascendc", "api: c"), "host is for Ascend C ops"),
    (lambda t: t.replace("op_host/leaky_ascendc.cpp", "../x.cpp"), "leaves the op directory"),
])
def test_section_rules(tmp_path, edit, message):
    target = tmp_path / "ops" / "leaky_ascendc"
    shutil.copytree(OPS / "leaky_ascendc", target)
    path = target / "op.yaml"
    path.write_text(edit(path.read_text()))
    spec, problems, _ = read_spec(path)
    assert spec is None and any(message in str(p) for p in problems), problems


def test_lowering_fills_tiling_data_keys_and_shapes(tmp_path):
    spec, marks = _spec(tmp_path)
    lowered, problems = ascendc_problems(spec, marks, LEAKY_DESCRIPTION, "op_host/leaky_ascendc.cpp", (0,))
    assert problems == []
    # 12 bytes of fields, 16 by CANN's 8-byte rounding: the padding is explicit
    assert lowered.tiling_data == (TilingField("totalLength", "uint32"), TilingField("tileNum", "uint32"),
                                   TilingField("slope", "float"), TilingField("opbuild_pad0", "uint8", 4))
    assert tiling_struct_size(lowered) == 16 and lowered.tiling_class == "TilingData"
    assert lowered.outputs[0].shape.kind == "function"
    assert lowered.outputs[0].shape.operands == (bridge_symbol("leaky_ascendc", "infer_shape"),)


def test_inner_padding_is_kept():
    fields, problems = lowered_tiling_fields({"size": 24, "fields": [
        {"name": "a", "type": "uint8_t", "offset": 0, "size": 1},
        {"name": "b", "type": "uint64_t", "offset": 8, "size": 8},
        {"name": "c", "type": "int16_t", "offset": 16, "size": 2, "count": 3},
    ]})
    assert problems == []
    assert fields == [TilingField("a", "uint8"), TilingField("opbuild_pad0", "uint8", 7), TilingField("b", "uint64"),
                      TilingField("c", "int16", 3), TilingField("opbuild_pad1", "uint8", 2)]


def _describe(**changes):
    d = copy.deepcopy(LEAKY_DESCRIPTION)
    for path, value in changes.items():
        node = d["ops"][0]
        *parents, last = path.split("__")
        for p in parents:
            node = node[int(p)] if p.isdigit() else node[p]
        node[int(last) if last.isdigit() else last] = value
    return d


@pytest.mark.parametrize("changes, where, message", [
    ({"inputs__0__name": "a"}, "inputs[0].name", "input 0 is 'x' here but 'a' in the OpDef (op_host/leaky_ascendc.cpp:44)"),
    ({"inputs__0__dtypes": ["float16"]}, "inputs[0].dtypes", "input x dtypes (by combination) ['float32'] differ"),
    ({"outputs__0__param_type": "dynamic"}, "outputs[0].param_type", "output y is required here but dynamic"),
    ({"attrs__0__default": 0.5}, "attrs[0].default", "attr negative_slope defaults to 0.0 here but to 0.5"),
    ({"attrs__0__type": "int"}, "attrs[0].type", "attr negative_slope is float here but int"),
    ({"attrs": []}, "attrs", "op.yaml declares 1 attrs, the OpDef of LeakyAscendc 0"),
    ({"socs": ["ascend310p"]}, "socs[0]", "SoC ascend910b is not configured by the OpDef"),
    ({"has_tiling": False}, "host.source", "sets no tiling function"),
])
def test_every_difference_is_one_problem_at_the_yaml_line(tmp_path, changes, where, message):
    spec, marks = _spec(tmp_path)
    lowered, problems = ascendc_problems(spec, marks, _describe(**changes), "op_host/leaky_ascendc.cpp", (0,))
    assert lowered is None
    assert len(problems) == 1, problems
    assert message in problems[0].message and problems[0].json_path == f"$.{where}", problems[0]
    assert problems[0].file.endswith("op.yaml") and problems[0].line > 0


def test_no_opdef_names_what_is_registered(tmp_path):
    spec, marks = _spec(tmp_path)
    description = _describe(op="LeakyAscendC")
    lowered, problems = ascendc_problems(spec, marks, description, "op_host/leaky_ascendc.cpp", (0,))
    assert lowered is None and "registers no OpDef LeakyAscendc" in problems[0].message
    assert "did you mean LeakyAscendC" in problems[0].message or "LeakyAscendC" in problems[0].message


def test_a_struct_field_is_lowered_as_its_bytes(tmp_path):
    """TILING_DATA_FIELD_DEF_STRUCT(Sub, sub): a uint8 array of the nested class's size at its offset
    (padding before it explicit); the kernel reads it through the kernel-side header's struct."""
    from opbuild.ascendc.lower import lowered_tiling_fields

    d = copy.deepcopy(LEAKY_DESCRIPTION)
    tiling = d["tiling"][0]
    tiling["fields"].append({"name": "sub", "type": "Sub", "offset": 16, "size": 16, "count": 1, "struct": "Sub"})
    tiling["size"] = 32
    fields, problems = lowered_tiling_fields(tiling)
    assert problems == []
    assert [(f.name, f.type, f.count) for f in fields[-2:]] == [("opbuild_pad0", "uint8", 4), ("sub", "uint8", 16)]
    spec, marks = _spec(tmp_path)
    lowered, problems = ascendc_problems(spec, marks, d, "op_host/leaky_ascendc.cpp", (0,))
    assert problems == [] and [f.name for f in lowered.tiling_data][-1] == "sub"
