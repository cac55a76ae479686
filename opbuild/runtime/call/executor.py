"""Two-phase execution with the op-parameter cache (aclnnXxxGetWorkspaceSize / aclnnXxx).

Phase 1 turns a call into a `Plan` — selected binary, tiling result, workspace size — and wraps
it with the call's tensors in an `Executor`. Plans are cached per thread (as CANN's thread-local
op cache; bounded, evicting the least recently used approximately): a call with the same op, dtypes, formats, shapes, strides, attrs, d and p
reuses the plan without running GenSimplifiedKey or tiling. Phase 2 launches the plan's kernel
on a stream and never recomputes the key.

The pure-Python hot path (a cache hit with numpy arrays or ND Tensors on a "simple" op: required
tensors and scalar attributes) is the first branch of `get_workspace_size`: `simple_key` builds
the cache key straight from the arguments, and phase 2 passes the packed launch arguments to the
simulator's `sim_launch` directly. Every other call validates everything and copies
non-contiguous or misaligned tensors.

When the extension `opbuild.runtime._fastpath` is built, the per-op wrappers are C objects around
those Python functions: a cache hit of plain numpy arrays and its default-stream launch run in C;
everything else calls the Python function (`wrapper.__wrapped__`). Both look plans up in the one
per-thread table (plan_cache: the native plancache.c table, or its Python twin without the
extension).

This module holds the two phases themselves (`get_workspace_size`, `Executor`, `execute`); the
rest lives in modules with one job each and is re-exported here, so `opbuild.runtime.call.executor`
stays the one public module:

  arguments      argument normalization and cache keys (normalize_tensors/attrs, simple_key)
  plans          Plan, KernelInfo, build_plan (a cache miss)
  plan_cache     the thread-local plan table's interface (find, store, capacity, clear_cache) and `_fastpath`
  launch         sim_launch binding, data pointers, argument packing, the phase-2 launches
  fast_wrappers  phase1_function / phase2_function and the C fast path hook (resolved lazily)
"""

from __future__ import annotations

import ctypes
from typing import Any, Sequence

import numpy as np

from opbuild.runtime import device, settings  # device: re-exported as before
from opbuild.runtime.binaries.selection import OpRuntime
from opbuild.runtime.call import plan_cache
from opbuild.runtime.call.arguments import (  # noqa: F401 - re-exported: opbuild.runtime.call.executor is the public module
    _ATTR_CHECK,
    _ATTR_CONVERT,
    _DTYPE_NAMES,
    _dtype_name,
    _ndarray,
    _plain_array,
    _tensor_arg,
    normalize_attrs,
    normalize_plain,
    normalize_tensors,
    params_key,
    simple_key,
)
from opbuild.runtime.call.launch import (  # noqa: F401 - re-exported, as above
    _DATA_OFFSET,
    _FAST_POINTERS,
    _PACKERS,
    _default_stream,
    _execute_prepared,
    _launch_failed,
    _launch_now,
    _launch_stream,
    _Native,
    _native_error,
    _probe_data_offset,
    _read_ptr,
    _usable,
    data_pointer,
    packer,
)
from opbuild.runtime.call.plan_cache import (  # noqa: F401 - re-exported, as above
    _CACHE,
    _fastpath,
    _thread_args,
    _ThreadState,
    cache_size,
    capacity,
    clear_cache,
    reset_cache_thread_local,
    set_capacity,
)
from opbuild.runtime.call.plans import (  # noqa: F401 - re-exported, as above
    _KERNELS,
    _KERNELS_LOCK,
    KernelInfo,
    Plan,
    build_plan,
    load_kernel_info,
    plan_fresh,
)
from opbuild.runtime.errors import (  # noqa: F401 - re-exported, as above
    ACLNN_ERR_INNER,
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_PARAM_NULLPTR,
    ACLNN_ERR_RUNTIME_ERROR,
    AclnnError,
)
from opbuild.runtime.reference import executor as reference_executor
from opbuild.runtime.tensor import Tensor

# Names of fast_wrappers, which imports this module: resolved on first access (PEP 562) so that
# either module can be imported first.
_FAST_WRAPPER_NAMES = frozenset({"phase1_function", "phase2_function", "_wrap", "_FASTPATH_STATE", "_fastpath_ready"})


def __getattr__(name: str) -> Any:
    if name in _FAST_WRAPPER_NAMES:
        from opbuild.runtime.call import fast_wrappers

        return getattr(fast_wrappers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---- phase 1 --------------------------------------------------------------------------------------

Executor: Any = _fastpath.Executor if _fastpath is not None else reference_executor.PyExecutor
"""The executor type phase 1 returns: the extension's when it is built (so that its hits and
Python's misses return the same type), else the reference twin."""


def _direct_args(plan: Plan, arrays: Sequence[np.ndarray]) -> bytes | None:
    """Launch arguments passing `arrays` as they are (packed pointers, workspace slot 0), or None
    if one is misaligned (or the plan says they are not contiguous)."""
    if not plan.contiguous:
        return None
    return _pack_direct(arrays, plan.tiling_addr)


_pack_direct = _fastpath.pack_direct if _fastpath is not None else reference_executor.direct_args
"""Pack the launch arguments of arrays passed as they are (C: native/src/describe.c)."""


def get_workspace_size(op: OpRuntime, inputs: Sequence[Any], attrs: Sequence[Any], outputs: Sequence[Any],
                       deterministic: bool | None = None, impl_mode: str | int | None = None,
                       opkey: bytes | None = None, known: Plan | None = None) -> tuple[int, Executor]:
    """Phase 1: (workspace_size, executor) for one call. `opkey`: the call's key, given by the C
    fast path's miss (it built it: plain arrays, the process-wide d and p), which looked it up
    (`known`: the plan it found filed for Python lookups only, else None) and files the plan made
    here: this function neither looks the key up nor stores it again."""
    d, p, fallback = settings.resolve(deterministic, impl_mode)
    dp = settings.dp_code(d, p, fallback)
    plan = None
    key: bytes | None
    arrays: list[Any] | None
    if opkey is not None:  # the C fast path's miss: plain numpy arrays, keyed and looked up there
        key, arrays, plan = opkey, [*inputs, *outputs], known  # (a list: the plain path's arrays)
    else:
        simple = simple_key(op, dp, inputs, attrs, outputs) if inputs is not None and outputs is not None and attrs is not None else None
        key, arrays = simple if simple is not None else (None, None)
    if key is not None and arrays is not None and opkey is None:  # (both set or neither)
        plan = plan_cache.find(key)
        if plan is not None:
            for what, a in zip(op.output_what, arrays[op.n_inputs:], strict=True):
                if not a.flags.writeable:
                    raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what} is read-only")
            args = _direct_args(plan, arrays)
            if args is not None:
                return plan.workspace_size, Executor(plan, op, tuple(arrays), args)
    plain = normalize_plain(op, arrays) if arrays is not None else None
    if plain is not None and arrays is not None:
        in_params, out_params = plain
    else:
        in_params = normalize_tensors(op, inputs, outputs=False)
        out_params = normalize_tensors(op, outputs, outputs=True)
        arrays = [a for g in in_params + out_params for a, _ in g]
    attr_values = normalize_attrs(op, attrs)
    if key is None:
        key = params_key(op, dp, in_params, out_params, attr_values)
        plan = plan_cache.find(key) if key is not None else None
    if plan is None:
        plan = build_plan(op, in_params, out_params, attr_values, d, p, fallback)
        if key is not None and opkey is None:  # (no key: strides not in whole elements, planned on every call)
            plan_cache.store(key, plan)
    args = None
    if len(arrays) == plan.nargs - 2 and not op.has_dynamic:  # no absent optional, no list
        args = _direct_args(plan, arrays)
    return plan.workspace_size, Executor(plan, op, tuple(arrays), args, in_params, out_params)


# ---- phase 2 --------------------------------------------------------------------------------------

def _address(buffer: Any) -> int:
    if buffer is None:
        return 0
    if type(buffer) is int:
        return buffer
    if isinstance(buffer, np.ndarray):
        return data_pointer(buffer)
    if isinstance(buffer, Tensor):
        return data_pointer(buffer.array)
    try:
        return int(buffer)
    except (TypeError, ValueError):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"workspace must be a device buffer, an array or an address, "
                                                  f"not {type(buffer).__name__}") from None


def _buffer_bytes(buffer: Any) -> int | None:
    """The size of a workspace buffer when the object knows it (None for a bare address)."""
    if isinstance(buffer, np.ndarray):
        return buffer.nbytes
    if isinstance(buffer, Tensor):
        return buffer.array.nbytes
    nbytes = getattr(buffer, "nbytes", None)
    return nbytes if isinstance(nbytes, int) else None


def _check_workspace(workspace: Any, workspace_size: Any, plan: Plan) -> int:
    """The workspace address after checking it against what the plan needs."""
    required = plan.workspace_size
    if not isinstance(workspace_size, (int, np.integer)) or isinstance(workspace_size, bool):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"workspaceSize must be an int, not {type(workspace_size).__name__}")
    if workspace_size < required:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"workspace of {workspace_size} bytes is smaller than the {required} required")
    ws_addr = _address(workspace)
    if required and not ws_addr:
        raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"workspace is a null pointer ({required} bytes required)")
    if required:
        have = _buffer_bytes(workspace)
        if have is None:  # a bare address: it must lie in a live device buffer, with room for the workspace
            owner = device.allocation(ws_addr)
            if owner is None:
                raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"workspace address 0x{ws_addr:x} is in no live device buffer "
                                                          f"(device.malloc / aclrtMalloc); {required} bytes required")
            have = owner[0] + owner[1] - ws_addr
        if have < required:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"workspace buffer has {have} bytes, smaller than the {required} required "
                                                      f"(workspaceSize says {workspace_size})")
    return ws_addr


def execute(workspace: Any, workspace_size: int, executor: Executor, stream: Any = None) -> None:
    """Phase 2: launch the executor's kernel on `stream` (None = the default, synchronous stream)."""
    try:
        plan = executor.plan
        args = executor.args
    except AttributeError:
        if executor is None:
            raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, "executor is a null pointer") from None
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"executor must be what phase 1 returned, not {type(executor).__name__}") from None
    if executor.used and not executor.repeatable:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, "this executor already ran; make it repeatable to run it again")
    if plan.empty:
        executor.used = True
        return
    if (workspace is None and plan.workspace_size == 0 and type(workspace_size) is int and workspace_size >= 0
            and args is not None and (stream is None or stream is _default_stream)):
        # The hot path: nothing to check about the workspace, arguments ready, synchronous launch.
        executor.used = True
        _launch_now(plan, args, executor)
        return
    ws_addr = _check_workspace(workspace, workspace_size, plan)
    if args is not None:
        if stream is None or stream is _default_stream:
            a = _thread_args(plan.nargs)
            ctypes.memmove(a, args, len(args))
            a[plan.ws_index] = ws_addr
            executor.used = True
            _launch_now(plan, a, executor)
            return
        args = list(packer(plan.nargs).unpack(args))
        args[plan.ws_index] = ws_addr
        executor.used = True
        _launch_stream(plan, executor, args, stream, [executor.refs, workspace])
        return
    _execute_prepared(plan, executor, ws_addr, workspace, stream)
