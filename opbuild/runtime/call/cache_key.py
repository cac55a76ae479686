"""The op-parameter cache key in pure Python: the equivalent of native/src/opkey.c.

The key's definition (its words, in order) is written once, in opkey.h; this module builds the
same words where the C code is not built, and is what the property test
(tests/capi/test_native_cache.py::test_c_key_equals_python_key) checks against the C code over generated calls. A tensor is
`(dtype GE code, format GE code, dims, strides in elements, storage offset in elements)`; a slot is
None (absent optional input), a tensor, or a list of tensors (dynamic input); an attribute is
`(type, value)` with the spec's attribute types (opbuild/abi/vocabulary.py ATTR_TYPES; each
record's `key_tag` is its OPKEY_* tag).
"""

from __future__ import annotations

import functools
import os
import struct
from typing import Any, Sequence

import numpy as np

from opbuild.abi.ge_types import DTYPE_TO_GE, FORMAT_TO_GE, numpy_dtype
from opbuild.abi.vocabulary import ATTR_TYPE, ATTR_TYPES, CACHE_KEY_ENV_VARS, CACHE_KEY_SLOT_TAGS, CACHE_KEY_VERSION
from opbuild.runtime.environ import raw_reader

VERSION = CACHE_KEY_VERSION
ABSENT, TENSOR, LIST = (t.value for t in CACHE_KEY_SLOT_TAGS)
ATTR_TAGS = {t.name: t.key_tag for t in ATTR_TYPES}
"""The key's tag of each spec attribute type (vocabulary.AttrType.key_tag, OPKEY_* of opkey.h)."""
ENV_VARS = CACHE_KEY_ENV_VARS
"""What package resolution and binary selection depend on besides the call: the env token."""

_MASK = (1 << 64) - 1
_FNV_OFFSET, _FNV_PRIME = 0xCBF29CE484222325, 0x100000001B3

Tensor = tuple[int, int, Sequence[int], Sequence[int], int]


def _u64(v: int) -> int:
    return v & _MASK


def _double_bits(v: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", float(v)))[0]


def env_hash(values: Sequence[bytes | None]) -> int:
    """opkey_env_hash: FNV-1a 64 of each value's bytes then 0x01, or 0x00 when unset."""
    h = _FNV_OFFSET
    for v in values:
        if v is not None:
            for byte in v:
                h = ((h ^ byte) * _FNV_PRIME) & _MASK
        h = ((h ^ (1 if v is not None else 0)) * _FNV_PRIME) & _MASK
    return h


search_env = raw_reader(*ENV_VARS)
"""The search environment (SoC, package paths) of a call's cache key, as a hashable tuple (read on
every call: environ.raw_reader)."""

_LAST_ENV: list = [(None, 0)]  # (the last search environment seen, its token), replaced as one


def env_token() -> int:
    """opkey_env_token: env_hash of this process's search environment (hashed again only when a
    value changed: the pure-Python key builders ask on every call)."""
    values = search_env()
    seen, token = _LAST_ENV[0]
    if values != seen:
        token = env_hash([v if v is None or isinstance(v, bytes) else os.fsencode(v) for v in values])
        _LAST_ENV[0] = (values, token)
    return token


def _tensor(words: list[int], t: Tensor) -> None:
    dtype, fmt, dims, strides, offset = t
    words += (TENSOR, dtype, fmt, len(dims), *dims, *strides, offset)  # (key_words masks to 64 bits)


_ITEM_WORD = {"int": lambda v: _u64(int(v)), "float": _double_bits, "bool": lambda v: 1 if v else 0}
"""The word of a number or bool (a scalar attribute's value, or one item of a list)."""


def _attr(words: list[int], kind: str, value: Any) -> None:
    t = ATTR_TYPE.get(kind)
    if t is None:
        raise ValueError(f"unknown attribute type {kind!r}")
    if t.element == "str" and not t.is_list:
        data = value.encode() if isinstance(value, str) else bytes(value)
        words += (t.key_tag, len(data))
        for i in range(0, len(data), 8):
            words.append(int.from_bytes(data[i:i + 8], "little"))
    elif t.element not in _ITEM_WORD:
        raise ValueError(f"attribute type {kind!r} has no key encoding")
    elif t.is_list:
        item = _ITEM_WORD[t.element]
        words += (t.key_tag, len(value), *(item(v) for v in value))
    else:
        words += (t.key_tag, _ITEM_WORD[t.element](value))


def key_words(op_id: int, env: int, dp: int, slots: Sequence[Tensor | list[Tensor] | None],
              attrs: Sequence[tuple[str, Any]]) -> list[int]:
    """The key's words (opkey.h) of one call."""
    words = [VERSION, op_id, env, dp, len(slots), len(attrs)]
    for slot in slots:
        if slot is None:
            words.append(ABSENT)
        elif isinstance(slot, list):
            words += (LIST, len(slot))
            for t in slot:
                _tensor(words, t)
        else:
            _tensor(words, slot)
    for kind, value in attrs:
        _attr(words, kind, value)
    return [w & _MASK for w in words]  # two's complement of negative strides and values


def key_bytes(op_id: int, env: int, dp: int, slots: Sequence[Tensor | list[Tensor] | None],
              attrs: Sequence[tuple[str, Any]]) -> bytes:
    """key_words as native uint64 bytes (what the C code compares)."""
    words = key_words(op_id, env, dp, slots, attrs)
    return struct.pack(f"={len(words)}Q", *words)


@functools.cache
def numpy_dtype_codes() -> dict[np.dtype, int]:
    """{numpy dtype: GE code} of every dtype the runtime takes (a tensor's dtype word); the C
    fast path gets the same table (fast_wrappers._fastpath_ready)."""
    codes = {}
    for name, code in DTYPE_TO_GE.items():
        try:
            codes[np.dtype(numpy_dtype(name))] = code
        except (TypeError, ValueError, KeyError):
            continue
    return codes


_ND = FORMAT_TO_GE["ND"]
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_PLAIN_TYPES = {"int": (int,), "float": (float, int), "bool": (bool,), "str": (str,)}
_EXACT = {t.key_tag: (t.name, t.element, _PLAIN_TYPES[t.element]) for t in ATTR_TYPES if not t.is_list}
"""Per scalar key tag: its attribute type, element, and the exact Python types a plain call may
give for it (as the C path checks them: a bool is not an int; an int is taken for a float)."""


def _plain_attr(kind: int, v: Any) -> tuple[str, Any] | None:
    """(attribute type, value) of a scalar argument of the key's `kind`, as the C path takes it,
    else None (another type, or a value with no key encoding: _keyable)."""
    found = _EXACT.get(kind)
    if found is None or type(v) not in found[2]:
        return None
    value = _keyable(found[1], v)
    return None if value is None else (found[0], value)


def plain_call_key(op_id: int, n_in: int, kinds: bytes, dp: int, *args: Any) -> bytes | None:
    """The key (key_bytes) of a simple op's call given as plain numpy arrays and scalar
    attributes, `args` in parameter order (inputs, attributes, outputs); None for a call the
    key does not cover (then the caller takes the generic path). The pure-Python equivalent of
    the C fast path's Phase1.key (fastpath_hit.c build_key), used where the extension is missing:
    exact ndarrays of a supported native dtype with strides in whole elements (format ND,
    storage offset 0), attributes of the exact Python type of their `kinds` tag."""
    n_attr = len(kinds)
    codes = numpy_dtype_codes()
    slots = []
    for a in (*args[:n_in], *args[n_in + n_attr:]):
        if type(a) is not np.ndarray or not a.dtype.isnative or a.ndim > 64:
            return None
        code = codes.get(a.dtype)
        size = a.itemsize
        if code is None or size <= 0 or any([s % size for s in a.strides]):
            return None
        slots.append((code, _ND, a.shape, [s // size for s in a.strides], 0))
    attrs = []
    for kind, v in zip(kinds, args[n_in:n_in + n_attr], strict=False):  # (a short call: its arity error comes later)
        item = _plain_attr(kind, v)
        if item is None:
            return None
        attrs.append(item)
    return key_bytes(op_id, env_token(), dp, slots, attrs)


_TYPE_BY_TAG = {t.key_tag: t for t in ATTR_TYPES}


def _keyable(element: str, v: Any) -> Any:
    """An attribute item as the key encodes it, or None when it has no encoding (an int out of
    int64, a float overflowing a double, a string that is not UTF-8), as the C code decides."""
    if element == "int":
        return v if _INT64_MIN <= v <= _INT64_MAX else None
    if element == "float":
        try:
            return float(v)
        except OverflowError:
            return None
    if element == "str":
        try:
            return v.encode()
        except UnicodeEncodeError:
            return None
    return bool(v)


def params_key(op_id: int, dp: int, slot_kinds: bytes, params: Sequence[Sequence[tuple[np.ndarray, str]]],
               formats: dict[str, int], attr_tags: bytes, attrs: Sequence[Any]) -> bytes | None:
    """The key (key_bytes) of a call given as normalized tensors (per IR parameter, inputs then
    outputs, a list of (array, format name); `slot_kinds` 1 for a tensor list) and normalized
    attribute values (`attr_tags`: their key tags); None when a tensor's strides are not in
    whole elements or a value has no key encoding. The pure-Python equivalent of the C fast
    path's params_key (fastpath.c), used where the extension is missing."""
    codes = numpy_dtype_codes()
    slots: list[Any] = []
    for kind, group in zip(slot_kinds, params, strict=True):
        tensors = []
        for a, fmt in group:
            size = a.itemsize
            if a.ndim > 64 or size <= 0 or any([s % size for s in a.strides]):
                return None
            tensors.append((codes[a.dtype], formats[fmt], a.shape, [s // size for s in a.strides], 0))
        if kind:
            slots.append(tensors)
        elif len(tensors) > 1:
            raise ValueError("params_key: a single parameter has one tensor or none")
        else:
            slots.append(tensors[0] if tensors else None)
    items = []
    for tag, v in zip(attr_tags, attrs, strict=True):
        t = _TYPE_BY_TAG[tag]
        values = [_keyable(t.element, x) for x in (v if t.is_list else (v,))]
        if any(x is None for x in values):
            return None
        items.append((t.name, values if t.is_list else values[0]))
    return key_bytes(op_id, env_token(), dp, slots, items)
