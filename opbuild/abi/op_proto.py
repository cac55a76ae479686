"""Calling a package's op_proto library (`libcust_opsproto_rt2.0.so`): each op's generated
`<Op>InferShape` / `<Op>InferDataType` (opbuild/codegen/op_proto.py, opbuild/infer.h).

The one implementation of the spec's shape and dtype rules: the runtime's one-shot allocation,
its output-shape check, `opbuild explain` and the `.om` builder all come here. The same
functions are also linked into the package's tiling library (what an `.om` packs), so a
`TilingLibrary` of either file serves.
"""

from __future__ import annotations

import ctypes
from typing import Any, Sequence

from opbuild.abi.c_callbacks import TilingLibrary, _attr_items
from opbuild.abi.tiling_context import GRAPH_SUCCESS, TensorDesc, TilingContextError, build_tiling_context
from opbuild.abi.vocabulary import DTYPE_BY_GE
from opbuild.codegen.op_proto import infer_dtype_symbol, infer_shape_symbol
from opbuild.spec.model import OpSpec

INFER_INVALID = 1
"""opbuild/infer.h OPBUILD_INFER_INVALID: the inputs or attributes break the op's rules."""
UNKNOWN_RANK = -2
"""GE's unknown rank (a shape of one dim -2): the op_proto answer for an output with no rule."""

_INFER_FN = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_void_p, ctypes.c_void_p)


class InferError(Exception):
    """Inference refused the call: `invalid` when the caller's inputs break the rules (an invalid
    parameter), otherwise an op's own infer-shape function failed (an inner error)."""

    def __init__(self, message: str, invalid: bool) -> None:
        super().__init__(message)
        self.invalid = invalid


def infer_outputs(library: TilingLibrary, spec: OpSpec, inputs: Sequence[Sequence[Any]], attrs: Sequence[Any], *,
                  soc: str, core_num: int, ub_size: int, shapes: bool = True,
                  dtypes: bool = True) -> list[tuple[tuple[int, ...] | None, str | None]]:
    """(shape, dtype name) of each output of `spec` for these inputs (one list of (dtype, format,
    shape, strides) instances per IR input, as for tiling) and attribute values. A shape is None
    when the spec has no rule for it, or when `shapes` is False (dtypes only: the inputs' shapes
    may be placeholders); a dtype is None when `dtypes` is False."""
    try:
        holder = build_tiling_context(spec.op, inputs, [[] for _ in spec.outputs], _attr_items(spec, attrs), soc,
                                      core_num, ub_size, 0, 0, 0)
    except TilingContextError as exc:
        raise InferError(f"{spec.op}: cannot build the inference context: {exc}", True) from None
    n = len(spec.outputs)
    outputs = (TensorDesc * max(n, 1))()
    address = ctypes.addressof(outputs)
    if dtypes:
        _run(library, infer_dtype_symbol(spec), holder, address, spec)
    if shapes:
        _run(library, infer_shape_symbol(spec), holder, address, spec)
    result = []
    for k in range(n):
        desc = outputs[k]
        shape = None
        if shapes:
            dims = desc.dims[:desc.dim_num]
            if dims != [UNKNOWN_RANK]:
                shape = tuple(dims)
        result.append((shape, DTYPE_BY_GE[desc.dtype].name if dtypes else None))
    return result


def _run(library: TilingLibrary, symbol: str, holder: Any, outputs: int, spec: OpSpec) -> None:
    status = library.symbol(symbol, _INFER_FN)(holder.ptr, outputs)
    if status != GRAPH_SUCCESS:
        raise InferError(holder.error or f"{spec.op}: {symbol} returned {status}", status == INFER_INVALID)
