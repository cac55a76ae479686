from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from opbuild.abi import ge_types as g


def test_ge_values():
    assert g.DTYPE_TO_GE == {
        "float32": 0, "float16": 1, "int8": 2, "int32": 3, "uint8": 4, "int16": 6, "uint16": 7, "uint32": 8,
        "int64": 9, "uint64": 10, "float64": 11, "bool": 12, "bfloat16": 27,
    }
    assert g.FORMAT_TO_GE == {"NCHW": 0, "NHWC": 1, "ND": 2}
    assert all(g.GE_TO_DTYPE[v] == k for k, v in g.DTYPE_TO_GE.items())
    assert all(g.GE_TO_FORMAT[v] == k for k, v in g.FORMAT_TO_GE.items())


def test_tables_cover_every_dtype():
    for table in (g.DTYPE_ITEMSIZE, g.DTYPE_C_TYPE, g.DTYPE_C_ENUM, g.DTYPE_OPS_INFO_NAME):
        assert set(table) == set(g.DTYPE_TO_GE)
    assert g.DTYPE_C_TYPE["float16"] == "half"
    assert g.DTYPE_C_TYPE["bfloat16"] == "bfloat16_t"
    assert g.DTYPE_C_TYPE["bool"] == "uint8_t"
    assert g.DTYPE_C_ENUM["float16"] == "OPBUILD_DT_FLOAT16"
    assert g.FORMAT_C_ENUM["ND"] == "OPBUILD_FORMAT_ND"


@pytest.mark.parametrize("name", sorted(g.DTYPE_TO_GE))
def test_numpy_round_trip(name):
    dt = g.numpy_dtype(name)
    assert dt.itemsize == g.DTYPE_ITEMSIZE[name]
    assert g.dtype_name(dt) == name


def test_bfloat16_is_ml_dtypes():
    assert g.numpy_dtype("bfloat16") == np.dtype(ml_dtypes.bfloat16)


def test_unsupported_numpy_dtype():
    with pytest.raises(ValueError, match="unsupported dtype complex64"):
        g.dtype_name(np.complex64)
