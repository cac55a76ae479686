"""The vocabulary (opbuild/abi/vocabulary.py) is consistent, and every table not derived from it
equals it: the JSON schemas, the spec model's Literals (the C tables are generated from it).

The C headers' codes are generated from it (tests/abi/test_generate_c.py checks they are current
and compile); the tables here are hand-written, and these tests read them and fail on any difference.
"""

from __future__ import annotations

import json
import re
import typing
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from opbuild.abi import vocabulary as v

REPO = Path(__file__).resolve().parents[2]
NATIVE = REPO / "opbuild" / "runtime" / "native"
INCLUDE = NATIVE / "include"
SCHEMAS = REPO / "schemas"


# ---- the vocabulary itself ---------------------------------------------------------------------------

def test_dtype_records_are_unique_and_consistent():
    assert len(set(v.DTYPE_NAMES)) == len(v.DTYPES) == 13
    assert len(v.DTYPE_BY_GE) == len(v.DTYPE_BY_ACL) == len(v.DTYPES)
    assert len({d.c_enum for d in v.DTYPES}) == len(v.DTYPES)
    for d in v.DTYPES:
        assert v.ACL_DATA_TYPES[d.acl_name] == d.acl, d.name
        assert d.acl == d.ge, f"{d.name}: aclDataType and ge::DataType share values"
        assert d.numpy.itemsize == d.itemsize, d.name
        assert d.numpy.name == d.name, d.name
        assert d.key_token == str(d.ge)
    assert v.DTYPE["bfloat16"].numpy == np.dtype(ml_dtypes.bfloat16)


def test_dtype_facts():
    """Spot checks against CANN (ge::DataType / aclDataType) and today's output spellings."""
    f64, f32, bf16 = v.DTYPE["float64"], v.DTYPE["float32"], v.DTYPE["bfloat16"]
    assert (f64.ge, f64.ge_name, f64.acl_name, f64.c_type, f64.kernel_json, f64.ops_info) == (
        11, "DT_DOUBLE", "ACL_DOUBLE", "double", "double", "double")
    assert (f32.ge, f32.acl_name, f32.c_type, f32.kernel_json, f32.ops_info) == (0, "ACL_FLOAT", "float", "float32", "float32")
    assert (bf16.ge, bf16.ge_name, bf16.acl_name, bf16.c_enum, bf16.c_type) == (
        27, "DT_BF16", "ACL_BF16", "OPBUILD_DT_BF16", "bfloat16_t")
    assert v.DTYPE["float16"].c_type == "half" and v.DTYPE["bool"].c_type == "uint8_t"


def test_cann_data_types_are_unique():
    names = [t.ge_name for t in v.CANN_DATA_TYPES]
    numpy_names = [t.numpy for t in v.CANN_DATA_TYPES if t.numpy]
    acls = [t.acl for t in v.CANN_DATA_TYPES if t.acl is not None]
    assert len(set(names)) == len(names) and len(set(numpy_names)) == len(numpy_names) and len(set(acls)) == len(acls)
    assert {d.ge_name for d in v.DTYPES} <= set(names)


def test_formats_impl_modes_core_types_socs():
    assert [(f.name, f.ge, f.acl) for f in v.FORMATS] == [("NCHW", 0, 0), ("NHWC", 1, 1), ("ND", 2, 2)]
    assert all(v.ACL_FORMATS[f.acl_name] == f.acl for f in v.FORMATS)
    assert v.IMPL_MODE_INDEX == {"default": 0, "high_performance": 1, "high_precision": 2}
    assert v.DEFAULT_IMPL_MODE in v.IMPL_MODE and set(v.DEFAULT_BINARY_IMPL_MODES) <= set(v.IMPL_MODE)
    assert v.impl_mode_string(v.DEFAULT_BINARY_IMPL_MODES) == "high_performance,optional"
    assert v.impl_mode_string(("high_precision",)) == "high_precision"
    assert v.impl_mode_string(("default",)) == ""
    assert v.impl_mode_string(("high_precision", "high_performance", "default")) == "high_precision,high_performance,optional"
    assert {c.name: c.binary_info_config for c in v.CORE_TYPES} == {"MIX": 0, "AiCore": 1, "VectorCore": 2}
    assert v.DEFAULT_CORE_TYPE in v.CORE_TYPE
    assert v.DEFAULT_SOC in v.SOC
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", s.name) for s in v.SOCS)
    assert v.MAX_SIMPLIFIED_KEY_LEN == 256


# ---- C sources (hand-written, asserted equal; the headers are generated: test_generate_c.py) ----------

def test_types_h_declares_the_element_types():
    text = (INCLUDE / "opbuild" / "types.h").read_text()
    assert '#include "vocabulary_gen.h"' in text  # OPBUILD_DT_*, OPBUILD_FORMAT_*
    for c_type in {d.c_type for d in v.DTYPES} - {"float", "double", "half", "bfloat16_t"}:
        assert re.fullmatch(r"u?int(8|16|32|64)_t", c_type), c_type  # <stdint.h>
    assert re.search(r"typedef\s+_Float16\s+half\s*;", text)
    assert re.search(r"\}\s*bfloat16_t\s*;", text)


def test_the_acl_size_table_agrees_with_the_op_dtypes():
    """CANN_DATA_TYPES' sizes (acl_meta.c's tables are generated from them, vocabulary_gen.h) are
    the item sizes of the dtypes ops take."""
    by_acl = {t.acl_name: t for t in v.CANN_DATA_TYPES if t.acl is not None}
    for d in v.DTYPES:
        assert by_acl[d.acl_name].size == d.itemsize and not by_acl[d.acl_name].sub_byte, d.name
    assert by_acl["ACL_COMPLEX64"].size == np.dtype(np.complex64).itemsize
    assert by_acl["ACL_COMPLEX128"].size == np.dtype(np.complex128).itemsize


# ---- JSON schemas and the spec model (asserted equal) ---------------------------------------------------

def _schema(name: str) -> dict:
    return json.loads((SCHEMAS / name).read_text())


def _enum(values: list) -> list:
    assert len(set(values)) == len(values), f"repeated enum values: {values}"
    return sorted(values)


def _dicts(obj):
    """Every JSON object in a parsed JSON document."""
    if isinstance(obj, dict):
        yield obj
        for value in obj.values():
            yield from _dicts(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from _dicts(value)


def _resolve(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = schema["$defs"][node["$ref"].removeprefix("#/$defs/")]
    return node


def test_op_spec_schema_equals_the_vocabulary():
    s = _schema("op_spec.schema.json")
    defs, props = s["$defs"], s["properties"]
    assert defs["dtype"]["enum"] == list(v.DTYPE_NAMES)  # the vocabulary's order is the spec's
    assert _enum(defs["format"]["enum"]) == sorted(v.FORMAT_NAMES)
    formats = [_resolve(s, d["properties"]["formats"]) for d in _dicts(s) if "formats" in d.get("properties", {})]
    assert formats and all(f["default"] == [v.DEFAULT_FORMAT] for f in formats)
    assert _enum(props["core_type"]["enum"]) == sorted(v.CORE_TYPE_NAMES)
    assert props["core_type"]["default"] == v.DEFAULT_CORE_TYPE
    assert props["socs"]["default"] == [v.DEFAULT_SOC]
    impl = json.dumps(s)
    found = re.findall(r'\{"enum": \[("default", [^\]]*)\]\}', impl)
    assert found, "no impl_mode enum in op_spec.schema.json"
    for text in found:
        assert _enum(json.loads(f"[{text}]")) == sorted(v.IMPL_MODE_NAMES)


def test_model_schema_equals_the_vocabulary():
    s = _schema("model.schema.json")
    assert _enum(s["$defs"]["dtype"]["enum"]) == sorted(v.DTYPE_NAMES)  # was `double` for float64 (issue 10)
    assert _enum(s["properties"]["impl_mode"]["enum"]) == sorted(v.IMPL_MODE_NAMES)
    assert s["properties"]["impl_mode"]["default"] == v.DEFAULT_IMPL_MODE
    assert s["properties"]["soc"]["default"] == v.DEFAULT_SOC


def test_spec_model_literals_equal_the_vocabulary():
    from opbuild.spec import model

    assert set(typing.get_args(model.ImplMode)) == set(v.IMPL_MODE_NAMES)
    hints = typing.get_type_hints(model.OpSpec)
    assert set(typing.get_args(hints["core_type"])) == set(v.CORE_TYPE_NAMES)
    assert model.IMPL_MODE_INDEX == v.IMPL_MODE_INDEX


def test_scaffold_uses_the_default_soc():
    text = (REPO / "templates" / "scaffold" / "op.yaml.j2").read_text()
    assert re.search(r"^socs: \[" + re.escape(v.DEFAULT_SOC) + r"\]$", text, re.M)


# ---- derived tables keep today's values ----------------------------------------------------------------

def test_op_fallback_conversions():
    from opbuild.runtime.fallback import dtypes as fb

    assert fb.acl_dtype(np.float64) == v.ACL_DATA_TYPES["ACL_DOUBLE"] == 11
    assert fb.acl_dtype(ml_dtypes.bfloat16) == 27
    assert fb.acl_dtype(np.int16) == fb.acl_dtype(np.float16) == 1  # op_fallback: unlisted types -> ACL_FLOAT16
    assert fb.acl_dtype(np.dtype("U3")) == 1  # DT_UNDEFINED -> ACL_FLOAT16 as well
    assert fb.NUMPY_TO_DT["float8_e8m0fnu"] == "DT_FLOAT8_E8M0"
    assert set(fb.DT_TO_ACL) == fb.CONVERTED_DT
    assert fb._ACL_FORMAT == {"NCHW": 0, "NHWC": 1, "ND": 2}


def test_capi_dtype_names():
    from opbuild.runtime import capi

    assert all(capi.ACL_DTYPE_NAMES[d.acl] == d.acl_name for d in v.DTYPES)
    assert capi.ACL_DTYPE_NAMES[-1] == "ACL_DT_UNDEFINED"


def test_codegen_and_platform_tables():
    from opbuild.abi.platform import known_socs, platform
    from opbuild.builder.toolchain import SOC_VERSIONS, CcecToolchain
    from opbuild.codegen.kernel_json import CORE_TYPE_SHORT, MAGIC, TASK_RATION
    from opbuild.codegen.package_json import CORE_TYPE_INT

    assert CORE_TYPE_SHORT == {"AiCore": "AIC", "VectorCore": "AIV", "MIX": "MIX"}
    assert MAGIC["VectorCore"] == "RT_DEV_BINARY_MAGIC_ELF_AIVEC" and TASK_RATION["MIX"] == "1:2"
    assert CORE_TYPE_INT == {"MIX": 0, "AiCore": 1, "VectorCore": 2}
    assert known_socs() == sorted(v.SOC_NAMES)
    assert platform("Ascend910B").core_num == v.SOC["ascend910b"].core_num == 40
    assert SOC_VERSIONS == {"ascend910b": "Ascend910B1", "ascend910_93": "Ascend910_9391", "ascend310p": "Ascend310P3"}
    assert CcecToolchain.impl_mode == "high_performance,optional"


def test_om_model_def_schema_uses_the_vocabulary():
    from opbuild.om import loader

    props = loader._MODEL_DEF_SCHEMA["properties"]
    assert props["impl_mode"]["enum"] == [m.index for m in v.IMPL_MODES]
    assert props["inputs"]["items"]["properties"]["dtype"]["enum"] == list(v.DTYPE_NAMES)
    assert [d.ge for d in v.DTYPES_BY_GE_ORDER] == sorted(v.DTYPE_BY_GE)


@pytest.mark.parametrize("dtype", v.DTYPE_NAMES)
def test_every_dtype_round_trips_through_ge_types(dtype):
    from opbuild.abi import ge_types

    assert ge_types.dtype_name(ge_types.numpy_dtype(dtype)) == dtype
    assert ge_types.GE_TO_DTYPE[ge_types.DTYPE_TO_GE[dtype]] == dtype


# ---- docs/package-format.md states the vocabulary ------------------------------------------------------

def _doc() -> str:
    return re.sub(r"\s+", " ", (REPO / "docs" / "package-format.md").read_text())


def test_package_format_doc_lists_the_ge_numbers():
    m = re.search(r"as GE enum integers \(([^;]*); ([^;]*);", _doc())
    assert m, "the default-mode key paragraph of docs/package-format.md changed"
    assert m.group(1) == ", ".join(f"{d.name} {d.ge}" for d in v.DTYPES_BY_GE_ORDER)
    assert m.group(2) == ", ".join(f"{f.name} {f.ge}" for f in v.FORMATS)


def test_package_format_doc_states_spellings_and_core_types():
    doc = _doc()
    for d in v.DTYPES:
        if d.ops_info != d.name:
            assert f"`{d.ops_info}` ({d.name})" in doc, d.name
    assert "(" + ", ".join(f"{c.name} {c.binary_info_config}" for c in sorted(v.CORE_TYPES, key=lambda c: c.binary_info_config)) + ")" in doc
    assert "; ".join(f"`{c.name}`/`{c.kernel_json}`/`{c.magic}`/`{c.task_ration}`"
                     for c in sorted(v.CORE_TYPES, key=lambda c: c.name != "VectorCore")) in doc
    assert ", ".join(f"{m.index} {m.name}" for m in v.IMPL_MODES) in doc


def test_tiling_field_types_equal_schema_and_model():
    from opbuild.spec import model

    s = _schema("op_spec.schema.json")
    found = [d["properties"]["type"]["enum"] for d in s["$defs"].values()
             if isinstance(d, dict) and "uint64" in json.dumps(d.get("properties", {}).get("type", {}))]
    assert found == [list(v.TILING_FIELD_TYPE_NAMES)]
    hints = typing.get_type_hints(model.TilingField)
    assert typing.get_args(hints["type"]) == v.TILING_FIELD_TYPE_NAMES
    assert all(np.dtype(t.c_type.removesuffix("_t")).itemsize == t.size for t in v.TILING_FIELD_TYPES
               if t.c_type.endswith("_t"))


def test_fallback_doc_table_equals_the_conversion():
    from opbuild.runtime.fallback import dtypes as fb

    text = (REPO / "docs" / "fallback.md").read_text()
    rows = dict(re.findall(r"\| (DT_\w+) \| (ACL_\w+ \(\d+\)) \|", text))
    assert rows == {dt: f"{acl} ({v.ACL_DATA_TYPES[acl]})" for dt, acl in fb.DT_TO_ACL.items()}


def test_docs_state_the_socs_and_their_defaults():
    docs = REPO / "docs"
    cli = re.sub(r"\s+", " ", (docs / "cli.md").read_text())
    assert "`--soc_version`: " + ", ".join(f"{s.name} → {s.soc_version}" for s in v.SOCS) + "." in cli
    assert f"--impl_mode={v.impl_mode_string(v.DEFAULT_BINARY_IMPL_MODES)}" in cli
    assert f"`OPBUILD_SOC` selects the SoC (default `{v.DEFAULT_SOC}`)" in (docs / "runtime.md").read_text()
    assert re.search(r"^soc: " + re.escape(v.DEFAULT_SOC) + r" +# default$", (docs / "om-format.md").read_text(), re.M)


def test_impl_mode_indexes_fit_the_dp_code():
    """settings.dp_code packs (d, p) as d * 4 + p: every p must be below 4."""
    from opbuild.runtime.settings import dp_code

    codes = {dp_code(d, m.index) for d in (0, 1) for m in v.IMPL_MODES}
    assert len(codes) == 2 * len(v.IMPL_MODES) and max(v.IMPL_MODE_BY_INDEX) < 4
