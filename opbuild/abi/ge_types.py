"""GE data-type and format enums and their host/kernel spellings.

The integers are ge::DataType / ge::Format values: default-mode simplified keys are made of them
(`Op/d=0,p=1/1,2/1,2/1,2`), so they are part of the package format and never change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:  # numpy is imported where it is used: the key grammar (and so `opbuild
    import numpy as np  # validate`) reads these tables only, and numpy costs 0.15 s to import

DTYPE_TO_GE: Final[dict[str, int]] = {
    "float32": 0,
    "float16": 1,
    "int8": 2,
    "int32": 3,
    "uint8": 4,
    "int16": 6,
    "uint16": 7,
    "uint32": 8,
    "int64": 9,
    "uint64": 10,
    "float64": 11,
    "bool": 12,
    "bfloat16": 27,
}
GE_TO_DTYPE: Final[dict[int, str]] = {v: k for k, v in DTYPE_TO_GE.items()}

FORMAT_TO_GE: Final[dict[str, int]] = {"NCHW": 0, "NHWC": 1, "ND": 2}
GE_TO_FORMAT: Final[dict[int, str]] = {v: k for k, v in FORMAT_TO_GE.items()}

DTYPE_ITEMSIZE: Final[dict[str, int]] = {
    "float32": 4, "float16": 2, "int8": 1, "int32": 4, "uint8": 1, "int16": 2, "uint16": 2,
    "uint32": 4, "int64": 8, "uint64": 8, "float64": 8, "bool": 1, "bfloat16": 2,
}

DTYPE_C_TYPE: Final[dict[str, str]] = {
    "float32": "float", "float16": "half", "int8": "int8_t", "int32": "int32_t", "uint8": "uint8_t",
    "int16": "int16_t", "uint16": "uint16_t", "uint32": "uint32_t", "int64": "int64_t",
    "uint64": "uint64_t", "float64": "double", "bool": "uint8_t", "bfloat16": "bfloat16_t",
}
"""Element type of each dtype in kernel C (types.h defines `half` and `bfloat16_t`)."""

DTYPE_C_ENUM: Final[dict[str, str]] = {
    "float32": "OPBUILD_DT_FLOAT", "float16": "OPBUILD_DT_FLOAT16", "int8": "OPBUILD_DT_INT8",
    "int32": "OPBUILD_DT_INT32", "uint8": "OPBUILD_DT_UINT8", "int16": "OPBUILD_DT_INT16",
    "uint16": "OPBUILD_DT_UINT16", "uint32": "OPBUILD_DT_UINT32", "int64": "OPBUILD_DT_INT64",
    "uint64": "OPBUILD_DT_UINT64", "float64": "OPBUILD_DT_DOUBLE", "bool": "OPBUILD_DT_BOOL",
    "bfloat16": "OPBUILD_DT_BF16",
}
FORMAT_C_ENUM: Final[dict[str, str]] = {f: f"OPBUILD_FORMAT_{f}" for f in FORMAT_TO_GE}

DTYPE_OPS_INFO_NAME: Final[dict[str, str]] = {
    "float32": "float", "float16": "float16", "int8": "int8", "int32": "int32", "uint8": "uint8",
    "int16": "int16", "uint16": "uint16", "uint32": "uint32", "int64": "int64", "uint64": "uint64",
    "float64": "double", "bool": "bool", "bfloat16": "bfloat16",
}
"""Dtype spelling used by aic-<soc>-ops-info.json (the op-info library's names)."""


def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype of a dtype name; bfloat16 comes from ml_dtypes."""
    import numpy as np

    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def dtype_name(dtype: np.dtype) -> str:
    """The dtype name of a numpy dtype; ValueError for one no op can take."""
    import numpy as np

    dtype = np.dtype(dtype)
    name = "bfloat16" if dtype.name == "bfloat16" else dtype.name
    if name not in DTYPE_TO_GE:
        raise ValueError(f"unsupported dtype {dtype}; supported: {', '.join(DTYPE_TO_GE)}")
    return name
