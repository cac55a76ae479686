"""Phase 2's launching: the simulator's sim_launch, launch-argument packing and data pointers.

`_Native` binds sim_launch for the hot path (no ctypes argument conversion); `data_pointer`
reads a numpy array's data address without `.ctypes`; `packer` packs launch-argument arrays.
`_launch_now` launches on the default stream, `_launch_stream` on any stream (keeping what the
kernel reads alive), `_execute_prepared` copies non-contiguous or misaligned tensors first.
`observe_launches(fn)` registers a function called at every launch (tests count launches).
Kept apart from executor.execute, which only checks the call and picks one of these.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys
from typing import TYPE_CHECKING, Any

import numpy as np

from opbuild.abi.tensor_list import pack_tensor_list
from opbuild.runtime import device
from opbuild.runtime.errors import ACLNN_ERR_INNER, ACLNN_ERR_RUNTIME_ERROR, AclnnError
from opbuild.runtime.call.plans import Plan

if TYPE_CHECKING:
    from opbuild.runtime.call.executor import Executor


# ---- the native launch used by the hot path --------------------------------------------------------

class _Native:
    """sim_launch without ctypes argument conversion (its C ABI is opbuild/runtime/native/src/sim.h).

    Called with a NULL stream, a c_void_p kernel function, a c_void_p array and small ints, so
    ctypes passes everything as is. Bound on first use.
    """

    launch: Any = None
    last_error: Any = None
    isolated: Any = None

    @classmethod
    def bind(cls) -> None:
        lib = ctypes.CDLL(str(device.library_path()), mode=os.RTLD_NOW | os.RTLD_LOCAL)
        launch = lib["sim_launch"]
        launch.restype = ctypes.c_int
        last_error = lib["sim_last_error"]
        last_error.restype = ctypes.c_char_p
        last_error.argtypes = []
        isolated = lib["sim_isolated"]
        isolated.restype = ctypes.c_int
        isolated.argtypes = []
        cls.last_error = last_error
        cls.isolated = isolated
        cls.launch = launch


# ---- launch observers (tests, tools): registered explicitly, never looked up per call ----------------

LAUNCH_OBSERVERS: list = []
"""Functions called with the plan of every kernel launch of a phase 2 (any path). While one is
registered, the C fast path hands its launches to the Python path, which calls them."""


def observe_launches(fn) -> Any:
    """Register `fn(plan)` to be called at every launch; returns the function that unregisters it."""
    LAUNCH_OBSERVERS.append(fn)
    _observed_changed()

    def unregister() -> None:
        if fn in LAUNCH_OBSERVERS:
            LAUNCH_OBSERVERS.remove(fn)
            _observed_changed()

    return unregister


def _observed_changed() -> None:
    from opbuild.runtime.call.plan_cache import _fastpath

    if _fastpath is not None:
        _fastpath.set_observed(len(LAUNCH_OBSERVERS))


def _observe(plan: Plan) -> None:
    for fn in LAUNCH_OBSERVERS:
        fn(plan)


def _native_error() -> str:
    msg = _Native.last_error()
    return msg.decode("utf-8", "replace") if msg else "unknown error"


# Reading a numpy array's data pointer: `ndarray.ctypes.data` costs ~0.8 us; the pointer is the
# first field after the object header of numpy's PyArrayObject (the field PyArray_DATA reads, part
# of numpy's stable ABI), so on CPython it is read directly. Checked here; falls back otherwise.
_DATA_OFFSET = object.__basicsize__
_read_ptr = ctypes.c_void_p.from_address


def _probe_data_offset() -> bool:
    if sys.implementation.name != "cpython":
        return False
    base = np.arange(16, dtype=np.float32)
    for a in (base, base[3:], base.reshape(4, 4)[:, 1], np.empty(0), np.zeros((), np.int8)):
        if _read_ptr(id(a) + _DATA_OFFSET).value != a.ctypes.data:
            return False
    return True


_FAST_POINTERS = _probe_data_offset()


def data_pointer(a: np.ndarray) -> int:
    """The address of a numpy array's first element."""
    if _FAST_POINTERS:
        return _read_ptr(id(a) + _DATA_OFFSET).value or 0
    return a.ctypes.data


_PACKERS: dict[int, struct.Struct] = {}


def packer(n: int) -> struct.Struct:
    """The struct of a launch-argument array of n pointers (native uint64)."""
    st = _PACKERS.get(n)
    if st is None:
        st = _PACKERS[n] = struct.Struct(f"={n}Q")
    return st


def _launch_failed(plan: Plan) -> None:
    device.interrupted()  # an interrupted launch (Ctrl-C) raises KeyboardInterrupt, not an AclnnError
    raise AclnnError(ACLNN_ERR_RUNTIME_ERROR, f"{plan.op.name}: kernel {plan.kernel.name} failed: "
                                              f"{_native_error()} [kernel {plan.kernel.binary.path}]")


_default_stream = device.default_stream


def _launch_now(plan: Plan, a: Any, executor: Executor) -> None:
    """Launch on the default stream; `a` is the argument array (ctypes array or packed bytes)."""
    launch = _Native.launch
    if launch is None:
        try:
            _Native.bind()
        except (OSError, AttributeError, device.DeviceError) as exc:
            raise AclnnError(ACLNN_ERR_RUNTIME_ERROR, f"{plan.op.name}: cannot launch kernel {plan.kernel.name}: "
                                                      f"the device simulator is unusable: {exc}") from None
        launch = _Native.launch
    if plan.block_dim > 0x7FFFFFFF:  # does not fit the unprototyped C int: take the checked path
        args = list(packer(plan.nargs).unpack(bytes(a)))
        _launch_stream(plan, executor, args, None, None)
        return
    if LAUNCH_OBSERVERS:
        _observe(plan)
    rc = launch(None, plan.fn, a, plan.nargs, plan.block_dim, plan.sync, None, 0)
    if rc:
        _launch_failed(plan)


def _device_launch(plan: Plan, executor: Executor, args: list, stream: Any) -> None:
    """Launch through the simulator's Python binding (streams, prepared tensors); its errors as 361001."""
    if LAUNCH_OBSERVERS:
        _observe(plan)
    try:
        device.launch(plan.kernel.binary, args, plan.block_dim, stream=stream, intercore_sync=plan.kernel.intercore_sync)
    except device.DeviceError as exc:
        raise AclnnError(ACLNN_ERR_RUNTIME_ERROR, f"{executor.op.spec.op}: kernel {plan.kernel.name} failed: {exc}") from None


def _launch_stream(plan: Plan, executor: Executor, args: list, stream: Any, refs: list | None) -> None:
    _device_launch(plan, executor, args, stream)
    if refs is not None and stream is not None and stream is not _default_stream:
        # Asynchronous stream: keep everything the kernel reads alive until it has run.
        refs.append(plan)
        stream.enqueue_host(lambda: refs.clear())


def _usable(a: np.ndarray) -> bool:
    flags = a.flags
    return flags.c_contiguous and flags.aligned


def _execute_prepared(plan: Plan, executor: Executor, ws_addr: int, workspace: Any, stream: Any) -> None:
    """Phase 2 for calls whose tensors need preparing: copies of non-contiguous or misaligned
    tensors (outputs copied back after the kernel), tensor lists."""
    if executor.inputs is None:  # made by a fast wrapper: always direct
        raise AclnnError(ACLNN_ERR_INNER, "executor has neither launch arguments nor tensors")
    keep: list[Any] = []
    args: list[int] = []
    for param, instances in zip(executor.op.spec.inputs, executor.inputs):
        if param.param_type == "dynamic":
            arrays = [a if _usable(a) else np.array(a, order="C") for a, _ in instances]
            keep.extend(arrays)
            lst = pack_tensor_list([data_pointer(a) for a in arrays], [a.shape for a in arrays])
            keep.append(lst)
            args.append(ctypes.addressof(lst))
        elif not instances:
            args.append(0)
        else:
            a = instances[0][0]
            if not _usable(a):
                a = np.array(a, order="C")
                keep.append(a)
            args.append(data_pointer(a))
    copy_back = []
    for instances in executor.outputs:
        a = instances[0][0]
        if not _usable(a):
            tmp = np.empty(a.shape, a.dtype)
            copy_back.append((a, tmp))
            a = tmp
        args.append(data_pointer(a))
    args.append(ws_addr)
    args.append(plan.tiling_addr)
    executor.used = True
    _device_launch(plan, executor, args, stream)
    if stream is None or stream is _default_stream:
        for dst, src in copy_back:
            np.copyto(dst, src)
        return
    # Asynchronous stream: keep everything the kernel reads alive until it has run.
    refs = [keep, plan, executor.inputs, executor.outputs, workspace]
    for dst, src in copy_back:
        stream.enqueue_host(lambda dst=dst, src=src: np.copyto(dst, src))
    stream.enqueue_host(lambda: refs.clear())
