"""GE data-type and format enums and their host/kernel spellings, as lookup tables.

What: name -> number / C spelling maps (in GE enum order) and the numpy conversions the key
grammar, TilingContext, codegen and the runtime use. Why a module of its own: these are the shapes those callers look
things up in; every value is derived from `opbuild.abi.vocabulary`, where each fact is written once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:  # numpy is imported where it is used: the key grammar (and so `opbuild
    import numpy as np  # validate`) reads these tables only, and numpy costs 0.15 s to import

from opbuild.abi.vocabulary import DTYPE, DTYPE_BY_NUMPY, FORMATS
from opbuild.abi.vocabulary import DTYPES_BY_GE_ORDER as DTYPES

DTYPE_TO_GE: Final[dict[str, int]] = {d.name: d.ge for d in DTYPES}
GE_TO_DTYPE: Final[dict[int, str]] = {d.ge: d.name for d in DTYPES}

FORMAT_TO_GE: Final[dict[str, int]] = {f.name: f.ge for f in FORMATS}
GE_TO_FORMAT: Final[dict[int, str]] = {f.ge: f.name for f in FORMATS}

DTYPE_ITEMSIZE: Final[dict[str, int]] = {d.name: d.itemsize for d in DTYPES}

DTYPE_C_TYPE: Final[dict[str, str]] = {d.name: d.c_type for d in DTYPES}
"""Element type of each dtype in kernel C (types.h defines `half` and `bfloat16_t`)."""

DTYPE_C_ENUM: Final[dict[str, str]] = {d.name: d.c_enum for d in DTYPES}
FORMAT_C_ENUM: Final[dict[str, str]] = {f.name: f.c_enum for f in FORMATS}

DTYPE_OPS_INFO_NAME: Final[dict[str, str]] = {d.name: d.ops_info for d in DTYPES}
"""Dtype spelling used by aic-<soc>-ops-info.json (the op-info library's names)."""

DTYPE_KERNEL_JSON_NAME: Final[dict[str, str]] = {d.name: d.kernel_json for d in DTYPES}
"""Dtype spelling of a kernel JSON's supportInfo inputs/outputs."""


def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype of a dtype name; bfloat16 comes from ml_dtypes."""
    import numpy as np

    d = DTYPE.get(name)
    return d.numpy if d is not None else np.dtype(name)


def dtype_name(dtype: np.dtype) -> str:
    """The dtype name of a numpy dtype; ValueError for one no op can take."""
    import numpy as np

    dtype = np.dtype(dtype)
    d = DTYPE_BY_NUMPY.get(dtype.name)
    if d is None:
        raise ValueError(f"unsupported dtype {dtype}; supported: {', '.join(DTYPE_TO_GE)}")
    return d.name
