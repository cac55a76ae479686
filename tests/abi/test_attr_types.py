"""The attribute types are declared once (opbuild/abi/vocabulary.py ATTR_TYPES) and every table
keyed by attribute type is that declaration, seen one way.

* each derived table equals what the records say (so a table that lost a type, or spells one
  differently, fails);
* a record added to the vocabulary reaches every derived table (checked in a fresh interpreter
  whose vocabulary has one more record: a table written out by hand would not have it);
* the hand-written copies (the spec model's Literal for type checkers, the docs) equal the
  records (the C codes are generated: tests/abi/test_generate_c.py);
* the runtime's check and conversion of an argument behave as the spec promises.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import typing
from pathlib import Path

import numpy as np
import pytest

from opbuild import nonfinite
from opbuild.runtime.host import tiling_context
from opbuild.abi import vocabulary as v
from opbuild.codegen import aclnn_c, package_json
from opbuild.runtime import capi, torch_ops
from opbuild.runtime.call import aicpu, arguments, cache_key
from opbuild.spec import fields, model

REPO = Path(__file__).resolve().parents[2]

DERIVED = {
    # name: (the table, what the records say it is)
    "spec.fields.ATTR_TYPES": (lambda: fields.ATTR_TYPES, lambda ts: tuple(t.name for t in ts)),
    "runtime.host.tiling_context.ATTR_TYPES": (lambda: tiling_context.ATTR_TYPES, lambda ts: {t.name: t.tiling for t in ts}),
    "codegen.aclnn_c.ATTR_C_TYPE": (lambda: aclnn_c.ATTR_C_TYPE, lambda ts: {t.name: t.aclnn_c for t in ts}),
    "codegen.aclnn_c._SCALAR_ATTRS": (lambda: aclnn_c._SCALAR_ATTRS,
                                      lambda ts: tuple(t.name for t in ts if t.aclnn_by_address)),
    "codegen.package_json.OPS_INFO_ATTR_TYPE": (lambda: package_json.OPS_INFO_ATTR_TYPE,
                                                lambda ts: {t.name: t.ops_info for t in ts}),
    "runtime.call.cache_key.ATTR_TAGS": (lambda: cache_key.ATTR_TAGS, lambda ts: {t.name: t.key_tag for t in ts}),
    "runtime.call.arguments._ATTR_CHECK": (lambda: arguments._ATTR_CHECK, lambda ts: {t.name: t.check for t in ts}),
    "runtime.call.arguments._ATTR_CONVERT": (lambda: arguments._ATTR_CONVERT,
                                             lambda ts: {t.name: t.convert for t in ts}),
    "runtime.torch_ops._SCHEMA_TYPES": (lambda: torch_ops._SCHEMA_TYPES, lambda ts: {t.name: t.torch for t in ts}),
    "runtime.call.aicpu.ATTR_TYPES": (lambda: aicpu.ATTR_TYPES,
                                      lambda ts: {t.name: t.aicpu for t in ts if t.aicpu is not None}),
    "nonfinite.FLOAT_ATTR_TYPES": (lambda: nonfinite.FLOAT_ATTR_TYPES,
                                   lambda ts: frozenset(t.name for t in ts if t.element == "float")),
    "runtime.capi._SCALAR_ATTR (keys)": (lambda: tuple(capi._SCALAR_ATTR),
                                         lambda ts: tuple(t.name for t in ts if t.aclnn_by_address)),
    "runtime.capi._ARRAY_ATTR (keys)": (lambda: tuple(capi._ARRAY_ATTR),
                                        lambda ts: tuple(t.name for t in ts if t.is_list)),
}
"""Every table keyed by attribute type outside the vocabulary (the C headers and the model's
Literal are checked below)."""


# ---- the records ---------------------------------------------------------------------------------

def test_records_are_unique_and_consistent():
    assert v.ATTR_TYPE_NAMES == ("int", "float", "bool", "str", "list_int", "list_float", "list_bool")
    assert tuple(v.ATTR_TYPE.values()) == v.ATTR_TYPES
    for field in ("name", "tiling", "key_tag", "aclnn_c", "ops_info", "torch", "c_enum", "key_tag_c_enum"):
        values = [getattr(t, field) for t in v.ATTR_TYPES]
        assert len(set(values)) == len(values), field
    aicpu_codes = [t.aicpu for t in v.ATTR_TYPES if t.aicpu is not None]
    assert len(set(aicpu_codes)) == len(aicpu_codes)
    for t in v.ATTR_TYPES:
        assert t.name == (f"list_{t.element}" if t.is_list else t.element), t.name
        assert v.ATTR_TYPE[t.element].is_list is False, f"{t.name}: its element type is a scalar type"
        assert (t.aicpu is None) == t.is_list, f"{t.name}: AI CPU compute functions take the scalars only"
        assert t.aclnn_by_address == (not t.is_list and t.element != "str"), t.name


def test_a_record_is_hashable_and_its_functions_are_cached():
    t = v.ATTR_TYPE["list_float"]
    assert {t: 1}[v.ATTR_TYPE["list_float"]] == 1
    assert t.check is t.check and t.convert is t.convert


# ---- the derived tables --------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(DERIVED))
def test_derived_table_equals_the_records(name):
    table, expected = DERIVED[name]
    assert table() == expected(v.ATTR_TYPES), name


def test_spec_fields_take_the_vocabulary_names_themselves():
    assert fields.ATTR_TYPES is v.ATTR_TYPE_NAMES
    attr_record = next(r for r in fields.RECORDS if r.name == "attr")
    type_field = next(f for f in attr_record.fields if f.name == "type")
    assert tuple(type_field.type.values) == v.ATTR_TYPE_NAMES


def test_spec_model_literal_equals_the_records():
    """Written out (type checkers read it), so held to the records here."""
    assert typing.get_args(model.AttrType) == v.ATTR_TYPE_NAMES


def test_schema_lists_the_records():
    schema = json.loads((REPO / "schemas" / "op_spec.schema.json").read_text())
    assert tuple(schema["$defs"]["attr"]["properties"]["type"]["enum"]) == v.ATTR_TYPE_NAMES


_NEW_RECORD = """
import dataclasses, json, sys, typing
from opbuild.abi import vocabulary as v
new = dataclasses.replace(v.ATTR_TYPE["list_int"], name="list_int32", tiling=7, ops_info="listInt32",
                          key_tag=23)
v.ATTR_TYPES = (*v.ATTR_TYPES, new)
v.ATTR_TYPE = {t.name: t for t in v.ATTR_TYPES}
v.ATTR_TYPE_NAMES = tuple(v.ATTR_TYPE)
from opbuild import nonfinite
from opbuild.runtime.host import tiling_context
from opbuild.codegen import aclnn_c, package_json
from opbuild.runtime import capi, torch_ops
from opbuild.runtime.call import aicpu, arguments, cache_key
from opbuild.spec import fields
tables = {
    "spec.fields.ATTR_TYPES": fields.ATTR_TYPES,
    "runtime.host.tiling_context.ATTR_TYPES": tiling_context.ATTR_TYPES,
    "codegen.aclnn_c.ATTR_C_TYPE": aclnn_c.ATTR_C_TYPE,
    "codegen.package_json.OPS_INFO_ATTR_TYPE": package_json.OPS_INFO_ATTR_TYPE,
    "runtime.call.cache_key.ATTR_TAGS": cache_key.ATTR_TAGS,
    "runtime.call.arguments._ATTR_CHECK": arguments._ATTR_CHECK,
    "runtime.call.arguments._ATTR_CONVERT": arguments._ATTR_CONVERT,
    "runtime.torch_ops._SCHEMA_TYPES": torch_ops._SCHEMA_TYPES,
    "runtime.capi._ARRAY_ATTR (keys)": capi._ARRAY_ATTR,
}
out = {name: "list_int32" in table for name, table in tables.items()}
out["values"] = [tiling_context.ATTR_TYPES["list_int32"], package_json.OPS_INFO_ATTR_TYPE["list_int32"],
                 cache_key.ATTR_TAGS["list_int32"], list(arguments._ATTR_CONVERT["list_int32"]([1, 2]))]
out["key"] = cache_key.key_words(1, 0, 0, [], [("list_int32", [5])])[-3:]
out["aicpu"] = "list_int32" in aicpu.ATTR_TYPES
out["float"] = "list_int32" in nonfinite.FLOAT_ATTR_TYPES
print(json.dumps(out))
"""


def test_a_new_record_reaches_every_derived_table():
    """A fresh interpreter whose vocabulary has one more attribute type (a list of int32 spelled
    like list_int except for its codes) finds it in every table, with the record's values;
    tables that hold a subset (AI CPU scalars, float types) correctly leave it out."""
    proc = subprocess.run([sys.executable, "-c", _NEW_RECORD], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out.pop("values") == [7, "listInt32", 23, [1, 2]]
    assert out.pop("key") == [23, 1, 5]
    assert out.pop("aicpu") is False and out.pop("float") is False
    assert out == dict.fromkeys(out, True) and len(out) == 9, out


# ---- the hand-written docs -----------------------------------------------------------------

def test_docs_spell_the_records():
    package_format = " ".join((REPO / "docs" / "package-format.md").read_text().split())
    spelled = re.search(r"Attr types \(`AttrType.ops_info` in `opbuild/abi/vocabulary.py`\): ([^;]+);", package_format)
    assert spelled and spelled.group(1) == ", ".join(f"`{t.ops_info}`" for t in v.ATTR_TYPES)
    capi_doc = " ".join((REPO / "docs" / "capi.md").read_text().split())
    for t in v.ATTR_TYPES:
        if not t.is_list:
            assert f"{t.name} → `{t.aclnn_c}`" in capi_doc, t.name


# ---- the runtime's check and conversion --------------------------------------------------------

CASES = [
    # type, value, accepted, stored
    ("int", 3, True, 3),
    ("int", np.int32(-4), True, -4),
    ("int", True, False, None),
    ("int", np.bool_(True), False, None),
    ("int", 2.0, False, None),
    ("float", 2, True, 2.0),
    ("float", np.float32(0.5), True, 0.5),
    ("float", np.int64(7), True, 7.0),
    ("float", False, False, None),
    ("float", "1.5", False, None),
    ("bool", True, True, True),
    ("bool", np.bool_(False), True, False),
    ("bool", 1, False, None),
    ("str", "mean", True, "mean"),
    ("str", b"mean", False, None),
    ("list_int", [1, np.int64(2)], True, (1, 2)),
    ("list_int", (3,), True, (3,)),
    ("list_int", [], True, ()),
    ("list_int", [1, True], False, None),
    ("list_int", 1, False, None),
    ("list_float", [1, 2.5, np.float16(0.25)], True, (1.0, 2.5, 0.25)),
    ("list_float", np.array([1.0]), False, None),
    ("list_bool", [True, np.bool_(False)], True, (True, False)),
    ("list_bool", [0, 1], False, None),
]


@pytest.mark.parametrize("kind,value,accepted,stored", CASES)
def test_runtime_check_and_conversion(kind, value, accepted, stored):
    t = v.ATTR_TYPE[kind]
    assert t.check(value) is accepted
    if accepted:
        got = t.convert(value)
        assert got == stored and type(got) is type(stored)
        if t.is_list:
            assert all(type(x) is type(y) for x, y in zip(got, stored))
