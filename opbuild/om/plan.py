"""The run plan of a static .om: each node's executor made once, its tensors in memory allocated once.

What: for a model whose shapes are all fixed (static), the first `OmRunner.run` makes, per node,
its phase 1 once on arrays of a memory plan and keeps the executor (repeatable,
aclSetAclOpExecutorRepeatable); every run then launches those executors (phase 2, a C call) and
re-points only the tensors that change between runs (`Executor.set_arg`, aclSetInputTensorAddr):
the model's inputs (the caller's arrays), its outputs (new arrays each run, so what `run` returned
is never overwritten by a later run; one of at most COPY_OUT_BYTES is written in a planned buffer
and copied out instead) and the outputs of nodes that cannot be planned (an AI CPU node, a
dynamic input, an executor the C path does not launch), which run the one-shot call as before.

Why: the one-shot call per node (output specs, allocation, the phase-1 hit) cost ~9 us of
interpreter work per node, and fresh multi-MB outputs page-faulted on every run. The memory plan
is CANN's graph memory planning in small: an intermediate tensor takes a buffer freed by a tensor
whose last reader ran before it was written (first fit), so a chain needs two buffers, not one
per node.

A plan belongs to one runner and is used by one run at a time (`OmRunner.run` holds its lock;
a concurrent run takes the one-shot path).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from opbuild.abi.ge_types import numpy_dtype
from opbuild.runtime import settings
from opbuild.runtime.errors import AclnnError

ALIGN = 64
"""Byte alignment of every planned buffer."""

ARG_ALIGN = 16
"""The alignment the C fast path wants of every array it launches with (phase 1's hit takes
only such arrays): weights and model inputs are copied when theirs is less."""


def aligned_empty(shape: Sequence[int], dtype: Any) -> np.ndarray:
    """An uninitialized C-contiguous array whose data starts on an ALIGN boundary."""
    dt = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    raw = np.empty(nbytes + ALIGN, np.uint8)
    off = -raw.ctypes.data % ALIGN
    return raw[off:off + nbytes].view(dt).reshape(tuple(shape))


def aligned(a: np.ndarray) -> np.ndarray:
    """`a` itself when C-contiguous and ARG_ALIGN-aligned, else an aligned copy (read-only if `a` was)."""
    if a.flags.c_contiguous and _address(a) % ARG_ALIGN == 0:
        return a
    copy = aligned_empty(a.shape, a.dtype)
    np.copyto(copy, a)
    copy.flags.writeable = a.flags.writeable
    return copy


def _address(a: np.ndarray) -> int:
    return a.ctypes.data


COPY_OUT_BYTES = 1 << 16
"""A model output up to this size is written into a planned buffer and copied out at the end of the
run (a copy of a small array is cheaper than re-pointing an executor at a new one: its address
costs an `ndarray.ctypes`); a larger one is a new array each run that the kernel writes directly."""

LAUNCH = "launch"
"""The kind of a planned node's action: ("launch", phase2, executor, node name)."""
CALL = "call"
"""The kind of a node run by the one-shot call: ("call", step)."""


class _Pool:
    """First-fit reuse of byte buffers between tensors whose lifetimes do not overlap."""

    def __init__(self) -> None:
        self.free: list[np.ndarray] = []
        self.held: dict[str, np.ndarray] = {}  # tensor name -> the whole buffer it sits in
        self.total = 0

    def take(self, name: str, shape: Sequence[int], dtype: Any) -> np.ndarray:
        """The array of tensor `name`: a free buffer large enough (the smallest), else a new one."""
        dt = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
        fits = [b for b in self.free if b.nbytes >= nbytes]
        if fits:
            buf = min(fits, key=lambda b: b.nbytes)
            self.free = [b for b in self.free if b is not buf]
        else:
            buf = aligned_empty((max(nbytes, 1),), np.uint8)
            self.total += buf.nbytes
        self.held[name] = buf
        return buf[:nbytes].view(dt).reshape(tuple(shape))

    def give(self, name: str) -> None:
        """Tensor `name` is read no more: its buffer is free for tensors written later."""
        buf = self.held.pop(name, None)
        if buf is not None:
            self.free.append(buf)


@dataclass
class StaticPlan:
    """What a run of a planned static model does.

    actions: per node, (LAUNCH, phase2, executor, node name) or (CALL, step);
    fixed: the tensors whose arrays never change (weights, planned intermediates);
    slots: per tensor re-pointed at each run, the (executor, launch-argument slot) pairs naming it;
    fresh: the model outputs made by planned nodes: a new array each run (name, shape, dtype);
    copied: the model outputs made by planned nodes in a planned buffer, copied out at each run;
    outputs: the model's output names;
    pool_bytes: the memory the plan holds for intermediates.
    """

    actions: list[tuple[Any, ...]]
    fixed: dict[str, np.ndarray]
    slots: dict[str, list[tuple[Any, int]]]
    fresh: list[tuple[str, tuple[int, ...], np.dtype]]
    copied: list[str]
    outputs: list[str]
    pool_bytes: int
    planned: int
    calls: int
    bound: dict[str, np.ndarray] = field(default_factory=dict)  # the array each model input is bound to

    def bind_input(self, name: str, array: np.ndarray) -> np.ndarray:
        """Point the executors at model input `name`'s array (aligned first if need be): nothing to
        do when it is the array of the last run (an ndarray's data never moves while we hold it)."""
        if self.bound.get(name) is array:
            return array
        a = aligned(array)
        self.rebind(name, a)
        self.bound[name] = array if a is array else a
        return a

    def rebind(self, name: str, array: np.ndarray) -> None:
        """Point every executor argument of tensor `name` at `array`'s data."""
        pairs = self.slots.get(name)
        if pairs:
            address = _address(array)
            for executor, slot in pairs:
                executor.set_arg(slot, address)


def _names(t: Any) -> list[str]:
    return [] if t is None else [t] if type(t) is str else list(t)


def _ensure_phases(op: Any) -> None:
    """The op's phase-1/phase-2 functions (the C fast path's when built), made once per OpRuntime."""
    if op.phase1 is not None and op.phase2 is not None:
        return
    from opbuild.runtime.call.fast_wrappers import phase1_function, phase2_function

    spec = op.spec
    phase1_function(op, f"aclnn{spec.op}GetWorkspaceSize", [i.name for i in spec.inputs],
                    [a.name for a in spec.attrs], [o.name for o in spec.outputs])
    phase2_function(op, f"aclnn{spec.op}")


def _dp_kwargs(node: dict[str, Any], d: bool, p: Any) -> dict[str, Any]:
    """The model's deterministic / impl_mode as phase 1's keywords, or none when the process-wide
    settings give the same (d, p) and the node's binary was selected at build time: then the full
    key, binary and tiling are the model's either way, and phase 1 keeps to its C path, whose
    executors phase 2 launches in C (a call with explicit keywords takes the Python path)."""
    if node.get("selected") is not None and settings.resolve(None, None)[:2] == (int(d), int(p)):
        return {}
    return {"deterministic": d, "impl_mode": p}


def _executor(step: Any, node: dict[str, Any], args: list[np.ndarray], outs: list[np.ndarray], d: bool, p: Any
              ) -> Any:
    """A repeatable executor of `step` on these arrays with its launch arguments packed (so that
    they can be re-pointed), else None."""
    op = step.op
    if not op.simple or op.spec.is_aicpu:
        return None
    try:
        _ensure_phases(op)
        size, executor = op.phase1(*args, *step.attrs, *outs, **_dp_kwargs(node, d, p))
    except AclnnError:
        return None  # the one-shot call (at run time) raises it again, with its message
    if size or executor.args is None:
        return None
    executor.set_repeatable()
    return executor


def build(steps: Sequence[Any], md: dict[str, Any], weights: dict[str, np.ndarray], d: bool, p: Any
          ) -> StaticPlan | None:
    """The plan of a static model (None when a tensor's shape is not fixed in the model)."""
    descs: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
    for t in md["inputs"]:
        shape = tuple(int(x) for x in t["shape"])
        if any(x < 0 for x in shape):
            return None
        descs[t["name"]] = (shape, np.dtype(numpy_dtype(t["dtype"])))
    for node in md["nodes"]:
        shapes = node.get("output_shapes")
        if shapes is None:
            return None
        for name, shape, dt in zip(node["outputs"], shapes, node["output_dtypes"], strict=True):
            if shape is None or any(int(x) < 0 for x in shape):
                return None
            descs[name] = (tuple(int(x) for x in shape), np.dtype(numpy_dtype(dt)))
    last: dict[str, int] = {}
    for i, step in enumerate(steps):
        for t in step.inputs:
            for name in _names(t):
                last[name] = i
    model_inputs = [t["name"] for t in md["inputs"]]
    model_outputs = set(md["outputs"])
    small = {n for n in model_outputs - set(model_inputs)
             if n in descs and np.prod(descs[n][0], dtype=np.int64) * descs[n][1].itemsize <= COPY_OUT_BYTES}
    rebound = set(model_inputs) | (model_outputs - small)  # re-pointed at each run
    pool = _Pool()
    live: dict[str, np.ndarray] = {name: pool.take(name, *descs[name]) for name in model_inputs}
    actions: list[tuple[Any, ...]] = []
    slots: dict[str, list[tuple[Any, int]]] = {}
    fixed: dict[str, np.ndarray] = dict(weights)
    fresh: list[tuple[str, tuple[int, ...], np.dtype]] = []
    copied: list[str] = []
    planned = 0
    for i, (step, node) in enumerate(zip(steps, md["nodes"], strict=True)):
        plain = all(type(t) is str for t in step.inputs)
        ins = [weights[n] if n in weights else live[n] for n in step.inputs] if plain else []
        outs = [pool.take(n, *descs[n]) for n in step.outputs]
        executor = _executor(step, node, ins, outs, d, p) if plain and len(set(map(_address, ins + outs))) == \
            len({*step.inputs, *step.outputs}) else None
        if executor is not None:
            words = np.frombuffer(executor.args, np.uint64)[:-2]  # the last two: workspace, tiling
            found: dict[str, list[int]] = {}
            for name, arr in zip([*step.inputs, *step.outputs], ins + outs, strict=True):
                found[name] = [int(s) for s in np.flatnonzero(words == _address(arr))]
            if any(not s for s in found.values()):
                executor = None  # a tensor not among the launch arguments: not re-pointable
            else:
                for name, s in found.items():
                    if name in rebound:
                        slots.setdefault(name, []).extend((executor, k) for k in sorted(set(s)))
        if executor is not None:
            actions.append((LAUNCH, step.op.phase2, executor, step.name))
            planned += 1
            for name, arr in zip(step.outputs, outs, strict=True):
                if name in small:
                    copied.append(name)  # its buffer is held to the end of the run
                    fixed[name] = arr
                elif name in model_outputs:
                    fresh.append((name, *descs[name]))
                else:
                    fixed[name] = arr
        else:
            actions.append((CALL, step))
            rebound.update(step.outputs)
        live.update(zip(step.outputs, outs, strict=True))
        for name in [*{n for t in step.inputs for n in _names(t)}, *step.outputs]:
            if last.get(name, -1) <= i and name in live and name not in copied:
                del live[name]
                pool.give(name)
    return StaticPlan(actions, fixed, slots, fresh, copied, list(md["outputs"]), pool.total, planned,
                      len(actions) - planned)
