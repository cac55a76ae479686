"""Output shapes and dtypes from an op's spec rules (what the one-shot wrappers allocate)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from opbuild.runtime.errors import ACLNN_ERR_PARAM_INVALID, AclnnError
from opbuild.spec.model import OpSpec, Param, parse_bound


def normalize_axes(axes: Sequence[int], rank: int, op: str) -> tuple[int, ...]:
    """Reduction axes made non-negative and sorted; empty means every axis."""
    if len(axes) == 0:
        return tuple(range(rank))
    out = []
    for a in axes:
        if not -rank <= a < max(rank, 1):
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{op}: axis {a} is out of range for rank {rank}")
        out.append(a % rank if rank else 0)
    if len(set(out)) != len(out):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{op}: repeated axis in {list(axes)}")
    return tuple(sorted(out))


_MAX_ELEMENTS = np.iinfo(np.intp).max
"""The largest element count a tensor can have (numpy's limit on the simulated device)."""


def broadcast_shape(shapes: list[tuple[int, ...]]) -> tuple[int, ...] | None:
    """numpy's broadcast of `shapes` (right-aligned, 1 stretches), computed without numpy's
    size limit so that compatible-but-huge shapes are told apart from incompatible ones; None
    when they do not broadcast."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for shape in shapes:
        for i, d in enumerate(shape, ndim - len(shape)):
            if d != 1:
                if out[i] not in (1, d):
                    return None
                out[i] = d
    return tuple(out)


def _fits(shape: tuple[int, ...]) -> bool:
    total = 1
    for d in shape:
        total *= d
    return total <= _MAX_ELEMENTS


def infer_output_shape(spec: OpSpec, output: Param, input_shapes: dict[str, tuple[int, ...]],
                       attrs: dict[str, Any]) -> tuple[int, ...] | None:
    """The shape `output` must have for these inputs (a data-dependent output: its upper bound,
    the buffer the caller allocates); None when the spec gives no rule."""
    rule = output.shape
    if rule is None:
        return None
    if rule.kind == "data_dependent":
        return tuple(dimension_bound(spec, bound, input_shapes) for bound in rule.operands)
    if rule.kind == "same_as":
        return input_shapes[rule.operands[0]]
    if rule.kind == "broadcast":
        shapes = [input_shapes[n] for n in rule.operands]
        listed = ", ".join(f"{n}{list(s)}" for n, s in zip(rule.operands, shapes))
        result = broadcast_shape(shapes)
        if result is None:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{spec.op}: shapes do not broadcast: {listed}")
        if not _fits(result):
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{spec.op}: shapes {listed} broadcast to {list(result)}, "
                                                      f"which is too large (more than {_MAX_ELEMENTS} elements)")
        return result
    if rule.kind == "reduce":
        shape = input_shapes[rule.operands[0]]
        axes = normalize_axes(attrs[rule.axes_attr] if rule.axes_attr else (), len(shape), spec.op)
        keep = bool(attrs[rule.keep_dims_attr]) if rule.keep_dims_attr else False
        if keep:
            return tuple(1 if i in axes else d for i, d in enumerate(shape))
        return tuple(d for i, d in enumerate(shape) if i not in axes)
    return None


def dimension_bound(spec: OpSpec, bound: str, input_shapes: dict[str, tuple[int, ...]]) -> int:
    """One `max` entry of a data-dependent shape: N, rank(x), size(x) or dim(x, i) (spec-format.md)."""
    fn, name, i = parse_bound(bound)
    if name is None:
        return i
    shape = input_shapes[name]
    if fn == "rank":
        return len(shape)
    if fn == "size":
        total = 1
        for d in shape:
            total *= d
        return total
    if not -len(shape) <= i < len(shape):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{spec.op}: output bound {bound}: input '{name}' of shape "
                                                  f"{list(shape)} has no axis {i}")
    return shape[i]


def infer_output_dtype(spec: OpSpec, output: Param, input_dtypes: dict[str, str]) -> str:
    """The output dtype of the declared combination that matches the inputs' dtypes."""
    for column in range(spec.combination_count):
        if all(p.dtype_at(column) == input_dtypes[p.name] for p in spec.inputs if p.name in input_dtypes):
            return output.dtype_at(column)
    given = ", ".join(f"{n}={d}" for n, d in input_dtypes.items())
    declared = "; ".join(
        ", ".join(f"{p.name}={p.dtype_at(c)}" for p in spec.inputs) for c in range(spec.combination_count)
    )
    raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{spec.op}: no declared dtype combination has {given} (declared: {declared})")
