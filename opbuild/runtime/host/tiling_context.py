"""ctypes mirror of opbuild/tiling.h's TilingContext, and a fast builder for it.

The layout here must match the C header field for field (tests/abi/test_tiling_abi.py compiles
a C program and compares every offset and size). `build_tiling_context` fills a context for one
call: it runs on every op-parameter cache miss, so it packs the tensor descriptors with
precompiled `struct` formats instead of per-field ctypes assignments.
"""

from __future__ import annotations

import ctypes
import operator
import struct
from collections.abc import Sequence
from typing import Any

from opbuild.abi import vocabulary
from opbuild.abi.ge_types import DTYPE_TO_GE, FORMAT_TO_GE

__all__ = [
    "TILING_ABI_VERSION",
    "MAX_DIMS",
    "ERROR_LEN",
    "MAX_SIMPLIFIED_KEY_LEN",
    "GRAPH_SUCCESS",
    "GRAPH_FAILED",
    "GRAPH_PARAM_INVALID",
    "ATTR_TYPES",
    "IMPL_MODES",
    "TensorDesc",
    "AttrValue",
    "TilingContext",
    "TilingContextError",
    "ContextHolder",
    "build_tiling_context",
    "new_key_buffer",
]

TILING_ABI_VERSION = 1
MAX_DIMS = 8
ERROR_LEN = 256
MAX_SIMPLIFIED_KEY_LEN = vocabulary.MAX_SIMPLIFIED_KEY_LEN
GRAPH_SUCCESS = 0
GRAPH_FAILED = 0xFFFFFFFF
GRAPH_PARAM_INVALID = 50331649
"""ge::GRAPH_PARAM_INVALID (OPBUILD_GRAPH_PARAM_INVALID): a tiling function rejects the call's
parameters; the aclnn status is 161002."""

ATTR_TYPES: dict[str, int] = {t.name: t.tiling for t in vocabulary.ATTR_TYPES}
"""Attribute type name → OPBUILD_ATTR_* value (vocabulary.AttrType.tiling)."""

IMPL_MODES: dict[str, int] = vocabulary.IMPL_MODE_INDEX
"""impl_mode name → the `p=` value of simplified keys and TilingContext.impl_mode."""

_u32, _i32, _u64, _i64 = ctypes.c_uint32, ctypes.c_int32, ctypes.c_uint64, ctypes.c_int64


class TensorDesc(ctypes.Structure):
    """OpbuildTensorDesc: one tensor instance (strides in elements)."""

    _fields_ = [
        ("dtype", _i32),
        ("format", _i32),
        ("dim_num", _u32),
        ("reserved", _u32),
        ("dims", _i64 * MAX_DIMS),
        ("strides", _i64 * MAX_DIMS),
    ]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.dims[: self.dim_num])

    @property
    def stride_tuple(self) -> tuple[int, ...]:
        return tuple(self.strides[: self.dim_num])


class AttrValue(ctypes.Structure):
    """OpbuildAttrValue: scalars in i (int, bool) or f (float), str in s, lists in list_*."""

    _fields_ = [
        ("type", _i32),
        ("count", _u32),
        ("i", _i64),
        ("f", ctypes.c_double),
        ("s", ctypes.c_char_p),
        ("list_int", ctypes.POINTER(_i64)),
        ("list_float", ctypes.POINTER(ctypes.c_double)),
        ("list_bool", ctypes.POINTER(ctypes.c_uint8)),
    ]


class TilingContext(ctypes.Structure):
    _fields_ = [
        ("abi_version", _u32),
        ("input_num", _u32),
        ("output_num", _u32),
        ("attr_num", _u32),
        ("input_start", ctypes.POINTER(_u32)),
        ("input_count", ctypes.POINTER(_u32)),
        ("input_descs", ctypes.POINTER(TensorDesc)),
        ("output_start", ctypes.POINTER(_u32)),
        ("output_count", ctypes.POINTER(_u32)),
        ("output_descs", ctypes.POINTER(TensorDesc)),
        ("attrs", ctypes.POINTER(AttrValue)),
        ("op_type", ctypes.c_char_p),
        ("soc_version", ctypes.c_char_p),
        ("core_num", _u32),
        ("deterministic", _u32),
        ("impl_mode", _u32),
        ("reserved0", _u32),
        ("ub_size", _u64),
        ("block_dim", _u32),
        ("reserved1", _u32),
        ("tiling_key", _u64),
        ("workspace_size", _u64),
        ("tiling_data", ctypes.c_void_p),
        ("tiling_data_capacity", _u64),
        ("tiling_data_size", _u64),
        ("error", ctypes.c_char * ERROR_LEN),
    ]


class TilingContextError(ValueError):
    """A context that cannot be built, or a tiling result that breaks the ABI's rules."""


def new_key_buffer() -> ctypes.Array:
    """A zeroed buffer for a GenSimplifiedKey callback (256 usable bytes + NUL, with slack)."""
    return ctypes.create_string_buffer(MAX_SIMPLIFIED_KEY_LEN + 64)


# ---- fast packing ------------------------------------------------------------------------------

# Native layout of OpbuildTensorDesc: i32 dtype, i32 format, u32 dim_num, u32 reserved, i64[8] x 2.
_DESC = struct.Struct(f"=iiII{MAX_DIMS}q{MAX_DIMS}q")
assert _DESC.size == ctypes.sizeof(TensorDesc)
_PAD = [(0,) * (MAX_DIMS - r) for r in range(MAX_DIMS + 1)]
_DESC_ARRAYS = [TensorDesc * n for n in range(33)]
_U32_ARRAYS = [_u32 * n for n in range(33)]
_ATTR_ARRAYS = [AttrValue * n for n in range(33)]
_CTX_SIZE = ctypes.sizeof(TilingContext)
_OFF_RESULTS = TilingContext.block_dim.offset
_RESULTS_LEN = TilingContext.tiling_data.offset - _OFF_RESULTS  # block_dim .. workspace_size
_OFF_DATA_SIZE = TilingContext.tiling_data_size.offset
_OFF_ERROR = TilingContext.error.offset


def _desc_array(n: int):
    return (_DESC_ARRAYS[n] if n < 33 else TensorDesc * n)()


def _u32_array(values: list[int]):
    n = len(values)
    return (_U32_ARRAYS[n] if n < 33 else _u32 * n)(*values)


def _contiguous(shape: Sequence[int]) -> tuple[int, ...]:
    strides = []
    acc = 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d if d > 0 else 1
    return tuple(reversed(strides))


def _pack_tensors(kind: str, params: Sequence[Sequence[Any]]):
    """(start array, count array, desc array) for one side (inputs or outputs)."""
    starts: list[int] = []
    counts: list[int] = []
    total = 0
    for p in params:
        starts.append(total)
        n = len(p)
        counts.append(n)
        total += n
    descs = _desc_array(total)
    k = 0
    for ir, p in enumerate(params):
        for t in p:
            try:
                dtype, fmt, shape, strides = t
                dt = DTYPE_TO_GE[dtype]
                ft = FORMAT_TO_GE[fmt]
                shape = tuple(shape)
                rank = len(shape)
                if rank > MAX_DIMS:
                    raise TilingContextError(f"rank {rank} is more than {MAX_DIMS}")
                strides = _contiguous(shape) if strides is None else tuple(strides)
                if len(strides) != rank:
                    raise TilingContextError(f"{len(strides)} strides for a shape of rank {rank}")
                pad = _PAD[rank]
                _DESC.pack_into(descs, k * _DESC.size, dt, ft, rank, 0, *shape, *pad, *strides, *pad)
            except (KeyError, TypeError, ValueError, struct.error) as e:
                raise TilingContextError(f"{kind} {ir} instance {k - starts[ir]}: {_describe(e, t)}") from None
            k += 1
    return _u32_array(starts), _u32_array(counts), descs


def _describe(e: Exception, t: Any) -> str:
    if isinstance(e, KeyError):
        key = e.args[0]
        if key in DTYPE_TO_GE or key in FORMAT_TO_GE:
            return str(e)
        if isinstance(t, (tuple, list)) and len(t) == 4 and key == t[0]:
            return f"unknown dtype {key!r}; known: {', '.join(DTYPE_TO_GE)}"
        return f"unknown format {key!r}; known: {', '.join(FORMAT_TO_GE)}"
    if isinstance(e, TilingContextError):
        return str(e)
    if isinstance(e, struct.error):
        return f"shape {t[2]!r} or strides {t[3]!r} out of int64 range"
    return f"expected (dtype, format, shape, strides), got {t!r} ({e})"


def _int64(value: Any) -> int:
    v = operator.index(value)
    if not -(1 << 63) <= v < (1 << 63):
        raise OverflowError(f"{v} is out of int64 range")
    return v


def _fill_attr(a: AttrValue, kind: str, value: Any, keep: list) -> None:
    a.type = ATTR_TYPES[kind]
    if kind == "int":
        a.i = _int64(value)
    elif kind == "float":
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            value = float(value)  # numpy scalars; TypeError for anything else
        a.f = value
    elif kind == "bool":
        if not isinstance(value, bool):
            value = operator.index(value)
            if value not in (0, 1):
                raise TypeError(f"{value!r} is not a bool")
        a.i = 1 if value else 0
    elif kind == "str":
        b = value.encode() if isinstance(value, str) else bytes(value)
        if b"\0" in b:
            raise ValueError("string contains a NUL byte")
        keep.append(b)
        a.s = b
    else:
        values = list(value)
        n = len(values)
        a.count = n
        arr: ctypes.Array[Any]
        if kind == "list_int":
            arr = (_i64 * n)(*map(_int64, values))
            a.list_int = arr
        elif kind == "list_float":
            arr = (ctypes.c_double * n)(*map(float, values))
            a.list_float = arr
        else:
            for v in values:
                if not isinstance(v, bool) and operator.index(v) not in (0, 1):
                    raise TypeError(f"{v!r} is not a bool")
            arr = (ctypes.c_uint8 * n)(*(1 if v else 0 for v in values))
            a.list_bool = arr
        keep.append(arr)


TILING_GUARD = 64
"""Bytes after the tiling data buffer filled with a pattern and checked after the tiling function
ran: a function that writes past its struct is reported instead of corrupting the host's heap."""
_GUARD_BYTES = bytes([0xA5]) * TILING_GUARD


class ContextHolder:
    """A filled TilingContext and every buffer it points to.

    `.ptr` is the address of the context (pass it to a tiling function or GenSimplifiedKey
    callback declared with a c_void_p argument); `.ctx` is the ctypes structure.
    """

    __slots__ = ("ctx", "ptr", "tiling_capacity", "_keep", "_guard")

    def __init__(self, ctx: TilingContext, tiling_capacity: int, keep: list, guard: int | None = None):
        self.ctx = ctx
        self.ptr: int = ctypes.addressof(ctx)
        self.tiling_capacity = tiling_capacity
        self._keep = keep
        self._guard = guard  # address of the TILING_GUARD bytes right after the tiling data buffer

    def overrun(self) -> int | None:
        """Offset (from the end of the tiling data buffer) of the first guard byte the tiling
        function overwrote, None when it stayed inside its buffer."""
        if self._guard is None:
            return None
        tail = ctypes.string_at(self._guard, TILING_GUARD)
        if tail == _GUARD_BYTES:
            return None
        return next(i for i in range(TILING_GUARD) if tail[i] != _GUARD_BYTES[i])

    # results of the tiling function
    @property
    def block_dim(self) -> int:
        return self.ctx.block_dim

    @property
    def tiling_key(self) -> int:
        return self.ctx.tiling_key

    @property
    def workspace_size(self) -> int:
        return self.ctx.workspace_size

    @property
    def tiling_data_size(self) -> int:
        return self.ctx.tiling_data_size

    @property
    def error(self) -> str:
        """The message a failed tiling function or key callback left ("" if none)."""
        return self.ctx.error.decode("utf-8", "replace")

    def tiling_data(self) -> bytes:
        """The bytes the tiling function declared it wrote (tiling_data_size); TilingContextError
        if it declared more than the buffer or wrote past its end (the guard bytes changed)."""
        size = self.ctx.tiling_data_size
        check_tiling_data(self.tiling_capacity, size, self.overrun())
        if size == 0:
            return b""
        return ctypes.string_at(self.ctx.tiling_data, size)

    def reset_results(self) -> None:
        """Clear block_dim, tiling_key, workspace_size, tiling_data_size and error (to rerun)."""
        ctypes.memset(self.ptr + _OFF_RESULTS, 0, _RESULTS_LEN)
        ctypes.memset(self.ptr + _OFF_DATA_SIZE, 0, 8)
        ctypes.memset(self.ptr + _OFF_ERROR, 0, 1)

    def input_desc(self, ir_index: int, k: int = 0) -> TensorDesc:
        c = self.ctx
        if ir_index >= c.input_num or k >= c.input_count[ir_index]:
            raise IndexError(f"no input {ir_index} instance {k}")
        return c.input_descs[c.input_start[ir_index] + k]

    def output_desc(self, ir_index: int, k: int = 0) -> TensorDesc:
        c = self.ctx
        if ir_index >= c.output_num or k >= c.output_count[ir_index]:
            raise IndexError(f"no output {ir_index} instance {k}")
        return c.output_descs[c.output_start[ir_index] + k]


def check_tiling_data(capacity: int, size: int, overrun: int | None) -> None:
    """TilingContextError when a tiling function wrote past its tiling data buffer (`overrun`: the
    first changed guard byte) or declared more bytes (`size`) than the buffer's `capacity`."""
    if overrun is not None:
        raise TilingContextError(f"tiling function wrote past the end of its {capacity}-byte tiling "
                                 f"data (the kernel's struct): byte {capacity + overrun} changed")
    if size > capacity:
        raise TilingContextError(f"tiling function declared {size} bytes of tiling data; the buffer has {capacity}")


TensorInstance = tuple[str, str, Sequence[int], Sequence[int] | None]


def _c_filler() -> Any:
    """_fastpath.fill_tiling_context, or None without the extension (OPBUILD_NO_FASTPATH=1 too)."""
    from opbuild.runtime import fastpath_ext

    ext = fastpath_ext.load()
    return ext.fill_tiling_context if ext is not None else None


_FILL = _c_filler()


def fill_block(op_type: str, inputs: Sequence[Sequence[TensorInstance]], outputs: Sequence[Sequence[TensorInstance]],
               attrs: Sequence[tuple[str, Any]], soc_version: str, core_num: int, ub_size: int,
               deterministic: bool | int = False, impl_mode: int | str = 0, tiling_capacity: int = 4096) -> Any:
    """The context build_tiling_context fills, as the extension's TilingBlock (its `run_tiling` /
    `run_infer` call a function on it and read the results in one go); None without the
    extension, or for a call only the Python builder handles (it also says what is wrong)."""
    if _FILL is None or impl_mode not in vocabulary.IMPL_MODE_BY_INDEX or type(tiling_capacity) is not int:
        return None
    return _FILL(op_type.encode(), soc_version.encode(), core_num, ub_size, deterministic, impl_mode,
                 tiling_capacity, _GUARD_BYTES, inputs, outputs, attrs, DTYPE_TO_GE, FORMAT_TO_GE, ATTR_TYPES)


def build_tiling_context(
    op_type: str,
    inputs: Sequence[Sequence[TensorInstance]],
    outputs: Sequence[Sequence[TensorInstance]],
    attrs: Sequence[tuple[str, Any]],
    soc_version: str,
    core_num: int,
    ub_size: int,
    deterministic: bool | int = False,
    impl_mode: int | str = 0,
    tiling_capacity: int = 4096,
) -> ContextHolder:
    """Fill a TilingContext.

    inputs/outputs: one list per IR parameter, of (dtype name, format name, shape, strides or None
    for contiguous) instances (empty list = absent optional; n = dynamic list). attrs: one
    (type name, value) per attribute, type in ATTR_TYPES. impl_mode: 0/1/2 or a name of IMPL_MODES.
    """
    block = fill_block(op_type, inputs, outputs, attrs, soc_version, core_num, ub_size, deterministic, impl_mode,
                       tiling_capacity)
    if block is not None:
        ctx = TilingContext.from_buffer(block)  # keeps the block alive
        guard = block.guard
        return ContextHolder(ctx, tiling_capacity, [], ctypes.addressof(ctx) + guard if guard else None)
    keep: list = []
    ctx = TilingContext()
    in_start, in_count, in_descs = _pack_tensors("input", inputs)
    out_start, out_count, out_descs = _pack_tensors("output", outputs)
    keep += (in_start, in_count, in_descs, out_start, out_count, out_descs)

    nattr = len(attrs)
    attr_arr = (_ATTR_ARRAYS[nattr] if nattr < 33 else AttrValue * nattr)()
    keep.append(attr_arr)
    for idx, item in enumerate(attrs):
        try:
            kind, value = item
            _fill_attr(attr_arr[idx], kind, value, keep)
        except KeyError:
            raise TilingContextError(
                f"attr {idx}: unknown attr type {item[0]!r}; known: {', '.join(ATTR_TYPES)}"
            ) from None
        except (TypeError, ValueError, OverflowError) as e:
            raise TilingContextError(f"attr {idx} ({item[0] if isinstance(item, tuple) else '?'}): "
                                     f"bad value {item!r}: {e}") from None

    if isinstance(impl_mode, str):
        try:
            impl_mode = IMPL_MODES[impl_mode]
        except KeyError:
            raise TilingContextError(f"unknown impl_mode {impl_mode!r}; known: {', '.join(IMPL_MODES)}") from None
    elif impl_mode not in vocabulary.IMPL_MODE_BY_INDEX:
        *others, last = vocabulary.IMPL_MODE_BY_INDEX
        raise TilingContextError(f"impl_mode {impl_mode!r} is not {', '.join(map(str, others))} or {last}")
    if tiling_capacity < 0:
        raise TilingContextError(f"tiling_capacity {tiling_capacity} is negative")

    op_b = op_type.encode()
    soc_b = soc_version.encode()
    keep += (op_b, soc_b)
    guard = None
    if tiling_capacity:
        data = (_u64 * ((tiling_capacity + TILING_GUARD + 7) // 8))()
        keep.append(data)
        data_addr = ctypes.addressof(data)
        guard = data_addr + tiling_capacity
        ctypes.memmove(guard, _GUARD_BYTES, TILING_GUARD)
    else:
        data_addr = None

    ctx.abi_version = TILING_ABI_VERSION
    ctx.input_num = len(inputs)
    ctx.output_num = len(outputs)
    ctx.attr_num = nattr
    # ctypes converts an array to a pointer to its first element on assignment
    ctx.input_start = in_start
    ctx.input_count = in_count
    ctx.input_descs = in_descs
    ctx.output_start = out_start
    ctx.output_count = out_count
    ctx.output_descs = out_descs
    ctx.attrs = attr_arr
    ctx.op_type = op_b
    ctx.soc_version = soc_b
    ctx.core_num = core_num
    ctx.deterministic = 1 if deterministic else 0
    ctx.impl_mode = impl_mode
    ctx.ub_size = ub_size
    ctx.tiling_data = data_addr
    ctx.tiling_data_capacity = tiling_capacity
    return ContextHolder(ctx, tiling_capacity, keep, guard)
