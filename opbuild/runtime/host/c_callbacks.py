"""Calling into a package's tiling library: tiling functions and C GenSimplifiedKey callbacks.

Both the build (key/binary consistency check of C callbacks) and the runtime (every cache miss)
call the same symbols the same way, so the code lives here, below both.
"""

from __future__ import annotations

import ctypes
import threading
from pathlib import Path
from typing import Any, NamedTuple, Sequence

from opbuild.abi.platform import platform
from opbuild.abi.vocabulary import DEFAULT_SOC
from opbuild.runtime.host.tiling_context import (
    GRAPH_PARAM_INVALID,
    GRAPH_SUCCESS,
    MAX_SIMPLIFIED_KEY_LEN,
    TilingContextError,
    build_tiling_context,
    check_tiling_data,
    fill_block,
    new_key_buffer,
)
from opbuild.spec.model import OpSpec

_TILING_FN = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_void_p)
_KEY_FN = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_void_p, ctypes.c_char_p)


class CallbackError(Exception):
    """A tiling function or key callback is missing or failed; the message says which and why.
    `invalid`: the function said the call's parameters are invalid (GRAPH_PARAM_INVALID)."""

    def __init__(self, message: str, invalid: bool = False) -> None:
        super().__init__(message)
        self.invalid = invalid


def _tiling_failed(op: str, symbol: str, status: int, message: str) -> CallbackError:
    if status == GRAPH_PARAM_INVALID:
        return CallbackError(f"{op}: tiling function {symbol} rejected the call: {message or 'invalid parameters'}",
                             invalid=True)
    return CallbackError(f"{op}: tiling function {symbol} failed: {message or f'returned {status}'}")


class TilingLibrary:
    """An opened `libcust_opmaster_rt2.0.so`; symbols are looked up once."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        try:
            self._lib = ctypes.CDLL(str(self.path), mode=ctypes.RTLD_LOCAL)
        except (OSError, UnicodeDecodeError) as exc:  # (ctypes decodes dlerror()'s text: not UTF-8 when the
            # library names a dependency or version in other bytes)
            raise CallbackError(f"cannot load tiling library {self.path}: {exc}") from None
        self._symbols: dict[tuple[str, Any], Any] = {}
        self._addresses: dict[Any, Any] = {}  # name -> address, names tuple -> addresses
        self._lock = threading.Lock()

    def address(self, name: str) -> int:
        """The address of an exported function (what a TilingBlock's run_tiling/run_infer take)."""
        address = self._addresses.get(name)
        if address is None:
            with self._lock:
                try:
                    address = ctypes.cast(getattr(self._lib, name), ctypes.c_void_p).value
                except AttributeError:
                    raise CallbackError(f"symbol {name} not found in {self.path} (is it exported with OPBUILD_API?)") from None
                if address is None:
                    raise CallbackError(f"symbol {name} of {self.path} is at address 0")
                self._addresses[name] = address
        return address

    def addresses(self, names: tuple[str, ...]) -> tuple[int, ...]:
        """address() of each name, as a tuple (kept per tuple of names)."""
        found = self._addresses.get(names)
        if found is None:
            found = tuple([self.address(name) for name in names])
            self._addresses[names] = found
        return found

    def symbol(self, name: str, prototype: Any) -> Any:
        """The exported function as a ctypes function of `prototype`."""
        key = (name, prototype)
        fn = self._symbols.get(key)
        if fn is None:
            fn = prototype(self.address(name))
            self._symbols[key] = fn
        return fn


class TilingResult(NamedTuple):
    """What a tiling function computed for one call."""

    block_dim: int
    tiling_key: int
    workspace_size: int
    tiling_data: bytes


def _attr_items(spec: OpSpec, values: Sequence[Any]) -> list[tuple[str, Any]]:
    return [(a.type, v) for a, v in zip(spec.attrs, values, strict=True)]


def run_tiling(library: TilingLibrary, symbol: str, spec: OpSpec, inputs, outputs, attrs: Sequence[Any], *,
               soc: str, core_num: int, ub_size: int, deterministic: int, impl_mode: int, capacity: int,
               block: Any = None) -> TilingResult:
    """Call the op's tiling function for one call; CallbackError with its message on failure.
    `block`: a TilingBlock already filled with exactly these arguments, to run on."""
    address = library.address(symbol)
    if block is None:
        items = _attr_items(spec, attrs)
        block = fill_block(spec.op, inputs, outputs, items, soc, core_num, ub_size, deterministic, impl_mode, capacity)
    if block is None:  # no extension, or a call only the Python builder takes
        items = _attr_items(spec, attrs)
        return _run_tiling_ctypes(library, symbol, spec, inputs, outputs, items, soc=soc, core_num=core_num,
                                  ub_size=ub_size, deterministic=deterministic, impl_mode=impl_mode, capacity=capacity)
    return tiling_on_block(block, address, spec.op, symbol, capacity)


def tiling_on_block(block: Any, address: int, op: str, symbol: str, capacity: int) -> TilingResult:
    """run_tiling on a filled TilingBlock, the tiling function given by address (a call
    signature's misses keep it: runtime/call/plans.SignatureTiling)."""
    status, block_dim, tiling_key, workspace_size, size, overrun, error = block.run_tiling(address)
    if status != GRAPH_SUCCESS:
        raise _tiling_failed(op, symbol, status, error.decode("utf-8", "replace"))
    try:
        check_tiling_data(capacity, size, None if overrun < 0 else overrun)
    except TilingContextError as exc:
        raise CallbackError(f"{op}: tiling function {symbol}: {exc}") from None
    return TilingResult(block_dim, tiling_key, workspace_size, block.tiling_data(size))


def _run_tiling_ctypes(library: TilingLibrary, symbol: str, spec: OpSpec, inputs, outputs, items, *, soc: str,
                       core_num: int, ub_size: int, deterministic: int, impl_mode: int, capacity: int) -> TilingResult:
    """run_tiling on a context filled and read through ctypes (tiling_context.build_tiling_context)."""
    fn = library.symbol(symbol, _TILING_FN)
    try:
        holder = build_tiling_context(spec.op, inputs, outputs, items, soc, core_num, ub_size, deterministic,
                                      impl_mode, capacity)
    except TilingContextError as exc:
        raise CallbackError(f"{spec.op}: cannot build the tiling context: {exc}") from None
    status = fn(holder.ptr)
    if status != GRAPH_SUCCESS:
        raise _tiling_failed(spec.op, symbol, status, holder.error)
    try:
        data = holder.tiling_data()
    except TilingContextError as exc:
        raise CallbackError(f"{spec.op}: tiling function {symbol}: {exc}") from None
    return TilingResult(holder.block_dim, holder.tiling_key, holder.workspace_size, bytes(data))


_INFER_FN = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint32,
                             ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_uint32))


def run_infer_shape(library: TilingLibrary, symbol: str, spec: OpSpec, inputs, attrs: Sequence[Any],
                    output_index: int, *, soc: str, core_num: int, ub_size: int) -> tuple[int, ...]:
    """Call the op's C infer-shape function for one output; CallbackError with its message on failure."""
    fn = library.symbol(symbol, _INFER_FN)
    try:
        holder = build_tiling_context(spec.op, inputs, [[] for _ in spec.outputs], _attr_items(spec, attrs), soc,
                                      core_num, ub_size, 0, 0, 0)
    except TilingContextError as exc:
        raise CallbackError(f"{spec.op}: cannot build the infer-shape context: {exc}") from None
    dims = (ctypes.c_int64 * 8)()
    dim_num = ctypes.c_uint32(0)
    status = fn(holder.ptr, output_index, dims, ctypes.byref(dim_num))
    if status != GRAPH_SUCCESS:
        raise CallbackError(f"{spec.op}: infer-shape function {symbol} failed: {holder.error or f'returned {status}'}")
    if dim_num.value > 8:
        raise CallbackError(f"{spec.op}: infer-shape function {symbol} returned rank {dim_num.value} (at most 8)")
    shape = tuple(int(d) for d in dims[: dim_num.value])
    if any(d < 0 for d in shape):
        raise CallbackError(f"{spec.op}: infer-shape function {symbol} returned a negative dim in {list(shape)}")
    return shape


class CKeyCallback:
    """`uint32_t fn(TilingContext*, char*)` in the tiling library, as a KeyContext -> str callable."""

    def __init__(self, library: TilingLibrary, symbol: str | None, spec: OpSpec) -> None:
        if not symbol:
            raise CallbackError(f"{spec.op} has no gen_simplifiedkey func")
        self.fn = library.symbol(symbol, _KEY_FN)
        self.symbol = symbol
        self.spec = spec

    @staticmethod
    def _instances(count, dtype, fmt, shape, n: int) -> list[list[tuple]]:
        return [[(dtype(i, k), fmt(i, k), shape(i, k), None) for k in range(count(i))] for i in range(n)]

    def __call__(self, ctx: Any) -> str:
        soc = ctx.soc or DEFAULT_SOC
        info = platform(soc)
        inputs = self._instances(ctx.input_count, ctx.input_dtype, ctx.input_format, ctx.input_shape, ctx.num_inputs)
        outputs = self._instances(ctx.output_count, ctx.output_dtype, ctx.output_format, ctx.output_shape, ctx.num_outputs)
        attrs = [(a.type, ctx.attrs.get(a.name, a.default)) for a in self.spec.attrs]
        holder = build_tiling_context(self.spec.op, inputs, outputs, attrs, soc, info.core_num, info.ub_size,
                                      ctx.deterministic, ctx.impl_mode, 0)
        key = new_key_buffer()
        status = self.fn(holder.ptr, key)
        if status != GRAPH_SUCCESS:
            raise CallbackError(f"GenSimplifiedKey {self.symbol} failed: {holder.error or f'returned {status}'}")
        text = key.raw.split(b"\0", 1)[0]
        if len(text) > MAX_SIMPLIFIED_KEY_LEN:
            raise CallbackError(f"GenSimplifiedKey {self.symbol} wrote {len(text)} bytes, more than {MAX_SIMPLIFIED_KEY_LEN}")
        return text.decode("utf-8", errors="replace")
