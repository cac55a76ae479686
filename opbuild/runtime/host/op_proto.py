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

from opbuild.abi.vocabulary import DTYPE_BY_GE
from opbuild.codegen.op_proto import infer_dtype_symbol, infer_shape_symbol
from opbuild.runtime.host.c_callbacks import TilingLibrary, _attr_items
from opbuild.runtime.host.tiling_context import (
    GRAPH_SUCCESS,
    TensorDesc,
    TilingContextError,
    build_tiling_context,
    fill_block,
)
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
                  soc: str, core_num: int, ub_size: int, shapes: bool = True, dtypes: bool = True,
                  block: Any = None) -> list[tuple[tuple[int, ...] | None, str | None]]:
    """(shape, dtype name) of each output of `spec` for these inputs (one list of (dtype, format,
    shape, strides) instances per IR input, as for tiling) and attribute values. A shape is None
    when the spec has no rule for it, or when `shapes` is False (dtypes only: the inputs' shapes
    may be placeholders); a dtype is None when `dtypes` is False. `block`: a TilingBlock already
    filled with these inputs and attributes (the miss's tiling context) to run on."""
    n = len(spec.outputs)
    symbols = _SYMBOLS[dtypes, shapes](spec)
    if block is None:
        items = _attr_items(spec, attrs)
        block = fill_block(spec.op, inputs, ((),) * n, items, soc, core_num, ub_size, 0, 0, 0)
    if block is None:  # no extension, or a call only the Python builder takes (it says what is wrong)
        written = _infer_ctypes(library, spec, inputs, items, symbols, soc=soc, core_num=core_num, ub_size=ub_size)
        return outputs_of(written, shapes, dtypes)
    return infer_on_block(block, library.addresses(symbols), symbols, spec.op, n, shapes, dtypes)


def infer_on_block(block: Any, addresses: tuple[int, ...], symbols: tuple[str, ...], op: str, n_outputs: int,
                   shapes: bool, dtypes: bool) -> list[tuple[tuple[int, ...] | None, str | None]]:
    """infer_outputs on a filled TilingBlock, the op_proto functions `symbols` given by address
    (a call signature's misses keep them: plans.SignatureTiling)."""
    status, error, last, written = block.run_infer(addresses, n_outputs)
    if status != GRAPH_SUCCESS:
        raise InferError(error.decode("utf-8", "replace") or f"{op}: {symbols[last]} returned {status}",
                         status == INFER_INVALID)
    return outputs_of(written, shapes, dtypes)


def outputs_of(written, shapes: bool, dtypes: bool) -> list[tuple[tuple[int, ...] | None, str | None]]:
    """(shape or None, dtype name or None) per output from the (dtype code, dims) the functions wrote."""
    if not dtypes:
        return [(None if not shapes or dims == _UNKNOWN else dims, None) for _, dims in written]
    return [(None if not shapes or dims == _UNKNOWN else dims, DTYPE_BY_GE[dtype].name) for dtype, dims in written]


_UNKNOWN = (UNKNOWN_RANK,)

_SYMBOLS = {
    (True, True): lambda spec: (infer_dtype_symbol(spec), infer_shape_symbol(spec)),
    (True, False): lambda spec: (infer_dtype_symbol(spec),),
    (False, True): lambda spec: (infer_shape_symbol(spec),),
    (False, False): lambda spec: (),
}
"""The op_proto functions to run, dtypes first (the shape function may read what it wrote)."""


def _infer_ctypes(library: TilingLibrary, spec: OpSpec, inputs, items, symbols: Sequence[str], *, soc: str, core_num: int,
                  ub_size: int) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """The op_proto functions run on a context filled and read through ctypes: per output, the
    (dtype code, dims) they wrote."""
    try:
        holder = build_tiling_context(spec.op, inputs, [[] for _ in spec.outputs], items, soc, core_num, ub_size,
                                      0, 0, 0)
    except TilingContextError as exc:
        raise InferError(f"{spec.op}: cannot build the inference context: {exc}", True) from None
    outputs = (TensorDesc * max(len(spec.outputs), 1))()
    for symbol in symbols:
        status = library.symbol(symbol, _INFER_FN)(holder.ptr, ctypes.addressof(outputs))
        if status != GRAPH_SUCCESS:
            raise InferError(holder.error or f"{spec.op}: {symbol} returned {status}", status == INFER_INVALID)
    return tuple((outputs[k].dtype, tuple(outputs[k].dims[:outputs[k].dim_num])) for k in range(len(spec.outputs)))
