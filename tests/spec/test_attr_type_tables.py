"""Every table keyed by attribute type covers exactly the spec's attribute types (spec/fields.py),
so a new attribute type cannot be added in one place and forgotten in another."""

from __future__ import annotations

import typing

import pytest

from opbuild.abi import tiling_context
from opbuild.codegen import aclnn_c, package_json
from opbuild.runtime import torch_ops
from opbuild.runtime.call import aicpu, arguments, cache_key
from opbuild.spec import fields, model

ALL = set(fields.ATTR_TYPES)
SCALARS = {"int", "float", "bool", "str"}

TABLES = {
    "spec.model.AttrType": (set(typing.get_args(model.AttrType)), ALL),
    "abi.tiling_context.ATTR_TYPES": (set(tiling_context.ATTR_TYPES), ALL),
    "codegen.aclnn_c.ATTR_C_TYPE": (set(aclnn_c.ATTR_C_TYPE), ALL),
    "codegen.package_json.OPS_INFO_ATTR_TYPE": (set(package_json.OPS_INFO_ATTR_TYPE), ALL),
    "runtime.call.cache_key.ATTR_TAGS": (set(cache_key.ATTR_TAGS), ALL),
    "runtime.call.arguments._ATTR_CHECK": (set(arguments._ATTR_CHECK), ALL),
    "runtime.call.arguments._ATTR_CONVERT": (set(arguments._ATTR_CONVERT), ALL),
    "runtime.torch_ops._SCHEMA_TYPES": (set(torch_ops._SCHEMA_TYPES), ALL),
    "runtime.call.aicpu.ATTR_TYPES (scalars only: AI CPU ops take no list attrs)": (set(aicpu.ATTR_TYPES), SCALARS),
}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_table_covers_the_spec_attr_types(name):
    keys, expected = TABLES[name]
    assert keys == expected, name
