"""Argument conversion of op_fallback (ConvertTypes / ReleaseConvertTypes).

What: turns the Python arguments of an aclnn call into C arguments: aclTensor (numpy array,
Tensor, dlpack), aclTensorList, aclScalar, aclIntArray / aclFloatArray / aclBoolArray, int64_t,
bool, char * and ctypes values passed through; each created acl object is kept as an
OpApiAnyValue with its deleter, and `_release` destroys them (last first).
Why its own module: conversion is the one place that knows the aclnn argument model; the
execution macros and OpApiParams only hold and release its results.
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from opbuild.abi.vocabulary import CANN_DATA_TYPES, DTYPE_NAMES
from opbuild.runtime.fallback.acllib import _VP, _Acl, _recent_error
from opbuild.runtime.fallback.dtypes import _ACL_FORMAT, _ACL_OF_DTYPE, ACL_DTYPE, acl_dtype
from opbuild.runtime.tensor import Tensor


class OpApiAnyValue(NamedTuple):
    """One converted argument: the acl object and its destroy function (None, None for values)."""

    pointer: int | None
    deleter: Callable[[int], Any] | None



def _release(converted: list[OpApiAnyValue]) -> None:
    """ReleaseConvertTypes: destroy every converted object, last first."""
    for pointer, deleter in reversed(converted):
        if pointer and deleter is not None:
            deleter(pointer)
    converted.clear()



class ConversionError(TypeError):
    """An argument op_fallback cannot convert."""


_DIMS: dict[tuple[int, ...], Any] = {}


def _dims(shape: tuple[int, ...]) -> Any:
    arr = _DIMS.get(shape)
    if arr is None:
        arr = (ctypes.c_int64 * len(shape))(*shape)
        if len(_DIMS) < 4096:
            _DIMS[shape] = arr
    return arr


def _create_tensor(acl: _Acl, array: np.ndarray, fmt: int, what: str) -> int:
    """aclCreateTensor over `array`'s memory: real dims, the array's strides (elements) and, for
    negative strides, the offset from the lowest element reached."""
    dtype = array.dtype
    dt = _ACL_OF_DTYPE.get(dtype)
    if dt is None:
        if dtype.hasobject or dtype.fields is not None:
            raise ConversionError(f"{what}: arrays of {dtype} cannot be an aclTensor")
        dt = acl_dtype(dtype)
    shape = array.shape
    data = array.ctypes.data
    if array.flags.c_contiguous:
        t = acl.create_tensor(_dims(shape), len(shape), dt, None, 0, fmt, None, 0, data)
    else:
        itemsize = dtype.itemsize
        strides = []
        low = 0
        for d, s in zip(shape, array.strides, strict=True):
            if s % itemsize:
                raise ConversionError(f"{what}: stride {s} bytes is not a whole number of {dtype} elements")
            s //= itemsize
            strides.append(s)
            if s < 0 and d > 0:
                low += (d - 1) * s
        t = acl.create_tensor(_dims(shape), len(shape), dt, (ctypes.c_int64 * len(shape))(*strides), -low, fmt,
                              None, 0, data + low * itemsize)
    if not t:
        raise ConversionError(f"{what}: aclCreateTensor failed: {_recent_error(acl)}")
    return t


def _scalar(acl: _Acl, value: Any, dt: int, ctype: Any, what: str) -> int:
    box = ctype(value)
    s = acl.create_scalar(ctypes.addressof(box), dt)
    if not s:
        raise ConversionError(f"{what}: aclCreateScalar failed: {_recent_error(acl)}")
    return s


_TENSOR_TYPES = (np.ndarray, Tensor)
_SCALAR_NUMPY = frozenset({*DTYPE_NAMES, "complex64", "complex128"})
"""The numpy scalar types that become an aclScalar of their own type (opbuild's dtypes and complex)."""
_SCALAR_ACL = {t.numpy: t.acl for t in CANN_DATA_TYPES
               if t.numpy is not None and t.acl is not None and t.numpy in _SCALAR_NUMPY}
"""numpy scalar -> the aclDataType of an aclScalar (its own type; the tensor map's ACL_FLOAT16 default
is for tensors only)."""


def _raw_box(raw: bytes) -> Any:
    """A numpy scalar's bytes, padded to the 16 bytes an aclScalar may read."""
    return ctypes.create_string_buffer(raw, 16)


ACL_FLOAT = ACL_DTYPE["ACL_FLOAT"]
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


class _Converted:
    """The converted arguments of one call: C argument types and values, the acl objects with
    their deleters, and the Python objects to keep alive."""

    __slots__ = ("argtypes", "values", "owned", "keepalive")

    def __init__(self) -> None:
        self.argtypes: list[Any] = []
        self.values: list[Any] = []
        self.owned: list[OpApiAnyValue] = []
        self.keepalive: list[Any] = []


def _convert_args(acl: _Acl, args: Sequence[Any]) -> _Converted:
    """ConvertTypes. On failure the objects made so far are destroyed and ConversionError raised."""
    conv = _Converted()
    try:
        for i, arg in enumerate(args):
            _convert(acl, arg, conv, i)
    except BaseException:
        _release(conv.owned)
        raise
    return conv


def _convert(acl: _Acl, arg: Any, conv: _Converted, i: int) -> None:
    kind = type(arg)
    argtypes, values, owned = conv.argtypes, conv.values, conv.owned
    if kind is np.ndarray:
        t = _create_tensor(acl, arg, 2, f"argument {i}")
        owned.append(OpApiAnyValue(t, acl.destroy_tensor))
        conv.keepalive.append(arg)
        argtypes.append(_VP)
        values.append(t)
    elif kind is Tensor:
        t = _create_tensor(acl, arg.array, _ACL_FORMAT[arg.format], f"argument {i}")
        owned.append(OpApiAnyValue(t, acl.destroy_tensor))
        conv.keepalive.append(arg)
        argtypes.append(_VP)
        values.append(t)
    elif kind is bool:
        argtypes.append(ctypes.c_bool)
        values.append(arg)
    elif kind is int:
        if not _INT64_MIN <= arg <= _INT64_MAX:  # ctypes would truncate silently
            raise ConversionError(f"argument {i}: {arg} does not fit int64_t")
        argtypes.append(ctypes.c_int64)
        values.append(arg)
    elif kind is float:  # ConvertScalarType: a float becomes an ACL_FLOAT aclScalar
        s = _scalar(acl, arg, ACL_FLOAT, ctypes.c_float, f"argument {i}")
        owned.append(OpApiAnyValue(s, acl.destroy_scalar))
        argtypes.append(_VP)
        values.append(s)
    elif arg is None:  # an absent optional input / NULL
        argtypes.append(_VP)
        values.append(None)
    elif kind is list or kind is tuple:
        _convert_sequence(acl, arg, conv, i)
    elif kind is str or kind is bytes:
        raw = arg.encode("utf-8") if kind is str else arg
        conv.keepalive.append(raw)
        argtypes.append(ctypes.c_char_p)
        values.append(raw)
    elif isinstance(arg, np.generic):  # a numpy scalar: an aclScalar of its own type
        dt = _SCALAR_ACL.get(arg.dtype.name)
        if dt is None:
            raise ConversionError(f"argument {i}: a numpy {arg.dtype} scalar cannot be an aclScalar")
        s = _scalar(acl, arg.tobytes(), dt, _raw_box, f"argument {i}")
        owned.append(OpApiAnyValue(s, acl.destroy_scalar))
        argtypes.append(_VP)
        values.append(s)
    elif isinstance(arg, (ctypes._SimpleCData, ctypes._Pointer)):  # explicit C value: passed through
        conv.keepalive.append(arg)
        argtypes.append(kind)
        values.append(arg)
    elif isinstance(arg, (np.ndarray, Tensor)):  # subclasses
        _convert(acl, np.asarray(arg) if isinstance(arg, np.ndarray) else Tensor(arg.array, arg.format), conv, i)
    elif hasattr(arg, "__dlpack__"):
        _convert(acl, np.from_dlpack(arg), conv, i)
        conv.keepalive.append(arg)
    else:
        raise ConversionError(f"argument {i}: cannot convert {kind.__name__} for an aclnn API")


def _convert_sequence(acl: _Acl, seq: Sequence[Any], conv: _Converted, i: int) -> None:
    n = len(seq)
    if n and all(isinstance(v, _TENSOR_TYPES) for v in seq):
        tensors: list[int] = []
        try:
            for k, v in enumerate(seq):
                if isinstance(v, Tensor):
                    tensors.append(_create_tensor(acl, v.array, _ACL_FORMAT[v.format], f"argument {i}[{k}]"))
                else:
                    tensors.append(_create_tensor(acl, np.asarray(v), 2, f"argument {i}[{k}]"))
            lst = acl.create_tensor_list((_VP * n)(*tensors), n)
            if not lst:
                raise ConversionError(f"argument {i}: aclCreateTensorList failed: {_recent_error(acl)}")
        except BaseException:
            for t in tensors:
                acl.destroy_tensor(t)
            raise
        conv.owned.append(OpApiAnyValue(lst, acl.destroy_tensor_list))  # the list owns its tensors
        conv.keepalive.append(seq)
        obj = lst
    elif all(type(v) is bool or isinstance(v, np.bool_) for v in seq) and n:
        obj = acl.create_bool_array((ctypes.c_bool * n)(*seq), n)
        if not obj:
            raise ConversionError(f"argument {i}: aclCreateBoolArray failed: {_recent_error(acl)}")
        conv.owned.append(OpApiAnyValue(obj, acl.destroy_bool_array))
    elif all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in seq):
        obj = acl.create_int_array((ctypes.c_int64 * n)(*seq), n)  # [] is an empty aclIntArray
        if not obj:
            raise ConversionError(f"argument {i}: aclCreateIntArray failed: {_recent_error(acl)}")
        conv.owned.append(OpApiAnyValue(obj, acl.destroy_int_array))
    elif all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
             for v in seq):
        obj = acl.create_float_array((ctypes.c_float * n)(*seq), n)
        if not obj:
            raise ConversionError(f"argument {i}: aclCreateFloatArray failed: {_recent_error(acl)}")
        conv.owned.append(OpApiAnyValue(obj, acl.destroy_float_array))
    else:
        raise ConversionError(f"argument {i}: a list must hold only tensors (aclTensorList), ints (aclIntArray), "
                              "floats (aclFloatArray) or bools (aclBoolArray)")
    conv.argtypes.append(_VP)
    conv.values.append(obj)

