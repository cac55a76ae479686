"""The acl library functions op_fallback calls, prototyped for ctypes.

What: `_Acl` (aclCreateTensor / aclCreateScalar / aclCreate*Array / aclCreateTensorList and
their destroy functions, aclDestroyAclOpExecutor, aclrtCreateStream / aclrtDestroyStream,
aclGetRecentErrMsg), the process-wide instance made on first use (`_get_acl`; `_acl` is None
until then) and `_recent_error`.
Why its own module: conversion, the context, AclStream and execution all call into the acl
library; one lazily-loaded set of prototypes serves them all without importing each other.
Read `_acl` as `acllib._acl` (not `from ... import _acl`): it is rebound on first load.
"""

from __future__ import annotations

import ctypes
from typing import Any

from opbuild.runtime.fallback.search import _lock

_VP = ctypes.c_void_p
_P64 = ctypes.POINTER(ctypes.c_int64)


class _Acl:
    """Prototyped functions of the acl library (own function objects: argtypes set elsewhere on
    the shared CDLL do not matter)."""

    def __init__(self) -> None:
        from opbuild.runtime.capi import acl_library

        lib = acl_library()

        def fn(name: str, restype: Any, *argtypes: Any) -> Any:
            f = lib[name]
            f.restype = restype
            f.argtypes = list(argtypes)
            return f

        self.lib = lib
        self.create_tensor = fn("aclCreateTensor", _VP, _P64, ctypes.c_uint64, ctypes.c_int, _P64, ctypes.c_int64,
                                ctypes.c_int, _P64, ctypes.c_uint64, _VP)
        self.destroy_tensor = fn("aclDestroyTensor", ctypes.c_int, _VP)
        self.create_scalar = fn("aclCreateScalar", _VP, _VP, ctypes.c_int)
        self.destroy_scalar = fn("aclDestroyScalar", ctypes.c_int, _VP)
        self.create_tensor_list = fn("aclCreateTensorList", _VP, ctypes.POINTER(_VP), ctypes.c_uint64)
        self.destroy_tensor_list = fn("aclDestroyTensorList", ctypes.c_int, _VP)
        self.create_int_array = fn("aclCreateIntArray", _VP, _P64, ctypes.c_uint64)
        self.destroy_int_array = fn("aclDestroyIntArray", ctypes.c_int, _VP)
        self.create_float_array = fn("aclCreateFloatArray", _VP, ctypes.POINTER(ctypes.c_float), ctypes.c_uint64)
        self.destroy_float_array = fn("aclDestroyFloatArray", ctypes.c_int, _VP)
        self.create_bool_array = fn("aclCreateBoolArray", _VP, ctypes.POINTER(ctypes.c_bool), ctypes.c_uint64)
        self.destroy_bool_array = fn("aclDestroyBoolArray", ctypes.c_int, _VP)
        self.destroy_executor = fn("aclDestroyAclOpExecutor", ctypes.c_int, _VP)
        self.create_stream = fn("aclrtCreateStream", ctypes.c_int, ctypes.POINTER(_VP))
        self.destroy_stream = fn("aclrtDestroyStream", ctypes.c_int, _VP)
        self.recent_error = fn("aclGetRecentErrMsg", ctypes.c_char_p)
        self.exec_addresses = tuple(ctypes.cast(f, _VP).value for f in (
            self.create_tensor, self.destroy_tensor, self.destroy_executor))
        """aclCreateTensor, aclDestroyTensor, aclDestroyAclOpExecutor by address (_fastpath.syn_exec)."""


_acl: _Acl | None = None


def _get_acl() -> _Acl:
    global _acl
    if _acl is None:
        with _lock:
            if _acl is None:
                _acl = _Acl()
    return _acl


def _recent_error(acl: _Acl) -> str:
    msg = acl.recent_error()
    return msg.decode("utf-8", "replace") if msg else ""
