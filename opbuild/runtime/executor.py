"""Two-phase execution with the op-parameter cache (aclnnXxxGetWorkspaceSize / aclnnXxx).

Phase 1 turns a call into a `Plan` — selected binary, tiling result, workspace size — and wraps
it with the call's tensors in an `Executor`. Plans are cached per thread (as CANN's thread-local
op cache; bounded, evicting the least recently used approximately): a call with the same op, dtypes, formats, shapes, strides, attrs, d and p
reuses the plan without running GenSimplifiedKey or tiling. Phase 2 launches the plan's kernel
on a stream and never recomputes the key.

The hot path (a cache hit with numpy arrays or ND Tensors on a "simple" op: required tensors and
scalar attributes) is kept lean: the per-op wrappers made by `phase1_function` /
`phase2_function` build the cache key straight from the arguments (`simple_key` is the same key
in plain Python), read the arrays' data pointers without numpy's `.ctypes`, and phase 2 fills a
per-thread argument array and calls the simulator's `sim_launch` directly. Every other call goes
through `get_workspace_size` / `execute`, which validate everything and copy non-contiguous or
misaligned tensors.

When the extension `opbuild.runtime._fastpath` is built, the per-op wrappers are C objects around
those Python functions: a cache hit of plain numpy arrays (looked up in a per-thread C table of
the same keys, filled from this module's misses and cleared with its cache) and its default-stream
launch run in C; everything else calls the Python function (`wrapper.__wrapped__`).
"""

from __future__ import annotations

import ctypes
import json
import os
import struct
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from opbuild.abi import c_callbacks as _c_callbacks
from opbuild.abi.ge_types import dtype_name
from opbuild.abi.platform import platform
from opbuild.keys import KeyContext
from opbuild.runtime import device, settings
from opbuild.runtime.errors import (
    ACLNN_ERR_INNER,
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_PARAM_NULLPTR,
    ACLNN_ERR_RUNTIME_ERROR,
    AclnnError,
)
from opbuild.runtime.selection import OpRuntime, Selection, current_soc
from opbuild.runtime.shapes import infer_output_shape
from opbuild.runtime.tensor import Tensor, as_array

PARAM_CACHE_CAPACITY = int(os.environ.get("OPBUILD_PARAM_CACHE_SIZE", "1024"))

# The cache-hit path in C (opbuild/runtime/native/src/fastpath.c); None when it is not built or
# is disabled with OPBUILD_NO_FASTPATH=1. Configured by the first wrapper made (_fastpath_ready).
if os.environ.get("OPBUILD_NO_FASTPATH", "") not in ("", "0"):
    _fastpath = None
else:
    try:
        from opbuild.runtime import _fastpath
    except ImportError:
        _fastpath = None


# ---- kernels --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class KernelInfo:
    """A loaded kernel binary and what its descriptor JSON says about launching it."""

    binary: Any
    op_para_size: int
    intercore_sync: bool
    name: str


_KERNELS: dict[Path, KernelInfo] = {}
_KERNELS_LOCK = threading.Lock()


def load_kernel_info(selection: Selection, op: str) -> KernelInfo:
    """Open the selected binary (once per path) and read its descriptor JSON."""
    path = selection.entry.bin_path
    info = _KERNELS.get(path)
    if info is not None:
        return info
    with _KERNELS_LOCK:
        info = _KERNELS.get(path)
        if info is None:
            json_path = selection.entry.json_path
            try:
                desc = json.loads(json_path.read_text())
                op_para_size = int(desc["opParaSize"])
                if op_para_size < 0:
                    raise ValueError(f"opParaSize {op_para_size} is negative")
                sync = bool(desc.get("intercoreSync", 0))
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
                raise AclnnError(ACLNN_ERR_INNER, f"{op}: kernel descriptor {json_path} unusable: {exc}") from None
            try:
                binary = device.load_kernel(path)
            except device.DeviceError as exc:
                raise AclnnError(ACLNN_ERR_INNER, f"{op}: cannot load kernel {path}: {exc}") from None
            info = KernelInfo(binary, op_para_size, sync, selection.entry.name)
            _KERNELS[path] = info
    return info


# ---- the native launch used by the hot path --------------------------------------------------------

class _Native:
    """sim_launch without ctypes argument conversion (its C ABI is opbuild/runtime/native/src/sim.h).

    Called with a NULL stream, a c_void_p kernel function, a c_void_p array and small ints, so
    ctypes passes everything as is. Bound on first use.
    """

    launch: Any = None
    last_error: Any = None

    @classmethod
    def bind(cls) -> None:
        lib = ctypes.CDLL(str(device.library_path()), mode=os.RTLD_NOW | os.RTLD_LOCAL)
        launch = lib["sim_launch"]
        launch.restype = ctypes.c_int
        last_error = lib["sim_last_error"]
        last_error.restype = ctypes.c_char_p
        last_error.argtypes = []
        cls.last_error = last_error
        cls.launch = launch


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


# ---- plans and the parameter cache ----------------------------------------------------------------

class Plan:
    """Everything phase 2 needs, computed once per call signature (only the cache's `hot` flag
    changes after the build)."""

    __slots__ = ("op", "selection", "kernel", "block_dim", "tiling_key", "workspace_size", "tiling_buffer", "empty",
                 "contiguous", "nargs", "ws_index", "tiling_addr", "fn", "sync", "hot")

    def __init__(self, op: OpRuntime, selection: Selection | None, kernel: KernelInfo | None, block_dim: int,
                 tiling_key: int, workspace_size: int, tiling_buffer: Any, empty: bool, contiguous: bool,
                 nargs: int) -> None:
        self.op = op
        self.selection = selection
        self.kernel = kernel
        self.block_dim = block_dim
        self.tiling_key = tiling_key
        self.workspace_size = workspace_size
        self.tiling_buffer = tiling_buffer
        self.empty = empty
        self.contiguous = contiguous  # every tensor of calls with this key is C-contiguous
        self.nargs = nargs
        self.ws_index = nargs - 2
        self.tiling_addr = ctypes.addressof(tiling_buffer) if tiling_buffer is not None else 0
        self.fn = ctypes.c_void_p(kernel.binary.fn) if kernel is not None else None
        self.sync = 1 if kernel is not None and kernel.intercore_sync else 0
        self.hot = False  # cache metadata: used since the eviction clock last passed it

    def __repr__(self) -> str:
        name = self.selection.entry.name if self.selection else None
        return f"Plan({name}, block_dim={self.block_dim}, workspace={self.workspace_size}, empty={self.empty})"


class _ThreadState(threading.local):
    def __init__(self) -> None:
        self.plans: dict[tuple, Plan] = {}
        self.args: list[Any] = [None] * 65
        self.oneshot: dict[tuple, tuple] = {}


_CACHE = _ThreadState()


def reset_cache_thread_local() -> None:
    """ResetCacheThreadLocal(): forget the calling thread's cached plans (and the C fast path's
    table of them)."""
    _CACHE.plans.clear()
    _CACHE.oneshot.clear()
    if _fastpath is not None:
        _fastpath.reset()


def cache_size() -> int:
    return len(_CACHE.plans)


def _store(key: tuple, plan: Plan) -> None:
    """Insert a plan; over capacity, evict by the CLOCK (second chance) approximation of LRU: a
    hit only sets `plan.hot` (no reordering on the hot path); eviction walks the plans oldest
    first, gives each hot one a second chance at the end, and drops the first cold one."""
    plans = _CACHE.plans
    plans[key] = plan
    capacity = max(PARAM_CACHE_CAPACITY, 1)
    while len(plans) > capacity:
        for k in list(plans):
            if k is key:  # the plan just stored stays
                continue
            p = plans[k]
            if p.hot:
                p.hot = False
                del plans[k]
                plans[k] = p
            else:
                del plans[k]
                if _fastpath is not None:  # its table must not keep the evicted plan
                    _fastpath.reset()
                break
        # no break: every other plan was hot; they are cold now and the next pass evicts one


def _thread_args(n: int) -> Any:
    """The calling thread's launch-argument array of n pointers (reused: launches copy or finish)."""
    if n < 65:
        arrays = _CACHE.args
        a = arrays[n]
        if a is None:
            a = arrays[n] = (ctypes.c_void_p * n)()
        return a
    return (ctypes.c_void_p * n)()


# ---- argument handling ----------------------------------------------------------------------------

_DTYPE_NAMES: dict[np.dtype, str] = {}


def _dtype_name(dtype: np.dtype) -> str:
    """ge_types.dtype_name, memoized (numpy's dtype.name is slow); ValueError for unsupported."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = dtype_name(dtype)
        _DTYPE_NAMES[dtype] = name
    return name


def _tensor_arg(value: Any, what: str, optional: bool) -> tuple[np.ndarray | None, str]:
    if value is None and optional:
        return None, "ND"
    if value is None:
        raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{what} is a null pointer")
    array, fmt = as_array(value, what)
    if not array.dtype.isnative:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what} has non-native byte order ({array.dtype.str}); "
                                                  f"convert it with .astype('{array.dtype.newbyteorder('=').str}')")
    try:
        _dtype_name(array.dtype)
    except ValueError as exc:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what}: {exc}") from None
    return array, fmt


def normalize_tensors(op: OpRuntime, values: Sequence[Any], outputs: bool) -> list[list[tuple[np.ndarray, str]]]:
    """Per IR param, its instances as (array, format): [] absent optional, [one], or a list."""
    params = op.spec.outputs if outputs else op.spec.inputs
    if values is None or len(values) != len(params):
        kind = "outputs" if outputs else "inputs"
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{op.spec.op} takes {len(params)} {kind}, got {0 if values is None else len(values)}")
    result = []
    whats = op.output_what if outputs else op.input_what
    for param, value, what in zip(params, values, whats):
        if param.param_type == "dynamic":
            if value is None:
                raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{what} (tensor list) is a null pointer")
            if not isinstance(value, (list, tuple)) or not value:
                raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what} must be a non-empty list of tensors")
            result.append([_tensor_arg(v, f"{what}[{k}]", False) for k, v in enumerate(value)])
        else:
            array, fmt = _tensor_arg(value, what, param.param_type == "optional")
            result.append([] if array is None else [(array, fmt)])
    if outputs:
        for what, instances in zip(whats, result):
            for a, _ in instances:
                if not a.flags.writeable:
                    raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what} is read-only")
    return result


_ATTR_CHECK = {
    "int": lambda v: isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)),
    "float": lambda v: isinstance(v, (int, float, np.floating, np.integer)) and not isinstance(v, (bool, np.bool_)),
    "bool": lambda v: isinstance(v, (bool, np.bool_)),
    "str": lambda v: isinstance(v, str),
    "list_int": lambda v: isinstance(v, (list, tuple)) and all(_ATTR_CHECK["int"](x) for x in v),
    "list_float": lambda v: isinstance(v, (list, tuple)) and all(_ATTR_CHECK["float"](x) for x in v),
    "list_bool": lambda v: isinstance(v, (list, tuple)) and all(_ATTR_CHECK["bool"](x) for x in v),
}
_ATTR_CONVERT = {
    "int": int, "float": float, "bool": bool, "str": str,
    "list_int": lambda v: tuple(int(x) for x in v),
    "list_float": lambda v: tuple(float(x) for x in v),
    "list_bool": lambda v: tuple(bool(x) for x in v),
}


def normalize_attrs(op: OpRuntime, values: Sequence[Any]) -> tuple:
    """Attribute values in spec order, defaults filled in, types checked; hashable."""
    attrs = op.spec.attrs
    if values is None or len(values) != len(attrs):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{op.spec.op} takes {len(attrs)} attributes, got {0 if values is None else len(values)}")
    out = []
    for attr, value in zip(attrs, values):
        if value is None:
            if attr.required:
                raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{op.spec.op}: required attribute '{attr.name}' is missing")
            value = attr.default
        if not _ATTR_CHECK[attr.type](value):
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{op.spec.op}: attribute '{attr.name}' must be {attr.type}, got {value!r}")
        out.append(_ATTR_CONVERT[attr.type](value))
    return tuple(out)


def _signature(params: list[list[tuple[np.ndarray, str]]]) -> tuple:
    return tuple(tuple((a.dtype, a.shape, a.strides, f) for a, f in instances) for instances in params)


_ndarray = np.ndarray


def _plain_array(value: Any) -> np.ndarray | None:
    """The array of a numpy array or an ND Tensor (what simple keys take); None for anything else."""
    if type(value) is _ndarray:
        return value
    if type(value) is Tensor and value.format == "ND":
        return value.array
    return None


def _search_env() -> tuple[str | None, ...]:
    """What package resolution depends on (package.search_roots): part of the cache key of ops
    bound to no package, so a changed environment is honored by the next call."""
    env = os.environ
    return (env.get("ASCEND_CUSTOM_OPP_PATH"), env.get("ASCEND_OPP_PATH"), env.get("ASCEND_HOME_PATH"),
            env.get("OPBUILD_SOC"))


def simple_key(op: OpRuntime, dp: int, inputs: Sequence[Any], attrs: Sequence[Any],
               outputs: Sequence[Any]) -> tuple[tuple, list[np.ndarray]] | None:
    """(cache key, arrays) of a call that the per-op fast wrappers can handle, else None.

    The key is `(op, dp, a0, type(a0), ..., x.dtype, x.shape, x.strides, ..., out.dtype, ...)`,
    exactly what `phase1_function`'s code builds, so both share cached plans.
    """
    if not op.simple or len(inputs) != op.n_inputs or len(outputs) != op.n_outputs or len(attrs) != op.n_attrs:
        return None
    key: list[Any] = [op, dp]
    for v in attrs:
        key.append(v)
        key.append(type(v))
    arrays = []
    for v in (*inputs, *outputs):
        a = _plain_array(v)
        if a is None:
            return None
        arrays.append(a)
        key += (a.dtype, a.shape, a.strides)
    if op.package is None:
        key.append(_search_env())
    key_t = tuple(key)
    try:
        hash(key_t)
    except TypeError:  # an unhashable attribute value: the generic path says what is wrong
        return None
    return key_t, arrays


# ---- phase 1 --------------------------------------------------------------------------------------

def _instances(params, contiguous: bool) -> list[list[tuple]]:
    out = []
    for instances in params:
        group = []
        for a, f in instances:
            itemsize = a.itemsize
            strides = _contiguous_strides(a.shape) if contiguous else tuple(s // itemsize for s in a.strides)
            group.append((_dtype_name(a.dtype), f, tuple(a.shape), strides))
        out.append(group)
    return out


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= max(d, 1)
    return tuple(reversed(strides))


def build_plan(op: OpRuntime, inputs, outputs, attrs: tuple, d: int, p: int) -> Plan:
    """Cache miss: check shapes, select the binary by simplified key, run tiling."""
    spec = op.spec
    attr_map = {a.name: v for a, v in zip(spec.attrs, attrs)}
    in_shapes = {param.name: inst[0][0].shape for param, inst in zip(spec.inputs, inputs) if inst}
    for param, instances in zip(spec.inputs, inputs):
        if param.param_type == "dynamic":
            first = instances[0][0]
            for k, (a, _) in enumerate(instances[1:], 1):
                if a.shape != first.shape or a.dtype != first.dtype:
                    raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                                     f"{spec.op}: {param.name}[{k}] is {dtype_name(a.dtype)}{list(a.shape)}, "
                                     f"{param.name}[0] is {dtype_name(first.dtype)}{list(first.shape)}")
    for param, instances in zip(spec.outputs, outputs):
        expected = infer_output_shape(spec, param, in_shapes, attr_map)
        if expected is not None and instances and instances[0][0].shape != expected:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                             f"{spec.op}: output '{param.name}' has shape {list(instances[0][0].shape)}, expected {list(expected)}")
    in_inst = _instances(inputs, contiguous=True)
    out_inst = _instances(outputs, contiguous=True)
    soc = current_soc()
    ctx = KeyContext([[i[:3] for i in g] for g in in_inst], [[i[:3] for i in g] for g in out_inst], attr_map, d, p, soc)
    selection = op.select(ctx, soc)
    groups = inputs + outputs
    contiguous = all(a.flags.c_contiguous for group in groups for a, _ in group)
    nargs = len(inputs) + len(outputs) + 2
    if all(a.size == 0 for group in outputs for a, _ in group):
        # Nothing to compute (an empty input with a non-empty output, e.g. a sum over an empty
        # axis, still runs: the kernel writes the identity).
        return Plan(op, selection, None, 0, 0, 0, None, True, contiguous, nargs)
    kernel = load_kernel_info(selection, spec.op)
    try:
        info = platform(soc)
    except ValueError as exc:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{spec.op}: {exc} (OPBUILD_SOC)") from None
    # A package provider (an .om) may hold the tiling result computed when it was built.
    precomputed = getattr(selection.package, "precomputed_tiling", None)
    result = precomputed(spec, selection.full_key, in_inst, out_inst, attrs) if precomputed is not None else None
    if result is None:
        try:
            result = _c_callbacks.run_tiling(op.tiling_library(selection.package), spec.tiling.symbol, spec, in_inst,
                                             out_inst, attrs, soc=soc, core_num=info.core_num, ub_size=info.ub_size,
                                             deterministic=d, impl_mode=p, capacity=kernel.op_para_size)
        except _c_callbacks.CallbackError as exc:
            raise AclnnError(ACLNN_ERR_INNER, str(exc)) from None
    if result.block_dim == 0:
        raise AclnnError(ACLNN_ERR_INNER, f"{spec.op}: tiling function {spec.tiling.symbol} set block_dim 0")
    if kernel.intercore_sync and result.block_dim > device.MAX_SYNC_BLOCKS:
        raise AclnnError(ACLNN_ERR_INNER, f"{spec.op}: tiling function {spec.tiling.symbol} set block_dim "
                                          f"{result.block_dim}, more than {device.MAX_SYNC_BLOCKS} for an intercore_sync kernel")
    size = max(kernel.op_para_size, 1)
    buffer = (ctypes.c_uint8 * size).from_buffer_copy(result.tiling_data.ljust(size, b"\0"))
    return Plan(op, selection, kernel, result.block_dim, result.tiling_key, result.workspace_size, buffer, False,
                contiguous, nargs)


class Executor:
    """The product of phase 1: a plan bound to this call's tensors. Runs once unless repeatable.

    `args` is the launch-argument array as bytes (native uint64 tensor addresses, workspace
    placeholder 0, tiling address) when every tensor can be passed as it is; None when phase 2 must prepare the
    arguments (non-contiguous or misaligned tensors, tensor lists), from `inputs` and `outputs`.
    """

    __slots__ = ("plan", "op", "refs", "args", "inputs", "outputs", "repeatable", "used")

    def __init__(self, plan: Plan, op: OpRuntime, refs: Any, args: bytes | None, inputs=None, outputs=None) -> None:
        self.plan = plan
        self.op = op
        self.refs = refs  # keeps the call's arrays alive while the executor lives
        self.args = args
        self.inputs = inputs
        self.outputs = outputs
        self.repeatable = False
        self.used = False

    @property
    def simplified_key(self) -> str:
        return self.plan.selection.full_key

    @property
    def binary_name(self) -> str:
        return self.plan.selection.entry.name

    @property
    def workspace_size(self) -> int:
        return self.plan.workspace_size

    def set_repeatable(self, repeatable: bool = True) -> "Executor":
        """Allow phase 2 to run this executor more than once (aclSetAclOpExecutorRepeatable)."""
        self.repeatable = repeatable
        return self

    def __repr__(self) -> str:
        return f"Executor({self.simplified_key} -> {self.binary_name}, workspace={self.plan.workspace_size})"


_PACKERS: dict[int, struct.Struct] = {}


def packer(n: int) -> struct.Struct:
    """The struct of a launch-argument array of n pointers (native uint64)."""
    st = _PACKERS.get(n)
    if st is None:
        st = _PACKERS[n] = struct.Struct(f"={n}Q")
    return st


def _direct_args(plan: Plan, arrays: Sequence[np.ndarray]) -> bytes | None:
    """Launch arguments passing `arrays` as they are (packed pointers, workspace slot 0), or None
    if one is misaligned (or the plan says they are not contiguous)."""
    if not plan.contiguous:
        return None
    addrs = []
    for a in arrays:
        addr = data_pointer(a)
        if addr % a.itemsize:
            return None
        addrs.append(addr)
    return packer(plan.nargs).pack(*addrs, 0, plan.tiling_addr)


def get_workspace_size(op: OpRuntime, inputs: Sequence[Any], attrs: Sequence[Any], outputs: Sequence[Any],
                       deterministic: bool | None = None, impl_mode: str | int | None = None) -> tuple[int, Executor]:
    """Phase 1: (workspace_size, executor) for one call."""
    if deterministic is None and impl_mode is None:
        d, p = settings.resolve(None, None)
    else:
        d, p = settings.resolve(deterministic, impl_mode)
    dp = settings.dp_code(d, p)
    simple = simple_key(op, dp, inputs, attrs, outputs) if inputs is not None and outputs is not None and attrs is not None else None
    plans = _CACHE.plans
    if simple is not None:
        key, arrays = simple
        plan = plans.get(key)
        if plan is not None:
            n_in = op.n_inputs
            for what, a in zip(op.output_what, arrays[n_in:]):
                if not a.flags.writeable:
                    raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what} is read-only")
            plan.hot = True
            args = _direct_args(plan, arrays)
            if args is not None:
                return plan.workspace_size, Executor(plan, op, tuple(arrays), args)
    in_params = normalize_tensors(op, inputs, outputs=False)
    out_params = normalize_tensors(op, outputs, outputs=True)
    attr_values = normalize_attrs(op, attrs)
    if simple is None:
        key = (op, dp, "generic", attr_values, _signature(in_params), _signature(out_params),
               _search_env() if op.package is None else None)
    plan = plans.get(key)
    if plan is None:
        plan = build_plan(op, in_params, out_params, attr_values, d, p)
        _store(key, plan)
    else:
        plan.hot = True
    args = None
    if not op.has_dynamic and all(len(g) == 1 for g in in_params + out_params):
        args = _direct_args(plan, [g[0][0] for g in in_params + out_params])
    refs = tuple(a for g in in_params + out_params for a, _ in g)
    return plan.workspace_size, Executor(plan, op, refs, args, in_params, out_params)


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
        if have is not None and have < required:
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
    rc = launch(None, plan.fn, a, plan.nargs, plan.block_dim, plan.sync, None, 0)
    if rc:
        raise AclnnError(ACLNN_ERR_RUNTIME_ERROR, f"{plan.op.name}: kernel {plan.kernel.name} failed: "
                                                  f"{_native_error()} [kernel {plan.kernel.binary.path}]")


def _launch_stream(plan: Plan, executor: Executor, args: list, stream: Any, refs: list | None) -> None:
    try:
        device.launch(plan.kernel.binary, args, plan.block_dim, stream=stream, intercore_sync=plan.kernel.intercore_sync)
    except device.DeviceError as exc:
        raise AclnnError(ACLNN_ERR_RUNTIME_ERROR, f"{executor.op.spec.op}: kernel {plan.kernel.name} failed: {exc}") from None
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
            lst = (ctypes.c_uint64 * (1 + len(arrays)))(len(arrays), *(data_pointer(a) for a in arrays))
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
    try:
        device.launch(plan.kernel.binary, args, plan.block_dim, stream=stream, intercore_sync=plan.kernel.intercore_sync)
    except device.DeviceError as exc:
        raise AclnnError(ACLNN_ERR_RUNTIME_ERROR, f"{executor.op.spec.op}: kernel {plan.kernel.name} failed: {exc}") from None
    if stream is None or stream is _default_stream:
        for dst, src in copy_back:
            np.copyto(dst, src)
        return
    # Asynchronous stream: keep everything the kernel reads alive until it has run.
    refs = [keep, plan, executor.inputs, executor.outputs, workspace]
    for dst, src in copy_back:
        stream.enqueue_host(lambda dst=dst, src=src: np.copyto(dst, src))
    stream.enqueue_host(lambda: refs.clear())


# ---- per-op wrappers (the generated module binds its aclnn functions to these) ---------------------

_FAST_PHASE1 = '''
def {name}({params}, *, deterministic=None, impl_mode=None):
    if {all_nd}:
        {direct}
    else:
        {unwrap}
    if deterministic is None and impl_mode is None and {all_plain}:
        key = (_op, _dp[0], {key})
        plan = _state.plans.get(key)
        if plan is not None and plan.contiguous and {writeable}:
            {addrs}
            if not (({or_addrs}) & 15):
                plan.hot = True
                return plan.workspace_size, _Executor(plan, _op, ({refs},), _pack({addr_tuple}, 0, plan.tiling_addr))
    return _slow(_op, ({inputs}), ({attrs}), ({outputs}), deterministic, impl_mode)
'''


def _tuple_src(names: Sequence[str]) -> str:
    return ", ".join(names) + ("," if len(names) == 1 else "")


def phase1_function(op: OpRuntime, name: str, inputs: Sequence[str], attrs: Sequence[str],
                    outputs: Sequence[str], doc: str | None = None) -> Callable[..., tuple[int, Executor]]:
    """`aclnn<Op>GetWorkspaceSize(<inputs>, <attrs>, <outputs>, *, deterministic, impl_mode)`.

    For a simple op the function is compiled for the op's parameters: a cache hit with numpy
    arrays or ND Tensors builds the key and the executor inline (no normalization, no
    revalidation: the key pins dtypes, shapes and strides). Everything else goes to
    `get_workspace_size`.
    """
    params = [*inputs, *attrs, *outputs]
    for p in params:
        if not p.isidentifier() or p in ("deterministic", "impl_mode") or p.startswith("_"):
            raise ValueError(f"{op.name}: bad parameter name {p!r} for {name}")
    if not op.simple or not _FAST_POINTERS or op.package is None:
        def generic(*args, deterministic=None, impl_mode=None):
            if len(args) != len(params):
                raise TypeError(f"{name}() takes {len(params)} arguments ({', '.join(params)}), got {len(args)}")
            n_in, n_attr = len(inputs), len(attrs)
            return get_workspace_size(op, args[:n_in], args[n_in:n_in + n_attr], args[n_in + n_attr:],
                                      deterministic, impl_mode)

        src = f"def {name}({', '.join(params)}, *, deterministic=None, impl_mode=None):\n" \
              f"    return _slow(_op, ({_tuple_src(inputs)}), ({_tuple_src(attrs)}), ({_tuple_src(outputs)}), deterministic, impl_mode)\n"
    else:
        tensors = [*inputs, *outputs]
        arr = {t: f"_a_{t}" for t in tensors}
        all_nd = " and ".join(f"_type({t}) is _nd" for t in tensors)
        direct = "; ".join(f"{arr[t]} = {t}" for t in tensors)
        unwrap = "; ".join(f"{arr[t]} = _plain({t})" for t in tensors)
        all_plain = " and ".join(f"{arr[t]} is not None" for t in tensors)
        key_parts = [f"{a}, _type({a})" for a in attrs]
        key_parts += [f"{arr[t]}.dtype, {arr[t]}.shape, {arr[t]}.strides" for t in tensors]
        writeable = " and ".join(f"{arr[t]}.flags.writeable" for t in outputs)
        addrs = "\n            ".join(f"_p_{t} = _ptr(_id({arr[t]}) + _OFF).value or 0" for t in tensors)
        src = _FAST_PHASE1.format(
            name=name, params=", ".join(params), all_nd=all_nd, direct=direct, unwrap=unwrap, all_plain=all_plain, key=", ".join(key_parts),
            writeable=writeable, addrs=addrs, or_addrs=" | ".join(f"_p_{t}" for t in tensors),
            refs=", ".join(arr[t] for t in tensors), addr_tuple=", ".join(f"_p_{t}" for t in tensors),
            inputs=_tuple_src(inputs), attrs=_tuple_src(attrs), outputs=_tuple_src(outputs))
    namespace = {
        "_op": op, "_dp": settings.DP, "_state": _CACHE, "_type": type, "_nd": np.ndarray, "_plain": _plain_array,
        "_ptr": _read_ptr, "_id": id, "_OFF": _DATA_OFFSET, "_Executor": Executor, "_slow": get_workspace_size,
        "_pack": packer(len(inputs) + len(outputs) + 2).pack,
    }
    code = compile(src, f"<opbuild phase 1 of {op.name}>", "exec")
    exec(code, namespace)  # noqa: S102 - source built above from checked identifiers
    fn = namespace[name]
    fn.__doc__ = doc
    fn.__module__ = __name__
    if op.simple and _FAST_POINTERS and op.package is not None and _fastpath_ready():
        # Cache hits of plain numpy arrays in C; everything else (and every miss) runs `fn`.
        fn = _wrap(_fastpath.Phase1(op, len(inputs), len(attrs), len(outputs), fn), fn, name, doc)
    op.phase1 = fn
    return fn


_FAST_PHASE2 = '''
def {name}(workspace, workspaceSize, executor, stream=None):
    if workspace is None and stream is None and _type(executor) is _Executor:
        plan = executor.plan
        args = executor.args
        if (executor.op is _op and args is not None and not executor.used and not plan.workspace_size
                and _type(workspaceSize) is int and workspaceSize >= 0):
            if not plan.empty and plan.block_dim <= 0x7FFFFFFF:
                executor.used = True
                if _launch(None, plan.fn, args, plan.nargs, plan.block_dim, plan.sync, None, 0):
                    _failed(plan)
                return 0
    return _slow(workspace, workspaceSize, executor, stream)
'''


def _launch_failed(plan: Plan) -> None:
    raise AclnnError(ACLNN_ERR_RUNTIME_ERROR, f"{plan.op.name}: kernel {plan.kernel.name} failed: "
                                              f"{_native_error()} [kernel {plan.kernel.binary.path}]")


def phase2_function(op: OpRuntime, name: str, doc: str | None = None) -> Callable[..., int]:
    """`aclnn<Op>(workspace, workspaceSize, executor, stream=None)`: `execute`, checking that the
    executor was made for this op. The common case (no workspace, default stream, an executor
    of a fast phase 1, not run yet) launches inline."""
    if not name.isidentifier():
        raise ValueError(f"{op.name}: bad function name {name!r}")

    def slow(workspace, workspace_size, executor, stream):
        if executor is not None and getattr(executor, "op", op) is not op:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{name}: the executor was made for {executor.op.name}, not {op.name}")
        execute(workspace, workspace_size, executor, stream)
        return 0

    try:
        if _Native.launch is None:
            _Native.bind()
    except (OSError, AttributeError, device.DeviceError):
        slow.__name__ = slow.__qualname__ = name
        slow.__doc__ = doc
        op.phase2 = slow
        return slow
    namespace = {"_op": op, "_type": type, "_Executor": Executor, "_state": _CACHE, "_launch": _Native.launch,
                 "_failed": _launch_failed, "_slow": slow}
    exec(compile(_FAST_PHASE2.format(name=name), f"<opbuild phase 2 of {op.name}>", "exec"), namespace)  # noqa: S102
    fn = namespace[name]
    fn.__doc__ = doc
    fn.__module__ = __name__
    if _fastpath_ready():
        # Executors of the C phase 1 launched in C; everything else runs `fn`.
        # Launches in C only while the Python function's `_launch` is the real one (a replaced
        # one, e.g. instrumented, is called by the Python path).
        fn = _wrap(_fastpath.Phase2(op, fn, fn.__globals__, fn.__globals__["_launch"]), fn, name, doc)
    op.phase2 = fn
    return fn


def _wrap(obj: Any, fn: Callable[..., Any], name: str, doc: str | None) -> Any:
    """A C wrapper object dressed as the Python function it wraps (inspect follows __wrapped__)."""
    obj.__name__ = obj.__qualname__ = name
    obj.__doc__ = doc
    obj.__module__ = __name__
    obj.__wrapped__ = fn
    obj.__globals__ = fn.__globals__
    return obj


_FASTPATH_STATE: list[bool | None] = [None]


def _fastpath_ready() -> bool:
    """Configure the C fast path once (it needs the simulator's sim_launch); False if unusable."""
    ready = _FASTPATH_STATE[0]
    if ready is None:
        ready = False
        if _fastpath is not None:
            try:
                if _Native.launch is None:
                    _Native.bind()
                _fastpath.configure(AclnnError, settings.DP, Executor, Plan, _launch_failed,
                                    ctypes.cast(_Native.launch, ctypes.c_void_p).value)
                ready = True
            except (OSError, AttributeError, device.DeviceError, TypeError, ValueError, RuntimeError):
                ready = False
        _FASTPATH_STATE[0] = ready
    return ready
