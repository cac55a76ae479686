"""The data-type tables of op_fallback (op_fallback_internal.h GetConvertType).

What: aclDataType values (ACL_DTYPE), the ge::DataType -> aclDataType map op_fallback applies to a
tensor (DT_TO_ACL, ACL_FLOAT16 for every other type), numpy dtype -> ge::DataType (NUMPY_TO_DT),
`acl_dtype` that chains them, and the aclFormat values of a Tensor's format. Every name and number
is the vocabulary's (opbuild.abi.vocabulary); only the list of types op_fallback converts is here.
Why its own module: these are pure data with no ctypes or library state; argument conversion
(convert.py) and any caller that only needs the mapping use them without loading the acl library.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opbuild.abi.vocabulary import ACL_DATA_TYPES, CANN_DATA_TYPES, FORMATS

ACL_DTYPE: dict[str, int] = dict(ACL_DATA_TYPES)
"""aclDataType values (CANN acl_base.h), from the vocabulary."""

CONVERTED_DT: frozenset[str] = frozenset({
    "DT_FLOAT", "DT_BF16", "DT_BOOL", "DT_INT64", "DT_INT32", "DT_UINT64", "DT_UINT32", "DT_INT8", "DT_UINT8",
    "DT_INT4", "DT_FLOAT8_E4M3FN", "DT_FLOAT8_E5M2", "DT_FLOAT4_E2M1", "DT_FLOAT4_E1M2", "DT_FLOAT8_E8M0",
    "DT_HIFLOAT8", "DT_COMPLEX64", "DT_DOUBLE",
})
"""The ge::DataTypes op_fallback's GetConvertType converts to their own aclDataType (behaviour,
not vocabulary: which types it lists is op_fallback's choice)."""

DT_TO_ACL: dict[str, str] = {t.ge_name: t.acl_name for t in CANN_DATA_TYPES if t.ge_name in CONVERTED_DT}
"""ge::DataType -> aclDataType as op_fallback converts a tensor's type; every other DT_* (DT_FLOAT16,
DT_INT16, DT_UINT16, DT_COMPLEX128, ...) becomes ACL_FLOAT16, exactly as there."""
DEFAULT_ACL = "ACL_FLOAT16"

NUMPY_TO_DT: dict[str, str] = {t.numpy: t.ge_name for t in CANN_DATA_TYPES if t.numpy is not None}
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


_ACL_FORMAT = {f.name: f.acl for f in FORMATS}
