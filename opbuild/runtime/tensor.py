"""Tensors: device memory plus shape, dtype, format and strides (the aclTensor of the runtime).

The simulated device shares the host's address space, so a Tensor is a zero-copy view: made
from a numpy array (or any DLPack producer) it points at the array's memory, and `.numpy()`
gives a numpy view back. Strides are in elements, as aclCreateTensor takes them.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from opbuild.abi.ge_types import FORMAT_TO_GE, dtype_name, numpy_dtype
from opbuild.runtime.errors import ACLNN_ERR_PARAM_INVALID, AclnnError


class Tensor:
    """A view of device memory with shape, dtype (name), format and element strides."""

    __slots__ = ("array", "format", "__weakref__")

    def __init__(self, array: np.ndarray, format: str = "ND") -> None:
        if format not in FORMAT_TO_GE:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"unknown format {format!r}; known: {', '.join(FORMAT_TO_GE)}")
        self.array = array
        self.format = format

    # ---- construction -------------------------------------------------------------------------
    @classmethod
    def from_numpy(cls, array: np.ndarray, format: str = "ND") -> "Tensor":
        """A zero-copy tensor over a numpy array (bf16 arrays use ml_dtypes.bfloat16)."""
        dtype_name(array.dtype)  # rejects dtypes no op can take
        return cls(array, format)

    @classmethod
    def from_dlpack(cls, obj: Any, format: str = "ND") -> "Tensor":
        """A zero-copy tensor over any DLPack producer that lives in host memory."""
        return cls.from_numpy(np.from_dlpack(obj), format)

    @classmethod
    def empty(cls, shape: Sequence[int], dtype: str, format: str = "ND") -> "Tensor":
        """Fresh device memory for a contiguous tensor (aligned like aclrtMalloc)."""
        from opbuild.runtime.device import malloc

        np_dtype = numpy_dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * np_dtype.itemsize
        buffer = malloc(max(nbytes, 1))
        return cls(buffer.as_array(np_dtype, tuple(shape)), format)

    # ---- description --------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.array.shape

    @property
    def dtype(self) -> str:
        return dtype_name(self.array.dtype)

    @property
    def strides(self) -> tuple[int, ...]:
        """Strides in elements."""
        itemsize = self.array.itemsize
        return tuple(s // itemsize for s in self.array.strides)

    @property
    def data_ptr(self) -> int:
        return self.array.ctypes.data

    @property
    def numel(self) -> int:
        return self.array.size

    @property
    def nbytes(self) -> int:
        return self.array.nbytes

    def is_contiguous(self) -> bool:
        return self.array.flags.c_contiguous

    def numpy(self) -> np.ndarray:
        """The numpy view of this tensor's memory (no copy)."""
        return self.array

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self.array.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.array.__dlpack_device__()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """numpy's array protocol: a view unless a copy or another dtype is asked for."""
        if dtype is not None and np.dtype(dtype) != self.array.dtype:
            if copy is False:
                raise ValueError(f"cannot view a {self.dtype} tensor as {np.dtype(dtype)} without a copy")
            return self.array.astype(dtype)
        return self.array.copy() if copy else self.array

    def __repr__(self) -> str:
        return f"Tensor(shape={self.shape}, dtype={self.dtype}, format={self.format}, strides={self.strides})"


def as_array(value: Any, what: str) -> tuple[np.ndarray, str]:
    """The numpy array and format behind a Tensor or array argument; AclnnError otherwise."""
    if isinstance(value, np.ndarray):
        return value, "ND"
    if isinstance(value, Tensor):
        return value.array, value.format
    if value is None:
        from opbuild.runtime.errors import ACLNN_ERR_PARAM_NULLPTR

        raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{what} is None")
    if hasattr(value, "__dlpack__"):
        return np.from_dlpack(value), "ND"
    raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what} must be a Tensor or a numpy array, not {type(value).__name__}")
