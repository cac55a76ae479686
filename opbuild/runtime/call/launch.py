"""Phase 2's launching: the simulator's sim_launch, launch-argument packing and data pointers.

`_Native` binds sim_launch for the hot path (no ctypes argument conversion); `data_pointer`
reads a numpy array's data address without `.ctypes`; `packer` packs launch-argument arrays.
`_launch_now` launches on the default stream, `_launch_stream` on any stream (keeping what the
kernel reads alive), `_execute_prepared` copies non-contiguous or misaligned tensors first.
`observe_launches(fn)` registers a function called at every launch (tests count launches);
`add_launch_hook(hook)` a `LaunchHook` seeing the launch's executor before and after (dump, profile).
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
from opbuild.runtime.call.plans import Plan
from opbuild.runtime.errors import ACLNN_ERR_INNER, ACLNN_ERR_RUNTIME_ERROR, AclnnError

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


# ---- launch observers and hooks (tests, tools): registered explicitly, never looked up per call ------

LAUNCH_OBSERVERS: list = []
"""The registered launch hooks (`LaunchHook`), in registration order. While one is registered,
the C fast path and the C ABI's native hit path hand their launches to the Python path, which
calls them: the only per-launch cost of debugging tools while none is on is this list's truth
test (and the C paths' one flag check)."""

WATCH_LISTENERS: list = []
"""Called with the number of registered hooks whenever it changes: the aclnn C ABI's native path
keeps it (registered by capi when it loads the acl library) and declines its hits while > 0."""


class LaunchHook:
    """What a debugging tool sees of every launch (dump, profile; tests count launches).

    `kernel` is called before an AI Core launch and `aicpu` before an AI CPU task; each may return
    a function called after it with True (it ran) or False (it failed), on the stream for an
    asynchronous launch (so the outputs it reads are written)."""

    def kernel(self, plan: Plan, executor: Any, stream: Any) -> Any:
        return None

    def aicpu(self, executor: Any, stream: Any) -> Any:
        return None


class _PlanObserver(LaunchHook):
    """observe_launches' function as a hook: fn(plan) at every AI Core launch."""

    def __init__(self, fn) -> None:
        self.fn = fn

    def kernel(self, plan: Plan, executor: Any, stream: Any) -> None:
        self.fn(plan)


def add_launch_hook(hook: LaunchHook) -> Any:
    """Register `hook` (a LaunchHook); returns the function that unregisters it."""
    LAUNCH_OBSERVERS.append(hook)
    _observed_changed()

    def unregister() -> None:
        if hook in LAUNCH_OBSERVERS:
            LAUNCH_OBSERVERS.remove(hook)
            _observed_changed()

    return unregister


def observe_launches(fn) -> Any:
    """Register `fn(plan)` to be called at every launch; returns the function that unregisters it."""
    return add_launch_hook(_PlanObserver(fn))


def _observed_changed() -> None:
    from opbuild.runtime.call.plan_cache import _fastpath

    if _fastpath is not None:
        _fastpath.set_observed(len(LAUNCH_OBSERVERS))
    for listener in WATCH_LISTENERS:
        listener(len(LAUNCH_OBSERVERS))


def _observe(plan: Plan, executor: Any, stream: Any) -> list:
    """Call every hook before a kernel launch; the functions to call after it."""
    afters = []
    for hook in list(LAUNCH_OBSERVERS):
        after = hook.kernel(plan, executor, stream)
        if after is not None:
            afters.append(after)
    return afters


def observe_aicpu(executor: Any, stream: Any) -> list:
    """Call every hook before an AI CPU task; the functions to call after it."""
    afters = []
    for hook in list(LAUNCH_OBSERVERS):
        after = hook.aicpu(executor, stream)
        if after is not None:
            afters.append(after)
    return afters


def finish_observed(afters: list, ok: bool, stream: Any = None) -> None:
    """Call the hooks' after-functions now (default stream) or on `stream` once it got there."""
    if not afters:
        return
    if stream is None or stream is _default_stream:
        for after in afters:
            after(ok)
        return
    stream.enqueue_host(lambda: [after(True) for after in afters])


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
    raise AclnnError(ACLNN_ERR_RUNTIME_ERROR, f"{plan.op.name}: kernel {plan.launched.name} failed: "
                                              f"{_native_error()} [kernel {plan.launched.binary.path}]")


_default_stream = device.default_stream


def _launch_now(plan: Plan, a: Any, executor: Executor) -> None:
    """Launch on the default stream; `a` is the argument array (ctypes array or packed bytes)."""
    launch = _Native.launch
    if launch is None:
        try:
            _Native.bind()
        except (OSError, AttributeError, device.DeviceError) as exc:
            raise AclnnError(ACLNN_ERR_RUNTIME_ERROR, f"{plan.op.name}: cannot launch kernel {plan.launched.name}: "
                                                      f"the device simulator is unusable: {exc}") from None
        launch = _Native.launch
    if plan.block_dim > 0x7FFFFFFF:  # does not fit the unprototyped C int: take the checked path
        args = list(packer(plan.nargs).unpack(bytes(a)))
        _launch_stream(plan, executor, args, None, None)
        return
    if LAUNCH_OBSERVERS:
        afters = _observe(plan, executor, None)
        rc = launch(None, plan.fn, a, plan.nargs, plan.block_dim, plan.sync, None, 0)
        finish_observed(afters, rc == 0)
    else:
        rc = launch(None, plan.fn, a, plan.nargs, plan.block_dim, plan.sync, None, 0)
    if rc:
        _launch_failed(plan)


def _device_launch(plan: Plan, executor: Executor, args: list, stream: Any) -> list:
    """Launch through the simulator's Python binding (streams, prepared tensors); its errors as
    361001. Returns the hooks' after-functions (the caller calls them once the outputs are in place)."""
    afters = _observe(plan, executor, stream) if LAUNCH_OBSERVERS else []
    try:
        device.launch(plan.launched.binary, args, plan.block_dim, stream=stream, intercore_sync=plan.launched.intercore_sync)
    except device.DeviceError as exc:
        finish_observed(afters, False)
        raise AclnnError(ACLNN_ERR_RUNTIME_ERROR, f"{executor.op.spec.op}: kernel {plan.launched.name} failed: {exc}") from None
    return afters


def _launch_stream(plan: Plan, executor: Executor, args: list, stream: Any, refs: list | None) -> None:
    finish_observed(_device_launch(plan, executor, args, stream), True, stream)
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
    for param, instances in zip(executor.op.spec.inputs, executor.inputs, strict=True):
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
    afters = _device_launch(plan, executor, args, stream)
    if stream is None or stream is _default_stream:
        for dst, src in copy_back:
            np.copyto(dst, src)
        finish_observed(afters, True)
        return
    # Asynchronous stream: keep everything the kernel reads alive until it has run.
    refs = [keep, plan, executor.inputs, executor.outputs, workspace]
    for dst, src in copy_back:
        stream.enqueue_host(lambda dst=dst, src=src: np.copyto(dst, src))
    finish_observed(afters, True, stream)
    stream.enqueue_host(lambda: refs.clear())
