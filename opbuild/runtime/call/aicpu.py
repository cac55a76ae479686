"""AI CPU ops (`engine: aicpu`) through the same two-phase aclnn API as AI Core ops.

Phase 1 (`get_workspace_size`) checks the call against the spec (tensor count, declared dtype
combination, output shapes: a data-dependent output must hold its upper bound), finds the op's
package and its `libcust_aicpu_kernels.so`, and returns an `AicpuExecutor` (workspace 0). Phase
2 (`execute`) builds the `AicpuContext` (opbuild/aicpu.h) and hands `RunCpuKernel(ctx)` to the
simulator's AI CPU (device.aicpu_launch): on the default stream it returns when the compute
function ran; on a created stream it is queued in order with the stream's AI Core launches and
the results are taken on the stream after it ran.

Data-dependent output shapes are returned the way CANN returns them for aclnnNonzero: after the
run, the output's view shape is the real one. A `Tensor` output's `array` becomes the real-shaped
view of its buffer (the result is written contiguously from the start); the executor's
`view_shapes` holds every output's real shape; through the C ABI the out aclTensor's view dims
are updated (read them with aclGetViewShape after the stream is synchronized). The one-shot
wrapper (`call`) returns arrays of the real shape.

No plan cache: phase 1 of an AI CPU op is a few checks, and its compute runs on the host anyway.
AI Core calls never reach this module (the generated wrappers choose by the spec's engine).
"""

from __future__ import annotations

import ctypes
import threading
from math import prod
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from opbuild import safefile
from opbuild.abi import package_layout as layout
from opbuild.abi.ge_types import dtype_name
from opbuild.abi.symbols import AICPU_FUNCTION_NAME, AICPU_REGISTRY_SYMBOL
from opbuild.abi.vocabulary import ATTR_TYPE, DTYPE
from opbuild.runtime import device
from opbuild.runtime.binaries.package import inside_package, search_roots
from opbuild.runtime.binaries.selection import OpRuntime
from opbuild.runtime.call.arguments import normalize_attrs, normalize_tensors
from opbuild.runtime.call.launch import LAUNCH_OBSERVERS, finish_observed, observe_aicpu
from opbuild.runtime.errors import (
    ACLNN_ERR_INNER,
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_PARAM_NULLPTR,
    ACLNN_ERR_RUNTIME_ERROR,
    AclnnError,
    as_aclnn_error,
)
from opbuild.runtime.host.op_proto import UNKNOWN_RANK
from opbuild.runtime.infer import infer_outputs
from opbuild.runtime.tensor import Tensor

MAX_DIMS = 8
ERROR_LEN = 256
MAX_SHAPES_SET = 32
"""AicpuContext.shapes_set has one bit per output for the first 32 (opbuild/aicpu.h)."""
ATTR_TYPES = {t.name: t.aicpu for t in ATTR_TYPE.values() if t.aicpu is not None}
"""AICPU_ATTR_* of opbuild/aicpu.h (vocabulary.AttrType.aicpu; list attributes are not passed to
compute functions)."""


class AicpuTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("dims", ctypes.c_int64 * MAX_DIMS), ("capacity", ctypes.c_uint64)]


class AicpuAttr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("type", ctypes.c_int32), ("reserved", ctypes.c_int32),
                ("i", ctypes.c_int64), ("f", ctypes.c_double), ("s", ctypes.c_char_p)]


class AicpuContext(ctypes.Structure):
    _fields_ = [("op_type", ctypes.c_char_p), ("n_inputs", ctypes.c_uint32), ("n_outputs", ctypes.c_uint32),
                ("n_attrs", ctypes.c_uint32), ("shapes_set", ctypes.c_uint32),
                ("inputs", ctypes.POINTER(AicpuTensor)), ("outputs", ctypes.POINTER(AicpuTensor)),
                ("attrs", ctypes.POINTER(AicpuAttr)), ("error", ctypes.c_char * ERROR_LEN)]


# ---- the kernel library ------------------------------------------------------------------------------

class AicpuLibrary:
    """A loaded libcust_aicpu_kernels.so: its RunCpuKernel and the op types it registers."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            loaded = device.instrumented_binary(path)  # under `opbuild memcheck`: the instrumented build
            device.check_sanitizer(loaded, "AI CPU kernel library")
        except device.DeviceError as exc:
            raise AclnnError(ACLNN_ERR_INNER, str(exc)) from None
        try:
            self.dll = ctypes.CDLL(str(loaded), mode=ctypes.RTLD_LOCAL)
            run = getattr(self.dll, AICPU_FUNCTION_NAME)
            table = getattr(self.dll, AICPU_REGISTRY_SYMBOL)
        except (OSError, AttributeError) as exc:
            raise AclnnError(ACLNN_ERR_INNER, f"cannot load the AI CPU kernels {path}: {exc}") from None
        fn = ctypes.cast(run, ctypes.c_void_p).value
        if fn is None:
            raise AclnnError(ACLNN_ERR_INNER, f"the AI CPU kernels {path}: {AICPU_FUNCTION_NAME} is at address 0")
        self.fn = fn
        table.restype = ctypes.c_void_p
        table.argtypes = [ctypes.POINTER(ctypes.c_uint32)]
        count = ctypes.c_uint32()
        base = table(ctypes.byref(count))
        entries = (ctypes.c_void_p * (2 * count.value)).from_address(base) if count.value else ()
        names = (entries[2 * i] for i in range(count.value))
        self.ops = frozenset(ctypes.string_at(p).decode() for p in names if p)


_LIBRARIES: dict[tuple[Path, int, int], AicpuLibrary] = {}
_LOCK = threading.Lock()


def load_library(path: Path) -> AicpuLibrary:
    """The library at `path`, loaded once per file version (path, size, mtime)."""
    st = path.stat()
    key = (path, st.st_size, st.st_mtime_ns)
    lib = _LIBRARIES.get(key)
    if lib is None:
        with _LOCK:
            lib = _LIBRARIES.get(key)
            if lib is None:
                lib = _LIBRARIES[key] = AicpuLibrary(path)
    return lib


def package_has_op(root: Path, op: str) -> bool:
    """Whether the package at `root` has AI CPU op `op` in its op info (cust_aicpu_kernel.json);
    AclnnError 561000 naming the file when it is there but unusable (opbuild/safefile.py)."""
    try:
        info = safefile.read_json(root / layout.aicpu_op_info())
    except FileNotFoundError:
        return False
    except safefile.UnsafeFileError as exc:
        raise AclnnError(ACLNN_ERR_INNER, f"AI CPU op info {exc}") from None
    return isinstance(info, dict) and op in info and (root / layout.aicpu_kernel_lib()).is_file()


def package_of(op: OpRuntime):
    """The package serving AI CPU op `op`: its explicit package or provider (an .om node), else
    the first in search order whose op info has the op."""
    if op.package is not None:
        return op.package
    roots = search_roots(None)
    package = next((r for r in roots if package_has_op(r, op.name)), None)
    if package is None:
        searched = ", ".join(str(r) for r in roots) or "(nothing: set ASCEND_CUSTOM_OPP_PATH or ASCEND_OPP_PATH)"
        raise AclnnError(ACLNN_ERR_INNER, f"{op.name}: no package with this AI CPU op; searched {searched}")
    return package


def library_of(op: OpRuntime) -> AicpuLibrary:
    """The AI CPU kernel library serving `op`: its package's, or a provider's (an .om:
    `aicpu_library()`)."""
    package = package_of(op)
    if hasattr(package, "aicpu_library"):
        lib = package.aicpu_library()
    else:
        path = Path(package) / layout.aicpu_kernel_lib()
        if not path.is_file():
            raise AclnnError(ACLNN_ERR_INNER, f"{op.name}: AI CPU kernel library missing: {path}")
        lib = load_library(inside_package(package, path, "AI CPU kernel library", op.name))
    if op.name not in lib.ops:
        raise AclnnError(ACLNN_ERR_INNER, f"{op.name}: {lib.path.name} has no kernel for it (it has: "
                                          f"{', '.join(sorted(lib.ops)) or 'none'})")
    return lib


# ---- phase 1 --------------------------------------------------------------------------------------

class AicpuExecutor:
    """The product of phase 1 of an AI CPU op. `view_shapes`: every output's shape after the run
    (a data-dependent output's real shape); None before."""

    __slots__ = ("op", "library", "inputs", "outputs", "given", "attrs", "bounds", "repeatable", "used",
                 "view_shapes", "on_shapes", "__weakref__")

    plan = None  # (no AI Core plan: the C ABI's native cache never learns these)
    args = None
    fast = False
    workspace_size = 0
    simplified_key = ""

    def __init__(self, op: OpRuntime, library: AicpuLibrary, inputs: list, outputs: list, given: list,
                 attrs: tuple, bounds: list[tuple[int, ...] | None]) -> None:
        self.op = op
        self.library = library
        self.inputs = inputs
        self.outputs = outputs
        self.given = given  # the output objects as passed (Tensors get their real view shape)
        self.attrs = attrs
        self.bounds = bounds  # per output: the upper bound of a data-dependent shape, else None
        self.repeatable = False
        self.used = False
        self.view_shapes: tuple[tuple[int, ...], ...] | None = None
        self.on_shapes: Callable[[tuple[tuple[int, ...], ...]], None] | None = None

    def set_repeatable(self, repeatable: bool = True) -> "AicpuExecutor":
        self.repeatable = repeatable
        return self

    def view_shape(self, index: int = 0) -> tuple[int, ...]:
        """The shape of output `index` after the run (what aclGetViewShape gives from C)."""
        if self.view_shapes is None:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{self.op.name}: the executor has not run yet (or its stream "
                                                      f"was not synchronized)")
        return self.view_shapes[index]

    def __repr__(self) -> str:
        return f"AicpuExecutor({self.op.name} -> {self.library.path.name}:{AICPU_FUNCTION_NAME})"


def _column(op: OpRuntime, arrays: list[np.ndarray | None]) -> None:
    """161002 unless the tensors' dtypes are one declared combination."""
    spec = op.spec
    names: list[str | None] = []
    for param, a in zip(spec.tensors, arrays, strict=True):
        if a is None:
            names.append(None)
            continue
        try:
            names.append(dtype_name(a.dtype))
        except ValueError as exc:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{op.name} '{param.name}': {exc}") from None
    for c in range(spec.combination_count):
        if all(n is None or p.dtype_at(c) == n for p, n in zip(spec.tensors, names, strict=True)):
            return
    given = ", ".join(f"{p.name}={n}" for p, n in zip(spec.tensors, names, strict=True) if n)
    declared = "; ".join("(" + ", ".join(f"{p.name}={p.dtype_at(c)}" for p in spec.tensors) + ")"
                         for c in range(spec.combination_count))
    raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{op.name}: dtypes ({given}) are not a declared combination; "
                                              f"declared: {declared}")


def get_workspace_size(op: OpRuntime, inputs: Sequence[Any], attrs: Sequence[Any], outputs: Sequence[Any],
                       deterministic: bool | None = None, impl_mode: str | int | None = None) -> tuple[int, AicpuExecutor]:
    """Phase 1 of an AI CPU op: (0, executor). `deterministic` and `impl_mode` are accepted and
    unused (an AI CPU op has one implementation)."""
    spec = op.spec
    if op.has_dynamic:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{op.name}: AI CPU ops take no tensor lists")
    in_params = normalize_tensors(op, inputs, outputs=False)
    out_params = normalize_tensors(op, outputs, outputs=True)
    attr_values = normalize_attrs(op, attrs)
    in_arrays = [g[0][0] if g else None for g in in_params]
    out_arrays = [g[0][0] for g in out_params]
    all_arrays: list[np.ndarray | None] = [*in_arrays, *out_arrays]
    _column(op, all_arrays)
    groups = [[(dtype_name(a.dtype), fmt, a.shape) for a, fmt in g] for g in in_params]
    # The package's op_proto library (a data-dependent output: its bound). None: no inference
    # available (an .om node built for other inputs): the output buffers are taken as they are.
    inferred = infer_outputs(op, groups, attr_values, dtypes=False)
    bounds: list[tuple[int, ...] | None] = []
    for index, (param, array, what) in enumerate(zip(spec.outputs, out_arrays, op.output_what, strict=True)):
        dependent = param.shape is not None and param.shape.kind == "data_dependent"
        want = inferred[index][0] if inferred is not None else None
        if want is not None and want[:1] == (UNKNOWN_RANK,):
            want = None
        bounds.append((tuple(array.shape) if want is None else want) if dependent else None)
        if want is None:
            continue
        if dependent:
            if array.ndim != len(want) or array.size < prod(want) or not array.flags.c_contiguous:
                raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                                 f"{what}: a data-dependent output needs a contiguous buffer of rank {len(want)} and at "
                                 f"least {prod(want)} elements (its bound {list(want)}); got shape {list(array.shape)}")
        elif tuple(array.shape) != tuple(want):
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what} has shape {list(array.shape)}, expected {list(want)}")
    for a, what in zip(all_arrays, op.input_what + op.output_what, strict=True):
        if a is not None and a.ndim > MAX_DIMS:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what}: {a.ndim} dims, AI CPU ops take at most {MAX_DIMS}")
    given = [v for v in outputs]
    return 0, AicpuExecutor(op, library_of(op), in_arrays, out_arrays, given, attr_values, bounds)


# ---- phase 2 --------------------------------------------------------------------------------------

def _tensor(t: AicpuTensor, array: np.ndarray, shape: tuple[int, ...]) -> None:
    t.data = array.ctypes.data if array.size else None
    t.dtype = DTYPE[dtype_name(array.dtype)].ge
    t.ndim = len(shape)
    for d, n in enumerate(shape):
        t.dims[d] = n
    t.capacity = array.nbytes


def _context(ex: AicpuExecutor, inputs: list[np.ndarray | None], outputs: list[np.ndarray]) -> tuple[AicpuContext, list]:
    spec = ex.op.spec
    keep: list[Any] = []
    ins = (AicpuTensor * max(len(inputs), 1))()
    for t, a in zip(ins, inputs, strict=False):  # (the C arrays have at least one entry)
        if a is not None:
            _tensor(t, a, a.shape)
    outs = (AicpuTensor * max(len(outputs), 1))()
    for t, a, bound in zip(outs, outputs, ex.bounds, strict=False):
        _tensor(t, a, bound if bound is not None else a.shape)
    attrs = (AicpuAttr * max(len(spec.attrs), 1))()
    for item, attr, value in zip(attrs, spec.attrs, ex.attrs, strict=False):
        name = attr.name.encode()
        keep.append(name)
        item.name = name
        item.type = ATTR_TYPES.get(attr.type, -1)
        if attr.type in ("int", "bool"):
            item.i = int(value)
        elif attr.type == "float":
            item.f = float(value)
        elif attr.type == "str":
            text = str(value).encode()
            keep.append(text)
            item.s = text
    op_type = spec.op.encode()
    ctx = AicpuContext(op_type, len(inputs), len(outputs), len(spec.attrs), 0, ins, outs, attrs)
    keep += [ins, outs, attrs, op_type]
    return ctx, keep


def _real_shapes(ex: AicpuExecutor, ctx: AicpuContext, outputs: list[np.ndarray]) -> tuple[tuple[int, ...], ...]:
    """Every output's shape after the run, a data-dependent one checked against its bound."""
    shapes = []
    for i, (array, bound) in enumerate(zip(outputs, ex.bounds, strict=True)):
        if bound is None:
            shapes.append(tuple(array.shape))
            continue
        t = ctx.outputs[i]
        if i < MAX_SHAPES_SET and not ctx.shapes_set >> i & 1:
            param, compute = ex.op.spec.outputs[i], ex.op.spec.compute
            function = f"{compute.symbol} ({compute.source})" if compute is not None else "(unknown)"
            raise AclnnError(ACLNN_ERR_RUNTIME_ERROR,
                             f"{ex.op.name}: the compute function {function} returned without setting the shape "
                             f"of data-dependent output {i} '{param.name}' (call aicpu_set_output_shape(ctx, {i}, ndim, dims)); its "
                             f"buffer holds no result of a known shape")
        shape = tuple(t.dims[d] for d in range(t.ndim))
        if t.ndim != len(bound) or any(not 0 <= n <= b for n, b in zip(shape, bound, strict=True)):
            raise AclnnError(ACLNN_ERR_RUNTIME_ERROR, f"{ex.op.name}: the compute function reported output {i} shape "
                                                      f"{list(shape)}, outside its bound {list(bound)}")
        shapes.append(shape)
    return tuple(shapes)


def _finish(ex: AicpuExecutor, ctx: AicpuContext, outputs: list[np.ndarray], copy_back: list) -> None:
    """After the compute ran: copy non-contiguous outputs back, publish the real shapes."""
    for dst, src in copy_back:
        np.copyto(dst, src)
    shapes = _real_shapes(ex, ctx, outputs)
    # ex.given is empty for the C ABI's executors (capi.py publishes shapes through on_shapes)
    for value, array, bound, shape in zip(ex.given, outputs, ex.bounds, shapes, strict=False):
        if bound is not None and isinstance(value, Tensor):
            value.array = array.reshape(-1)[:prod(shape)].reshape(shape)
    ex.view_shapes = shapes
    if ex.on_shapes is not None:
        ex.on_shapes(shapes)


def execute(workspace: Any, workspace_size: Any, ex: AicpuExecutor, stream: Any = None) -> None:
    """Phase 2 of an AI CPU op: run its compute function on the AI CPU (see the module docstring)."""
    if type(ex) is not AicpuExecutor:
        if ex is None:
            raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, "executor is a null pointer")
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"executor must be what phase 1 returned, not {type(ex).__name__}")
    if ex.used and not ex.repeatable:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, "this executor already ran; make it repeatable to run it again")
    if not isinstance(workspace_size, (int, np.integer)) or isinstance(workspace_size, bool) or workspace_size < 0:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"workspaceSize must be a non-negative int, not {workspace_size!r}")
    inputs = [None if a is None else np.ascontiguousarray(a) for a in ex.inputs]
    outputs, copy_back = [], []
    for a in ex.outputs:
        if a.flags.c_contiguous and a.flags.aligned:
            outputs.append(a)
        else:
            tmp = np.empty(a.shape, a.dtype)
            copy_back.append((a, tmp))
            outputs.append(tmp)
    ctx, keep = _context(ex, inputs, outputs)
    ex.used = True
    ex.view_shapes = None
    errmsg = ctypes.addressof(ctx) + AicpuContext.error.offset
    synchronous = stream is None or stream is device.default_stream
    afters = observe_aicpu(ex, None if synchronous else stream) if LAUNCH_OBSERVERS else []
    try:
        device.aicpu_launch(ex.library.fn, ctypes.addressof(ctx), errmsg, None if synchronous else stream)
    except device.DeviceError as exc:
        finish_observed(afters, False)
        raise AclnnError(ACLNN_ERR_RUNTIME_ERROR, f"{ex.op.name}: AI CPU kernel failed: {exc} "
                                                  f"[{ex.library.path.name}:{AICPU_FUNCTION_NAME}]") from None
    if synchronous:
        _finish(ex, ctx, outputs, copy_back)
        finish_observed(afters, True)
        return
    refs = [ctx, keep, inputs, outputs, ex.library, workspace]

    def finish() -> None:
        _finish(ex, ctx, outputs, copy_back)
        refs.clear()

    stream.enqueue_host(finish)
    finish_observed(afters, True, stream)


# ---- the aclnn functions and the one-shot call --------------------------------------------------------

def phase1_function(op: OpRuntime, name: str, n_in: int, n_attr: int, n_all: int) -> Callable[..., tuple[int, AicpuExecutor]]:
    """`aclnn<Op>GetWorkspaceSize(<inputs>, <attrs>, <outputs>, *, deterministic, impl_mode)`."""
    def phase1(*args: Any, deterministic: Any = None, impl_mode: Any = None) -> tuple[int, AicpuExecutor]:
        if len(args) != n_all:
            raise TypeError(f"{name}() takes {n_all} arguments, got {len(args)}")
        return get_workspace_size(op, args[:n_in], args[n_in:n_in + n_attr], args[n_in + n_attr:])
    return phase1


def call(op: OpRuntime, inputs: Sequence[Any], attrs: Sequence[Any], deterministic: bool | None = None,
         impl_mode: str | int | None = None, stream: Any = None):
    """One shot: allocate the outputs (a data-dependent one at its bound), run both phases, and
    return the outputs at their real shapes (numpy arrays; Tensors when an input is a Tensor).
    With a created stream, it is synchronized when an output's shape depends on the data."""
    from opbuild.runtime.api import _output_specs  # (api imports this module)

    try:
        outputs = [np.empty(shape, dtype) for shape, dtype in _output_specs(op, inputs, attrs)]
        _, ex = get_workspace_size(op, inputs, attrs, outputs)
        execute(None, 0, ex, stream)
        dependent = any(b is not None for b in ex.bounds)
        if dependent and ex.view_shapes is None:
            stream.synchronize()
        results: list[Any] = []
        for array, bound, shape in zip(outputs, ex.bounds, ex.view_shapes or [None] * len(outputs), strict=True):
            results.append(array if bound is None or shape is None else array.reshape(-1)[:prod(shape)].reshape(shape).copy())
        if any(isinstance(v, Tensor) for v in inputs):
            results = [Tensor(r) for r in results]
        return results[0] if len(results) == 1 else tuple(results)
    except AclnnError:
        raise
    except device.DeviceError as exc:
        raise AclnnError(ACLNN_ERR_RUNTIME_ERROR, f"{op.name}: {exc}") from None
    except Exception as exc:  # the aclnn API raises AclnnError only
        raise as_aclnn_error(exc, op.name) from exc
