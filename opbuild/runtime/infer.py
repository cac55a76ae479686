"""Output shapes and dtypes of a call, from the op's package op_proto library.

The spec's shape and dtype rules are compiled into each package's `libcust_opsproto_rt2.0.so`
(opbuild/codegen/op_proto.py); this module only marshals a call's inputs to it
(opbuild/runtime/host/op_proto.py) and turns its refusals into aclnn errors. A package provider (an
`.om` node) may answer instead: `inferred_outputs(spec, inputs)` (what was inferred when it was
built, for the same inputs) or its own `op_proto_library()`.
"""

from __future__ import annotations

from typing import Any, Sequence

from opbuild.abi.platform import platform
from opbuild.runtime.binaries.selection import OpRuntime, current_soc
from opbuild.runtime.errors import ACLNN_ERR_INNER, ACLNN_ERR_PARAM_INVALID, AclnnError
from opbuild.runtime.host.op_proto import InferError
from opbuild.runtime.host.op_proto import infer_outputs as _infer

_CACHE: dict[tuple, list] = {}
CACHE_CAPACITY = 4096
"""Inferred outputs by (op, inputs' dtypes/formats/shapes, attributes, halves asked for): a
call's first miss asks twice (the one-shot allocation, then the plan's shape check), and a
model run asks once per node per new input shape. Cleared when full."""


def infer_outputs(op: OpRuntime, inputs: Sequence[Sequence[tuple]], attr_values: Sequence[Any], *,
                  shapes: bool = True, dtypes: bool = True) -> list[tuple[tuple[int, ...] | None, str | None]] | None:
    """(shape or None, dtype name) per output of `op` for `inputs` (per IR input, a list of
    (dtype name, format name, shape) instances) and normalized attribute values. None when the
    package has no inference for this call (a static `.om` node called with other inputs).
    `shapes`/`dtypes` False: that half is not inferred (None)."""
    soc = current_soc()
    key = _cache_key(op, soc, inputs, attr_values)
    if key is not None:
        for wanted in ((True, True), (shapes, dtypes)):  # a full answer serves a half question
            found = _CACHE.get((key, wanted))
            if found is not None:
                return [(s if shapes else None, d if dtypes else None) for s, d in found]
    result = _infer_uncached(op, soc, inputs, attr_values, shapes, dtypes)
    if key is not None and result is not None:
        if len(_CACHE) >= CACHE_CAPACITY:
            _CACHE.clear()
        _CACHE[(key, (shapes, dtypes))] = result
    return result


def _cache_key(op: OpRuntime, soc: str, inputs, attr_values) -> tuple | None:
    """(op, SoC, per input its (dtype, format, shape) instances, attributes), None if unhashable.
    Instances may carry more (strides) after the shape; callers give shapes as tuples or lists."""
    try:
        key = (op, soc, tuple([tuple([i[:3] for i in g]) for g in inputs]),
               tuple([tuple(v) if type(v) is list else v for v in attr_values]))
        hash(key)
        return key
    except TypeError:
        pass
    try:
        key = (op, soc, tuple(tuple((i[0], i[1], tuple(i[2])) for i in g) for g in inputs),
               tuple(tuple(v) if isinstance(v, list) else v for v in attr_values))
        hash(key)
        return key
    except TypeError:
        return None


def _infer_uncached(op: OpRuntime, soc: str, inputs, attr_values, shapes: bool, dtypes: bool):
    instances = [[(i[0], i[1], tuple(i[2]), None) for i in group] for group in inputs]  # contiguous
    return infer_instances(op, soc, instances, attr_values, shapes=shapes, dtypes=dtypes)


def infer_instances(op: OpRuntime, soc: str, instances: Sequence[Sequence[tuple]], attr_values: Sequence[Any], *,
                    shapes: bool = True, dtypes: bool = True) -> list[tuple[tuple[int, ...] | None, str | None]] | None:
    """infer_outputs without the cache, for inputs given as tiling-context instances ((dtype
    name, format name, shape tuple, strides or None) each): a cache miss of phase 1 asks once per
    call signature, which the plan cache then remembers."""
    package = op.proto_package(soc)
    fixed = getattr(package, "inferred_outputs", None)
    if fixed is not None:
        found = fixed(op.spec, instances)
        if found is not None:
            return found
    library = op.op_proto_library(package)
    if library is None:
        return None
    return infer_with(library, op, soc, instances, attr_values, shapes=shapes, dtypes=dtypes)


def infer_with(library: Any, op: OpRuntime, soc: str, instances: Sequence[Sequence[tuple]], attr_values: Sequence[Any],
               *, shapes: bool = True, dtypes: bool = True, block: Any = None) -> list[tuple[tuple[int, ...] | None, str | None]]:
    """infer_instances with the op_proto library already found (a plan's signature keeps it);
    `block`: the call's filled TilingBlock to run on (op_proto.infer_outputs)."""
    info = platform(soc)
    try:
        return _infer(library, op.spec, instances, attr_values, soc=soc, core_num=info.core_num, ub_size=info.ub_size,
                      shapes=shapes, dtypes=dtypes, block=block)
    except InferError as exc:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID if exc.invalid else ACLNN_ERR_INNER, str(exc)) from None
