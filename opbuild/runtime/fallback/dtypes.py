"""The data-type tables of op_fallback (op_fallback_internal.h GetConvertType).

What: aclDataType values (ACL_DTYPE), the ge::DataType -> aclDataType map op_fallback applies to a
tensor (DT_TO_ACL, ACL_FLOAT16 for every other type), numpy dtype -> ge::DataType (NUMPY_TO_DT),
`acl_dtype` that chains them, and the aclFormat values of a Tensor's format.
Why its own module: these are pure data with no ctypes or library state; argument conversion
(convert.py) and any caller that only needs the mapping use them without loading the acl library.
"""

from __future__ import annotations

from typing import Any

import numpy as np

ACL_DTYPE: dict[str, int] = {
    "ACL_DT_UNDEFINED": -1, "ACL_FLOAT": 0, "ACL_FLOAT16": 1, "ACL_INT8": 2, "ACL_INT32": 3, "ACL_UINT8": 4,
    "ACL_INT16": 6, "ACL_UINT16": 7, "ACL_UINT32": 8, "ACL_INT64": 9, "ACL_UINT64": 10, "ACL_DOUBLE": 11,
    "ACL_BOOL": 12, "ACL_STRING": 13, "ACL_COMPLEX64": 16, "ACL_COMPLEX128": 17, "ACL_BF16": 27, "ACL_INT4": 29,
    "ACL_UINT1": 30, "ACL_COMPLEX32": 33, "ACL_HIFLOAT8": 34, "ACL_FLOAT8_E5M2": 35, "ACL_FLOAT8_E4M3FN": 36,
    "ACL_FLOAT8_E8M0": 37, "ACL_FLOAT6_E3M2": 38, "ACL_FLOAT6_E2M3": 39, "ACL_FLOAT4_E2M1": 40,
    "ACL_FLOAT4_E1M2": 41,
}
"""aclDataType values (CANN acl_base.h)."""

DT_TO_ACL: dict[str, str] = {
    "DT_FLOAT": "ACL_FLOAT",
    "DT_BF16": "ACL_BF16",
    "DT_BOOL": "ACL_BOOL",
    "DT_INT64": "ACL_INT64",
    "DT_INT32": "ACL_INT32",
    "DT_UINT64": "ACL_UINT64",
    "DT_UINT32": "ACL_UINT32",
    "DT_INT8": "ACL_INT8",
    "DT_UINT8": "ACL_UINT8",
    "DT_INT4": "ACL_INT4",
    "DT_FLOAT8_E4M3FN": "ACL_FLOAT8_E4M3FN",
    "DT_FLOAT8_E5M2": "ACL_FLOAT8_E5M2",
    "DT_FLOAT4_E2M1": "ACL_FLOAT4_E2M1",
    "DT_FLOAT4_E1M2": "ACL_FLOAT4_E1M2",
    "DT_FLOAT8_E8M0": "ACL_FLOAT8_E8M0",
    "DT_HIFLOAT8": "ACL_HIFLOAT8",
    "DT_COMPLEX64": "ACL_COMPLEX64",
    "DT_DOUBLE": "ACL_DOUBLE",
}
"""ge::DataType -> aclDataType as op_fallback converts a tensor's type; every other DT_* (DT_FLOAT16,
DT_INT16, DT_UINT16, DT_COMPLEX128, ...) becomes ACL_FLOAT16, exactly as there."""
DEFAULT_ACL = "ACL_FLOAT16"

NUMPY_TO_DT: dict[str, str] = {
    "float32": "DT_FLOAT", "float16": "DT_FLOAT16", "float64": "DT_DOUBLE", "bfloat16": "DT_BF16",
    "int8": "DT_INT8", "int16": "DT_INT16", "int32": "DT_INT32", "int64": "DT_INT64",
    "uint8": "DT_UINT8", "uint16": "DT_UINT16", "uint32": "DT_UINT32", "uint64": "DT_UINT64",
    "bool": "DT_BOOL", "complex64": "DT_COMPLEX64", "complex128": "DT_COMPLEX128",
    "int4": "DT_INT4", "uint4": "DT_UINT4", "int2": "DT_INT2", "uint2": "DT_UINT2", "uint1": "DT_UINT1",
    "float8_e4m3fn": "DT_FLOAT8_E4M3FN", "float8_e5m2": "DT_FLOAT8_E5M2", "float8_e8m0fnu": "DT_FLOAT8_E8M0",
    "float4_e2m1fn": "DT_FLOAT4_E2M1", "float6_e2m3fn": "DT_FLOAT6_E2M3", "float6_e3m2fn": "DT_FLOAT6_E3M2",
    "complex32": "DT_COMPLEX32",
}
"""numpy (and ml_dtypes) dtype name -> ge::DataType name; others are DT_UNDEFINED."""

_ACL_OF_DTYPE: dict[np.dtype, int] = {}


def acl_dtype(dtype: Any) -> int:
    """The aclDataType op_fallback gives a tensor of this numpy dtype (numpy -> DT_* -> ACL_*)."""
    dtype = np.dtype(dtype)
    value = _ACL_OF_DTYPE.get(dtype)
    if value is None:
        dt = NUMPY_TO_DT.get(dtype.name, "DT_UNDEFINED")
        value = ACL_DTYPE[DT_TO_ACL.get(dt, DEFAULT_ACL)]
        _ACL_OF_DTYPE[dtype] = value
    return value


_ACL_FORMAT = {"NCHW": 0, "NHWC": 1, "ND": 2}
