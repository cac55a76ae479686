"""op_fallback: call any aclnn op API by name, the way CANN's op_graph/op_fallback.h does.

    from opbuild.runtime import fallback as fb

    ctx = fb.OpExecuteContext()                       # gert::OpExecuteContext: workspace + stream
    rc = fb.syn_exec_aclnn(ctx, "aclnnAddCustomTemplate", x, y, z)      # CANN_OPS_OPB_SYN_EXEC_ACLNN
    rc = fb.asyn_exec_aclnn(ctx, "aclnnMulCustom", x, y, z)             # CANN_OPS_OPB_ASYN_EXEC_ACLNN
    rc = ctx.launch()                                                    # ... its phase 2
    fn = fb.get_op_api_func("aclnnMulCustomGetWorkspaceSize")          # GetOpApiFuncAddr

Symbol search (`get_op_api_func`): `libcust_opapi.so` of every custom package in priority order
(each ASCEND_CUSTOM_OPP_PATH entry, then `$ASCEND_OPP_PATH/vendors/<v>` in `vendors/config.ini`
load_priority order), then the built-in package's `libopapi.so`, `libopapi_math.so`,
`libopapi_nn.so`, `libopapi_cv.so`, `libopapi_transformer.so`, `libopapi_oam.so`,
`libopapi_ras.so` (all in `<root>/op_api/lib/`). The first library whose handle has the symbol
wins (dlsym on a handle also searches the library's dependencies: that is how
ResetCacheThreadLocal of the acl library is found through libcust_opapi.so). The search path is
resolved on every lookup from the environment (cached by the variables' values and the stat of
config.ini); library handles are opened once per absolute path for the life of the process;
found symbols are cached per (name, search path).

Execution (`syn_exec_aclnn` / `asyn_exec_aclnn`) follows the macros step by step: resolve
ResetCacheThreadLocal, aclnnXGetWorkspaceSize and aclnnX; call ResetCacheThreadLocal; convert
the arguments (ConvertTypes); phase 1; then either phase 2 at once on the context's stream
(sync) or an OpApiParams handed to the context for `ctx.launch()` (async). They return
GRAPH_SUCCESS (0) or GRAPH_FAILED (0xFFFFFFFF), logging the reason (logger "opbuild.fallback",
and `ctx.last_error` for an OpExecuteContext); they never raise for a failed call.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
from pathlib import Path
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from opbuild.runtime.device import Stream
from opbuild.runtime.errors import ACLNN_ERR_INNER, AclnnError
from opbuild.runtime.tensor import Tensor

__all__ = [
    "ACL_DTYPE", "BUILTIN_LIBS", "CUSTOM_LIB", "DT_TO_ACL", "GRAPH_FAILED", "GRAPH_SUCCESS", "NUMPY_TO_DT",
    "AclStream", "OpApiAnyValue", "OpApiNotFound", "OpApiParams", "OpExecuteContext", "acl_dtype",
    "asyn_exec_aclnn", "clear_caches", "get_op_api_addr", "get_op_api_func", "library_opens", "search_path",
    "syn_exec_aclnn",
]

log = logging.getLogger("opbuild.fallback")

GRAPH_SUCCESS = 0
GRAPH_FAILED = 0xFFFFFFFF
"""ge::GRAPH_SUCCESS / ge::GRAPH_FAILED."""

CUSTOM_LIB = "libcust_opapi.so"
BUILTIN_LIBS = ("libopapi.so", "libopapi_math.so", "libopapi_nn.so", "libopapi_cv.so", "libopapi_transformer.so",
                "libopapi_oam.so", "libopapi_ras.so")
"""The built-in package's op API libraries, in search order (op_api/lib/ of the package)."""
OP_API_LIB_DIR = os.path.join("op_api", "lib")
RESET_CACHE = "ResetCacheThreadLocal"

# ---- data types (op_fallback_internal.h GetConvertType) ------------------------------------------

ACL_DTYPE: dict[str, int] = {
    "ACL_DT_UNDEFINED": -1, "ACL_FLOAT": 0, "ACL_FLOAT16": 1, "ACL_INT8": 2, "ACL_INT32": 3, "ACL_UINT8": 4,
    "ACL_INT16": 6, "ACL_UINT16": 7, "ACL_UINT32": 8, "ACL_INT64": 9, "ACL_UINT64": 10, "ACL_DOUBLE": 11,
    "ACL_BOOL": 12, "ACL_STRING": 13, "ACL_COMPLEX64": 16, "ACL_COMPLEX128": 17, "ACL_BF16": 27, "ACL_INT4": 29,
    "ACL_UINT1": 30, "ACL_COMPLEX32": 33, "ACL_HIFLOAT8": 34, "ACL_FLOAT8_E5M2": 35, "ACL_FLOAT8_E4M3FN": 36,
    "ACL_FLOAT8_E8M0": 37, "ACL_FLOAT6_E3M2": 38, "ACL_FLOAT6_E2M3": 39, "ACL_FLOAT4_E2M1": 40,
    "ACL_FLOAT4_E1M2": 41,
}
"""aclDataType values (CANN acl_base.h)."""

DT_TO_ACL: dict[str, str] = {
    "DT_FLOAT": "ACL_FLOAT",
    "DT_BF16": "ACL_BF16",
    "DT_BOOL": "ACL_BOOL",
    "DT_INT64": "ACL_INT64",
    "DT_INT32": "ACL_INT32",
    "DT_UINT64": "ACL_UINT64",
    "DT_UINT32": "ACL_UINT32",
    "DT_INT8": "ACL_INT8",
    "DT_UINT8": "ACL_UINT8",
    "DT_INT4": "ACL_INT4",
    "DT_FLOAT8_E4M3FN": "ACL_FLOAT8_E4M3FN",
    "DT_FLOAT8_E5M2": "ACL_FLOAT8_E5M2",
    "DT_FLOAT4_E2M1": "ACL_FLOAT4_E2M1",
    "DT_FLOAT4_E1M2": "ACL_FLOAT4_E1M2",
    "DT_FLOAT8_E8M0": "ACL_FLOAT8_E8M0",
    "DT_HIFLOAT8": "ACL_HIFLOAT8",
    "DT_COMPLEX64": "ACL_COMPLEX64",
    "DT_DOUBLE": "ACL_DOUBLE",
}
"""ge::DataType -> aclDataType as op_fallback converts a tensor's type; every other DT_* (DT_FLOAT16,
DT_INT16, DT_UINT16, DT_COMPLEX128, ...) becomes ACL_FLOAT16, exactly as there."""
DEFAULT_ACL = "ACL_FLOAT16"

NUMPY_TO_DT: dict[str, str] = {
    "float32": "DT_FLOAT", "float16": "DT_FLOAT16", "float64": "DT_DOUBLE", "bfloat16": "DT_BF16",
    "int8": "DT_INT8", "int16": "DT_INT16", "int32": "DT_INT32", "int64": "DT_INT64",
    "uint8": "DT_UINT8", "uint16": "DT_UINT16", "uint32": "DT_UINT32", "uint64": "DT_UINT64",
    "bool": "DT_BOOL", "complex64": "DT_COMPLEX64", "complex128": "DT_COMPLEX128",
    "int4": "DT_INT4", "uint4": "DT_UINT4", "int2": "DT_INT2", "uint2": "DT_UINT2", "uint1": "DT_UINT1",
    "float8_e4m3fn": "DT_FLOAT8_E4M3FN", "float8_e5m2": "DT_FLOAT8_E5M2", "float8_e8m0fnu": "DT_FLOAT8_E8M0",
    "float4_e2m1fn": "DT_FLOAT4_E2M1", "float6_e2m3fn": "DT_FLOAT6_E2M3", "float6_e3m2fn": "DT_FLOAT6_E3M2",
    "complex32": "DT_COMPLEX32",
}
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


_ACL_FORMAT = {"NCHW": 0, "NHWC": 1, "ND": 2}

# ---- errors --------------------------------------------------------------------------------------


class SearchedLibrary(NamedTuple):
    path: str
    state: str  # "missing", "no symbol", "found", or "load failed: <dlerror>"


class OpApiNotFound(AclnnError):
    """No library of the search path exports the symbol. `.searched` lists every library, in
    order, with what was found there."""

    def __init__(self, name: str, searched: Sequence[SearchedLibrary]) -> None:
        self.name = name
        self.searched = tuple(searched)
        if searched:
            lines = "\n".join(f"  {i}. {s.path}: {_STATE_TEXT.get(s.state, s.state)}"
                              for i, s in enumerate(searched, 1))
            text = f"op API symbol {name} not found in any of {len(searched)} libraries (search order):\n{lines}"
        else:
            text = (f"op API symbol {name} not found: no library to search (ASCEND_CUSTOM_OPP_PATH and "
                    "ASCEND_OPP_PATH are unset and no roots were given)")
        super().__init__(ACLNN_ERR_INNER, text)


_STATE_TEXT = {"missing": "does not exist", "no symbol": "exists, no such symbol"}

# ---- the search path -----------------------------------------------------------------------------

_lock = threading.Lock()
_HANDLES: dict[str, ctypes.CDLL] = {}
_OPENS: dict[str, int] = {}
_SYMBOLS: dict[tuple[str, tuple[str, ...]], tuple[int, str]] = {}
_ENV_PATH: tuple[Any, tuple[str, ...]] | None = None


def _stat_key(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


_CONFIG_INI: dict[str, str] = {}


def _config_ini(opp: str) -> str:
    path = _CONFIG_INI.get(opp)
    if path is None:
        path = _CONFIG_INI[opp] = os.path.join(opp, "vendors", "config.ini")
    return path


def _libraries(roots: Sequence[str | os.PathLike[str]]) -> tuple[str, ...]:
    libs: list[str] = []
    for root in roots:
        root = os.path.abspath(os.fspath(root))
        lib_dir = os.path.join(root, OP_API_LIB_DIR)
        if os.path.basename(root) == "built-in":
            libs += [os.path.join(lib_dir, name) for name in BUILTIN_LIBS]
        else:
            libs.append(os.path.join(lib_dir, CUSTOM_LIB))
    return tuple(libs)


def _env_roots() -> list[str]:
    from opbuild.runtime.package import read_load_priority

    roots = [p for p in os.environ.get("ASCEND_CUSTOM_OPP_PATH", "").split(":") if p]
    opp = os.environ.get("ASCEND_OPP_PATH")
    if opp:
        vendors = os.path.join(opp, "vendors")
        roots += [os.path.join(vendors, v) for v in read_load_priority(Path(vendors) / "config.ini")]
    home = os.environ.get("ASCEND_HOME_PATH")
    if home and os.path.isdir(os.path.join(home, "opp_latest")):
        roots.append(os.path.join(home, "opp_latest", "built-in"))
    elif opp:
        roots.append(os.path.join(opp, "built-in"))
    return roots


def search_path(roots: Sequence[str | os.PathLike[str]] | None = None) -> tuple[str, ...]:
    """The absolute paths of the libraries searched, in order.

    `roots`: package roots, highest priority first; a root named `built-in` stands for the
    built-in package (its seven libopapi*.so), any other for a custom package (its
    libcust_opapi.so). None: the environment's packages (see the module docstring), resolved
    now; the result is reused while ASCEND_CUSTOM_OPP_PATH, ASCEND_OPP_PATH, ASCEND_HOME_PATH
    and the stat of vendors/config.ini (and of opp_latest) stay the same."""
    global _ENV_PATH
    if roots is not None:
        return _libraries(roots)
    env = os.environ
    custom, opp, home = env.get("ASCEND_CUSTOM_OPP_PATH"), env.get("ASCEND_OPP_PATH"), env.get("ASCEND_HOME_PATH")
    key = (custom, opp, home, _stat_key(_config_ini(opp)) if opp else None,
           os.path.isdir(os.path.join(home, "opp_latest")) if home else None)
    cached = _ENV_PATH
    if cached is not None and cached[0] == key:
        return cached[1]
    paths = _libraries(_env_roots())
    _ENV_PATH = (key, paths)
    return paths


def _handle(path: str) -> tuple[ctypes.CDLL | None, str]:
    """The library at `path` (opened once per path), or (None, why not)."""
    lib = _HANDLES.get(path)
    if lib is not None:
        return lib, "found"
    if not os.path.exists(path):
        return None, "missing"
    with _lock:
        lib = _HANDLES.get(path)
        if lib is None:
            try:
                lib = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
            except OSError as exc:
                return None, f"load failed: {exc}"
            _OPENS[path] = _OPENS.get(path, 0) + 1
            _HANDLES[path] = lib
    return lib, "found"


_dlsym = ctypes.CDLL(None).dlsym
_dlsym.restype = ctypes.c_void_p
_dlsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p]


def _find(name: str, paths: tuple[str, ...]) -> tuple[int, str]:
    """(address, library) of the first library of `paths` that has `name`; OpApiNotFound else."""
    key = (name, paths)
    hit = _SYMBOLS.get(key)
    if hit is not None:
        return hit
    searched: list[SearchedLibrary] = []
    raw = name.encode()
    for path in paths:
        lib, state = _handle(path)
        if lib is not None:
            address = _dlsym(lib._handle, raw)
            if address:
                hit = (address, path)
                _SYMBOLS[key] = hit
                return hit
            state = "no symbol"
        log.debug("op API symbol %s: %s: %s", name, path, state)
        searched.append(SearchedLibrary(path, state))
    raise OpApiNotFound(name, searched)


def get_op_api_addr(name: str, roots: Sequence[str | os.PathLike[str]] | None = None) -> int:
    """The address of op API symbol `name` (see get_op_api_func)."""
    return _find(name, search_path(roots))[0]


def get_op_api_func(name: str, roots: Sequence[str | os.PathLike[str]] | None = None):
    """The op API function `name` (GetOpApiFuncAddr): a ctypes function pointer (a fresh object
    each call: restype c_int, no argtypes; set them for your signature) of the first library of
    the search path that exports it. `roots`: see search_path. OpApiNotFound (an AclnnError,
    status 561000) names every library searched when none has it."""
    address, path = _find(name, search_path(roots))
    fn = _HANDLES[path]._FuncPtr(address)
    fn.__name__ = name
    return fn


def find_op_api(name: str, roots: Sequence[str | os.PathLike[str]] | None = None) -> tuple[int, str]:
    """(address, absolute library path) of op API symbol `name`."""
    return _find(name, search_path(roots))


def library_opens() -> dict[str, int]:
    """How many times each library path was dlopened by this module (1 each: handles are cached)."""
    return dict(_OPENS)


def clear_caches() -> None:
    """Forget found symbols and the resolved environment search path (handles stay open, as
    dlopen'ed libraries stay loaded)."""
    global _ENV_PATH
    with _lock:
        _SYMBOLS.clear()
        _RESOLVED.clear()
        _ENV_PATH = None


# ---- the acl library -----------------------------------------------------------------------------

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


class AclStream(Stream):
    """A stream made by aclrtCreateStream (the only streams aclnn phase 2 accepts) as a device
    Stream: `OpExecuteContext(stream=AclStream())`. destroy() (or collection) calls
    aclrtDestroyStream; synchronize() and the rest are the device Stream's."""

    __slots__ = ()

    def __init__(self) -> None:
        acl = _get_acl()
        handle = _VP()
        rc = acl.create_stream(ctypes.byref(handle))
        if rc:
            raise AclnnError(ACLNN_ERR_INNER, f"aclrtCreateStream failed ({rc}): {_recent_error(acl)}")
        self._ptr = handle.value
        self._host_errors = []

    def __repr__(self) -> str:
        return f"<AclStream 0x{self._ptr:x}>" if self._ptr else "<AclStream destroyed>"

    def destroy(self) -> None:
        if self._ptr is None:
            return
        ptr, self._ptr = self._ptr, None
        acl = _get_acl()
        if acl.destroy_stream(ptr):
            raise AclnnError(ACLNN_ERR_INNER, f"aclrtDestroyStream: {_recent_error(acl)}")
        self._raise_host_error()

    def __del__(self) -> None:
        if self._ptr is not None and _acl is not None:
            ptr, self._ptr = self._ptr, None
            _acl.destroy_stream(ptr)


# ---- OpApiParams and the context -----------------------------------------------------------------

class OpApiAnyValue(NamedTuple):
    """One converted argument: the acl object and its destroy function (None, None for values)."""

    pointer: int | None
    deleter: Callable[[int], Any] | None


PHASE2_PROTO = ctypes.CFUNCTYPE(ctypes.c_int32, _VP, ctypes.c_uint64, _VP, _VP)
"""OpApiFunc2Stage: int (*)(void *workspace, uint64_t size, aclOpExecutor *, const aclrtStream)."""


class OpApiParams:
    """What asyn_exec_aclnn leaves for phase 2: the converted objects with their deleters, the
    executor and the phase-2 function (plus the Python objects whose memory they describe)."""

    __slots__ = ("api", "converted_params", "executor", "op_api_func", "keepalive", "released")

    def __init__(self, api: str, converted_params: list[OpApiAnyValue], executor: int | None,
                 op_api_func: Callable[..., int], keepalive: list[Any]) -> None:
        self.api = api
        self.converted_params = converted_params
        self.executor = executor
        self.op_api_func = op_api_func
        self.keepalive = keepalive
        self.released = False

    def __repr__(self) -> str:
        return (f"<OpApiParams {self.api}: {len(self.converted_params)} params, executor "
                f"{'0x%x' % self.executor if self.executor else None}{', released' if self.released else ''}>")

    def release(self) -> None:
        """Destroy the converted objects, and the executor if phase 2 never ran (idempotent)."""
        if self.released:
            return
        self.released = True
        _release(self.converted_params)
        if self.executor:
            executor, self.executor = self.executor, None
            _get_acl().destroy_executor(executor)
        self.keepalive = []

    def __del__(self) -> None:
        if not self.released and _acl is not None:
            try:
                self.release()
            except Exception:  # noqa: BLE001 - interpreter shutdown
                pass


def _release(converted: list[OpApiAnyValue]) -> None:
    """ReleaseConvertTypes: destroy every converted object, last first."""
    for pointer, deleter in reversed(converted):
        if pointer and deleter is not None:
            deleter(pointer)
    converted.clear()


class OpExecuteContext:
    """gert::OpExecuteContext as op_fallback uses it: workspace, stream, workspace sizes and the
    async OpApiParams slot.

    `stream`: a device Stream (for aclnn phase 2 one made by aclrtCreateStream, e.g.
    `AclStream()`), or None for the synchronous default stream. `launch()` plays GE's
    OpExecuteLaunchContext: phase 2 of the stored OpApiParams."""

    __slots__ = ("node_name", "_stream", "_workspaces", "_workspace_sizes", "_params", "last_error", "__weakref__")

    def __init__(self, stream: Any = None, node_name: str = "fallback") -> None:
        self.node_name = node_name
        self._stream = stream
        self._workspaces: list[Any] = []
        self._workspace_sizes: list[int] = []
        self._params: OpApiParams | None = None
        self.last_error: str | None = None

    def __repr__(self) -> str:
        return f"<OpExecuteContext {self.node_name} stream={self._stream!r} params={self._params!r}>"

    # ---- workspace
    def malloc_workspace(self, size: int) -> int | None:
        """MallocWorkspace: device memory of `size` bytes (its address), None on failure."""
        from opbuild.runtime import device

        try:
            buf = device.malloc(size)
        except (device.DeviceError, ValueError) as exc:
            log.error("%s: MallocWorkspace(%d) failed: %s", self.node_name, size, exc)
            return None
        self._workspaces.append(buf)
        return buf.address

    def free_workspace(self) -> None:
        """FreeWorkspace: free what malloc_workspace gave (ordered after the stream's work)."""
        stream = self._stream
        workspaces, self._workspaces = self._workspaces, []
        for buf in workspaces:
            buf.free(stream if stream is not None and getattr(stream, "handle", None) else None)

    # ---- stream
    def get_stream(self) -> Any:
        """GetStream: the device Stream, or None (the default stream)."""
        return self._stream

    # ---- async state
    def set_workspace_sizes(self, sizes: Sequence[int]) -> None:
        self._workspace_sizes = [int(s) for s in sizes]

    def get_workspace_sizes(self) -> list[int]:
        return list(self._workspace_sizes)

    def set_op_api_params(self, params: OpApiParams | None) -> None:
        """SetOpApiParamsWithDefaultDeleter: the context owns `params` now; params it held and
        did not launch are released."""
        old, self._params = self._params, params
        if old is not None and old is not params:
            old.release()

    def get_op_api_params(self) -> OpApiParams | None:
        return self._params

    def launch(self) -> int:
        """Phase 2 of the stored OpApiParams: allocate the recorded workspace, call the phase-2
        function with the context's stream, release the converted objects, free the workspace.
        GRAPH_SUCCESS, or GRAPH_FAILED (logged) when nothing is stored or a step fails."""
        params = self._params
        if params is None or params.released:
            return _fail(self, "launch",
                         "no OpApiParams to launch (asyn_exec_aclnn did not succeed, or it ran already)")
        self._params = None
        size = self._workspace_sizes[0] if self._workspace_sizes else 0
        workspace = None
        if size > 0:
            workspace = self.malloc_workspace(size)
            if not workspace:
                params.release()
                return _fail(self, params.api, f"MallocWorkspace({size}) failed")
        stream = self._stream
        executor, params.executor = params.executor, None  # phase 2 consumes it, whatever it returns
        status = params.op_api_func(workspace, size, executor, stream.handle if stream is not None else None)
        params.release()
        self.free_workspace()
        if status != 0:
            return _fail(self, params.api, f"{params.api} (phase 2) returned {status}: {_recent_error(_get_acl())}")
        return GRAPH_SUCCESS

    def close(self) -> None:
        """Release un-launched OpApiParams and free the workspace."""
        self.set_op_api_params(None)
        self.free_workspace()

    def __enter__(self) -> OpExecuteContext:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _fail(ctx: Any, api: str, message: str) -> int:
    node = getattr(ctx, "node_name", "fallback")
    text = f"{api}: {message}"
    log.error("%s: aclnnfallback: %s", node, text)
    if isinstance(ctx, OpExecuteContext):
        ctx.last_error = text
    return GRAPH_FAILED


# ---- argument conversion (ConvertTypes) ----------------------------------------------------------

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
        for d, s in zip(shape, array.strides):
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
_SCALAR_ACL = {name: ACL_DTYPE[acl] for name, acl in {
    "float32": "ACL_FLOAT", "float16": "ACL_FLOAT16", "float64": "ACL_DOUBLE", "bfloat16": "ACL_BF16",
    "int8": "ACL_INT8", "int16": "ACL_INT16", "int32": "ACL_INT32", "int64": "ACL_INT64", "uint8": "ACL_UINT8",
    "uint16": "ACL_UINT16", "uint32": "ACL_UINT32", "uint64": "ACL_UINT64", "bool": "ACL_BOOL",
    "complex64": "ACL_COMPLEX64", "complex128": "ACL_COMPLEX128",
}.items()}
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


# ---- the two phases ------------------------------------------------------------------------------

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


_RESOLVED: dict[tuple[str, tuple[str, ...]], tuple[Any, int, Any]] = {}


def _resolve(api: str, roots: Sequence[str | os.PathLike[str]] | None) -> tuple[Any, int, Any] | str:
    """(ResetCacheThreadLocal, GetWorkspaceSize address, phase-2 function), or why not."""
    paths = search_path(roots)
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
    hit = (_function(found[0], _RESET_PROTO), found[1], _function(found[2], PHASE2_PROTO))
    _RESOLVED[key] = hit
    return hit


def _prepare(ctx: Any, api: str, args: Sequence[Any], roots: Any):
    """Steps shared by both macros up to and including phase 1: (conv, workspace size, executor,
    phase-2 function), or GRAPH_FAILED (logged)."""
    funcs = _resolve(api, roots)
    if type(funcs) is str:
        return _fail(ctx, api, funcs)
    reset, gws, run = funcs
    acl = _acl or _get_acl()
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
    converted, phase 1 non-zero, MallocWorkspace failing, phase 2 non-zero."""
    prepared = _prepare(ctx, api, args, roots)
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
