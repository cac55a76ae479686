"""The two execution macros of op_fallback: syn_exec_aclnn and asyn_exec_aclnn.

What: CANN_OPS_OPB_SYN_EXEC_ACLNN / CANN_OPS_OPB_ASYN_EXEC_ACLNN step by step: resolve
ResetCacheThreadLocal, aclnnXGetWorkspaceSize and aclnnX (cached per API and search path), call
ResetCacheThreadLocal, convert the arguments, run phase 1, then phase 2 at once (sync) or hand an
OpApiParams to the context (async); plus `clear_caches`, which also forgets resolved APIs.
Why its own module: it is the only part that ties search, conversion and the context together;
each of those stays usable without it.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any, Sequence

from opbuild.runtime.call.plan_cache import _fastpath
from opbuild.runtime.fallback import acllib
from opbuild.runtime.fallback.acllib import _VP, _get_acl, _recent_error
from opbuild.runtime.fallback.context import (
    GRAPH_SUCCESS,
    PHASE2_PROTO,
    OpApiParams,
    _fail,
)
from opbuild.runtime.fallback.convert import ConversionError, _convert_args, _release
from opbuild.runtime.fallback.dtypes import _ACL_OF_DTYPE
from opbuild.runtime.fallback.search import (
    RESET_CACHE,
    OpApiNotFound,
    _find,
    _forget_locked,
    _lock,
    recent_search_path,
    search_path,
)

_RESET_PROTO = ctypes.CFUNCTYPE(None)
_PHASE1_PROTOS: dict[tuple[Any, ...], Any] = {}
_FUNCS: dict[tuple[Any, ...], Any] = {}
_WS_P = ctypes.POINTER(ctypes.c_uint64)
_EX_P = ctypes.POINTER(_VP)


def _function(address: int, proto: Any) -> Any:
    key = (address, proto)
    fn = _FUNCS.get(key)
    if fn is None:
        fn = proto(address)
        _FUNCS[key] = fn
    return fn


def _phase1(address: int, argtypes: list[Any]) -> Any:
    """aclnnXGetWorkspaceSize as a function of these argument types (ConvertToOpApiFunc)."""
    sig = tuple(argtypes)
    proto = _PHASE1_PROTOS.get(sig)
    if proto is None:
        proto = ctypes.CFUNCTYPE(ctypes.c_int32, *sig, _WS_P, _EX_P)
        _PHASE1_PROTOS[sig] = proto
    return _function(address, proto)


_RESOLVED: dict[tuple[str, tuple[str, ...]], tuple[Any, int, Any, tuple[int | None, ...] | None]] = {}
_NEEDS_WORKSPACE: set[int] = set()
"""GetWorkspaceSize addresses whose phase 1 asked for a workspace: their calls take the Python
path (which has ctx.malloc_workspace) from then on."""


def _resolve(api: str, roots: Sequence[str | os.PathLike[str]] | None) -> tuple[Any, int, Any, tuple[int | None, ...] | None] | str:
    """(ResetCacheThreadLocal, GetWorkspaceSize address, phase-2 function, the addresses
    _fastpath.syn_exec takes or None without the extension), or why not."""
    paths = search_path(roots) if roots is not None else recent_search_path()
    key = (api, paths)
    hit = _RESOLVED.get(key)
    if hit is not None:
        return hit
    found = []
    missing = []
    for name in (RESET_CACHE, api + "GetWorkspaceSize", api):
        try:
            found.append(_find(name, paths)[0])
        except OpApiNotFound as exc:
            missing.append(exc.message)
    if missing:
        return "\n".join(missing)
    native = None
    if _fastpath is not None:
        acl = acllib._acl or _get_acl()
        native = (found[0], found[1], found[2], *acl.exec_addresses)
    hit = (_function(found[0], _RESET_PROTO), found[1], _function(found[2], PHASE2_PROTO), native)
    _RESOLVED[key] = hit
    return hit


def _prepare(ctx: Any, api: str, args: Sequence[Any], roots: Any, funcs: Any = None):
    """Steps shared by both macros up to and including phase 1: (conv, workspace size, executor,
    phase-2 function), or GRAPH_FAILED (logged). `funcs`: what _resolve returned, if called."""
    if funcs is None:
        funcs = _resolve(api, roots)
    if type(funcs) is str:
        return _fail(ctx, api, funcs)
    reset, gws, run, _ = funcs
    acl = acllib._acl or _get_acl()
    reset()
    try:
        conv = _convert_args(acl, args)
    except ConversionError as exc:
        return _fail(ctx, api, str(exc))
    ws = ctypes.c_uint64(0)
    ex = _VP(None)
    try:
        status = _phase1(gws, conv.argtypes)(*conv.values, ctypes.byref(ws), ctypes.byref(ex))
    except ctypes.ArgumentError as exc:
        _release(conv.owned)
        return _fail(ctx, api, f"cannot pass the arguments to {api}GetWorkspaceSize: {exc}")
    if status != 0:
        _release(conv.owned)
        if ex.value:
            acl.destroy_executor(ex.value)
        return _fail(ctx, api, f"{api}GetWorkspaceSize returned {status}: {_recent_error(acl)}")
    return conv, ws.value, ex.value, run


def syn_exec_aclnn(ctx: Any, api: str, *args: Any, roots: Sequence[str | os.PathLike[str]] | None = None) -> int:
    """CANN_OPS_OPB_SYN_EXEC_ACLNN(ctx, api, args...): both phases now, phase 2 on ctx.get_stream().

    Arguments (ConvertTypes): numpy array / Tensor -> aclTensor (dims, strides, offset of the
    array; dtype by DT_TO_ACL); a list of them -> aclTensorList; Python float -> ACL_FLOAT
    aclScalar; numpy scalar -> aclScalar of its dtype; int -> int64_t; bool -> bool; str/bytes
    -> char *; list of ints / floats / bools -> aclIntArray / aclFloatArray / aclBoolArray;
    None -> NULL; a ctypes value (e.g. ctypes.c_double for a `double` attribute) as it is.
    `roots`: search these package roots instead of the environment's (see search_path).
    Returns GRAPH_SUCCESS or GRAPH_FAILED (logged): a symbol missing, an argument that cannot be
    converted, phase 1 non-zero, MallocWorkspace failing, phase 2 non-zero.

    The common call -- plain C-contiguous numpy arrays only, no workspace -- runs in C
    (_fastpath.syn_exec, native/src/fallback_exec.c: the same steps without a ctypes conversion
    per argument); any other call, and any failure before phase 2, takes the steps below."""
    funcs = _resolve(api, roots)
    if not isinstance(funcs, str) and funcs[3] is not None and funcs[1] not in _NEEDS_WORKSPACE:
        stream = ctx.get_stream()
        status = _fastpath.syn_exec(funcs[3], _ACL_OF_DTYPE, stream.handle if stream is not None else None, args)
        if status == 0:
            return GRAPH_SUCCESS
        if type(status) is tuple:  # (2, status): phase 2 ran and failed
            return _fail(ctx, api, f"{api} (phase 2) returned {status[1]}: {_recent_error(_get_acl())}")
        if status == -2:
            _NEEDS_WORKSPACE.add(funcs[1])
    prepared = _prepare(ctx, api, args, roots, funcs)
    if type(prepared) is int:
        return prepared
    conv, size, executor, run = prepared
    workspace = None
    if size > 0:
        workspace = ctx.malloc_workspace(size)
        if not workspace:
            _release(conv.owned)
            _get_acl().destroy_executor(executor)
            return _fail(ctx, api, f"MallocWorkspace({size}) failed")
    stream = ctx.get_stream()
    status = run(workspace, size, executor, stream.handle if stream is not None else None)
    _release(conv.owned)
    if size > 0:
        ctx.free_workspace()
    if status != 0:
        return _fail(ctx, api, f"{api} (phase 2) returned {status}: {_recent_error(_get_acl())}")
    return GRAPH_SUCCESS


def asyn_exec_aclnn(ctx: Any, api: str, *args: Any, roots: Sequence[str | os.PathLike[str]] | None = None) -> int:
    """CANN_OPS_OPB_ASYN_EXEC_ACLNN(ctx, api, args...): phase 1 now; the converted objects, the
    executor and the phase-2 function go to ctx.set_op_api_params(OpApiParams) and the workspace
    size to ctx.set_workspace_sizes([size]). GRAPH_SUCCESS means phase 1 succeeded; phase 2 runs
    at ctx.launch(). Arguments, `roots` and failures as syn_exec_aclnn. After a failure the
    context holds no OpApiParams (a previous un-launched one is released, as replacing it would)
    and this call's converted objects are already released."""
    prepared = _prepare(ctx, api, args, roots)
    if type(prepared) is int:
        ctx.set_op_api_params(None)
        ctx.set_workspace_sizes([])
        return prepared
    conv, size, executor, run = prepared
    ctx.set_op_api_params(OpApiParams(api, conv.owned, executor, run, conv.keepalive))
    ctx.set_workspace_sizes([size])
    return GRAPH_SUCCESS


def clear_caches() -> None:
    """Forget found symbols and the resolved environment search path (handles stay open, as
    dlopen'ed libraries stay loaded)."""
    with _lock:
        _forget_locked()
        _RESOLVED.clear()
        _NEEDS_WORKSPACE.clear()
