"""Two-phase execution with the op-parameter cache (aclnnXxxGetWorkspaceSize / aclnnXxx).

Phase 1 turns a call into a `Plan` — selected binary, tiling result, workspace size — and wraps
it with the call's tensors in an `Executor`. Plans are cached per thread (LRU, as CANN's
thread-local op cache): a call with the same op, dtypes, formats, shapes, strides, attrs, d and p
reuses the plan without running GenSimplifiedKey or tiling. Phase 2 launches the plan's kernel
on a stream and never recomputes the key.
"""

from __future__ import annotations

import ctypes
import json
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

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
from opbuild.runtime.tensor import as_array

PARAM_CACHE_CAPACITY = int(os.environ.get("OPBUILD_PARAM_CACHE_SIZE", "1024"))


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
            try:
                desc = json.loads(selection.entry.json_path.read_text())
                op_para_size = int(desc["opParaSize"])
                sync = bool(desc.get("intercoreSync", 0))
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise AclnnError(ACLNN_ERR_INNER, f"{op}: kernel descriptor {selection.entry.json_path} unusable: {exc}") from None
            try:
                binary = device.load_kernel(path)
            except device.DeviceError as exc:
                raise AclnnError(ACLNN_ERR_INNER, f"{op}: cannot load kernel {path}: {exc}") from None
            info = KernelInfo(binary, op_para_size, sync, selection.entry.name)
            _KERNELS[path] = info
    return info


# ---- plans and the parameter cache ----------------------------------------------------------------

@dataclass(frozen=True)
class Plan:
    """Everything phase 2 needs, computed once per call signature."""

    selection: Selection | None
    kernel: KernelInfo | None
    block_dim: int
    tiling_key: int
    workspace_size: int
    tiling_buffer: Any
    empty: bool


class _ThreadCache(threading.local):
    def __init__(self) -> None:
        self.plans: OrderedDict[tuple, Plan] = OrderedDict()


_CACHE = _ThreadCache()


def reset_cache_thread_local() -> None:
    """ResetCacheThreadLocal(): forget the calling thread's cached plans."""
    _CACHE.plans.clear()


def cache_size() -> int:
    return len(_CACHE.plans)


# ---- argument handling ----------------------------------------------------------------------------

def _tensor_arg(value: Any, what: str, optional: bool) -> tuple[np.ndarray | None, str]:
    if value is None and optional:
        return None, "ND"
    if value is None:
        raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{what} is a null pointer")
    return as_array(value, what)


def normalize_tensors(op: OpRuntime, values: Sequence[Any], outputs: bool) -> list[list[tuple[np.ndarray, str]]]:
    """Per IR param, its instances as (array, format): [] absent optional, [one], or a list."""
    params = op.spec.outputs if outputs else op.spec.inputs
    if len(values) != len(params):
        kind = "outputs" if outputs else "inputs"
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{op.spec.op} takes {len(params)} {kind}, got {len(values)}")
    result = []
    for param, value in zip(params, values):
        what = f"{op.spec.op} {'output' if outputs else 'input'} '{param.name}'"
        if param.param_type == "dynamic":
            if value is None:
                raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{what} (tensor list) is a null pointer")
            if not isinstance(value, (list, tuple)) or not value:
                raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what} must be a non-empty list of tensors")
            result.append([_tensor_arg(v, f"{what}[{k}]", False) for k, v in enumerate(value)])
        else:
            array, fmt = _tensor_arg(value, what, param.param_type == "optional")
            result.append([] if array is None else [(array, fmt)])
    return result


_ATTR_CHECK = {
    "int": lambda v: isinstance(v, (int, np.integer)) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, (int, float, np.floating, np.integer)) and not isinstance(v, bool),
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
    if len(values) != len(attrs):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{op.spec.op} takes {len(attrs)} attributes, got {len(values)}")
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


# ---- phase 1 --------------------------------------------------------------------------------------

def _instances(params, contiguous: bool) -> list[list[tuple]]:
    out = []
    for instances in params:
        group = []
        for a, f in instances:
            itemsize = a.itemsize
            strides = _contiguous_strides(a.shape) if contiguous else tuple(s // itemsize for s in a.strides)
            group.append((dtype_name(a.dtype), f, tuple(a.shape), strides))
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
    if any(a.size == 0 for group in inputs + outputs for a, _ in group):
        return Plan(selection, None, 0, 0, 0, None, True)
    kernel = load_kernel_info(selection, spec.op)
    from opbuild.abi.c_callbacks import CallbackError, run_tiling

    info = platform(soc)
    try:
        result = run_tiling(op.tiling_library(selection.package), spec.tiling.symbol, spec, in_inst, out_inst, attrs,
                            soc=soc, core_num=info.core_num, ub_size=info.ub_size, deterministic=d, impl_mode=p,
                            capacity=kernel.op_para_size)
    except CallbackError as exc:
        raise AclnnError(ACLNN_ERR_INNER, str(exc)) from None
    if result.block_dim == 0:
        raise AclnnError(ACLNN_ERR_INNER, f"{spec.op}: tiling function {spec.tiling.symbol} set block_dim 0")
    buffer = (ctypes.c_uint8 * max(kernel.op_para_size, 1)).from_buffer_copy(result.tiling_data.ljust(max(kernel.op_para_size, 1), b"\0"))
    return Plan(selection, kernel, result.block_dim, result.tiling_key, result.workspace_size, buffer, False)


class Executor:
    """The product of phase 1: a plan bound to this call's tensors. Runs once unless repeatable."""

    __slots__ = ("plan", "op", "inputs", "outputs", "repeatable", "used")

    def __init__(self, plan: Plan, op: OpRuntime, inputs, outputs) -> None:
        self.plan = plan
        self.op = op
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


def get_workspace_size(op: OpRuntime, inputs: Sequence[Any], attrs: Sequence[Any], outputs: Sequence[Any],
                       deterministic: bool | None = None, impl_mode: str | int | None = None) -> tuple[int, Executor]:
    """Phase 1: (workspace_size, executor) for one call."""
    d, p = settings.resolve(deterministic, impl_mode)
    in_params = normalize_tensors(op, inputs, outputs=False)
    out_params = normalize_tensors(op, outputs, outputs=True)
    attr_values = normalize_attrs(op, attrs)
    key = (op, d, p, attr_values, _signature(in_params), _signature(out_params))
    plans = _CACHE.plans
    plan = plans.get(key)
    if plan is None:
        plan = build_plan(op, in_params, out_params, attr_values, d, p)
        plans[key] = plan
        if len(plans) > PARAM_CACHE_CAPACITY:
            plans.popitem(last=False)
    else:
        plans.move_to_end(key)
    return plan.workspace_size, Executor(plan, op, in_params, out_params)


# ---- phase 2 --------------------------------------------------------------------------------------

def _address(buffer: Any) -> int:
    if buffer is None:
        return 0
    if isinstance(buffer, int):
        return buffer
    if isinstance(buffer, np.ndarray):
        return buffer.ctypes.data
    return int(buffer)


def execute(workspace: Any, workspace_size: int, executor: Executor, stream: Any = None) -> None:
    """Phase 2: launch the executor's kernel on `stream` (None = the default, synchronous stream)."""
    if executor is None:
        raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, "executor is a null pointer")
    if executor.used and not executor.repeatable:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, "this executor already ran; make it repeatable to run it again")
    plan = executor.plan
    if plan.empty:
        executor.used = True
        return
    if workspace_size < plan.workspace_size:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"workspace of {workspace_size} bytes is smaller than the {plan.workspace_size} required")
    ws_addr = _address(workspace)
    if plan.workspace_size and not ws_addr:
        raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"workspace is a null pointer ({plan.workspace_size} bytes required)")
    keep: list[Any] = []
    args: list[int] = []
    for param, instances in zip(executor.op.spec.inputs, executor.inputs):
        if param.param_type == "dynamic":
            arrays = [np.ascontiguousarray(a) for a, _ in instances]
            keep.extend(arrays)
            lst = (ctypes.c_uint64 * (1 + len(arrays)))(len(arrays), *(a.ctypes.data for a in arrays))
            keep.append(lst)
            args.append(ctypes.addressof(lst))
        elif not instances:
            args.append(0)
        else:
            a = instances[0][0]
            if not a.flags.c_contiguous:
                a = np.ascontiguousarray(a)
                keep.append(a)
            args.append(a.ctypes.data)
    copy_back = []
    for instances in executor.outputs:
        a = instances[0][0]
        if not a.flags.c_contiguous:
            tmp = np.empty(a.shape, a.dtype)
            copy_back.append((a, tmp))
            a = tmp
        args.append(a.ctypes.data)
    args.append(ws_addr)
    args.append(ctypes.addressof(plan.tiling_buffer))
    executor.used = True
    try:
        device.launch(plan.kernel.binary, args, plan.block_dim, stream=stream, intercore_sync=plan.kernel.intercore_sync)
    except device.DeviceError as exc:
        raise AclnnError(ACLNN_ERR_RUNTIME_ERROR, f"{executor.op.spec.op}: kernel {plan.kernel.name} failed: {exc}") from None
    if stream is None:
        for dst, src in copy_back:
            np.copyto(dst, src)
        return
    # Asynchronous stream: keep everything the kernel reads alive until it has run.
    refs = [keep, plan, executor.inputs, executor.outputs]
    for dst, src in copy_back:
        stream.enqueue_host(lambda dst=dst, src=src: np.copyto(dst, src))
    stream.enqueue_host(lambda: refs.clear())
