"""TBE_KERNELS and CUST_AICPU_KERNELS in GE's KernelStore layout
(`common/tbe_handle_store/kernel_store.{h,cc}`; CustAICPUKernelStore is the same store).

    per kernel: KernelStoreItemHead {u32 magic 0x5D776EFD; u32 name_len; u32 bin_len}  (12 bytes)
                name (UTF-8, no NUL), binary

No count and no padding: items follow each other to the end of the partition. Names are
`<package>:<BinaryName>`; a kernel's descriptor JSON is not here but in MODEL_DEF (attribute
`_opbuild_kernels`), as GE keeps kernel metadata in the model's attributes. GE's loader stops
quietly at a short or inconsistent item; this one rejects it, naming the field and its offset.

In CUST_AICPU_KERNELS each item is one package's `libcust_aicpu_kernels.so`, named
`<package>:libcust_aicpu_kernels.so`, once per package however many nodes use it. `partition`
(the name in messages) is the only difference between the two.
"""

from __future__ import annotations

import struct
from typing import Callable, Iterable

from opbuild.om.errors import OmError

KERNEL_MAGIC = 0x5D776EFD
_HEAD = struct.Struct("<III")
ITEM_HEAD_SIZE = _HEAD.size  # 12


def build(items: Iterable[tuple[str, bytes | memoryview]], partition: str = "TBE_KERNELS") -> list[bytes | memoryview]:
    """The partition as chunks (written without joining): one head, name and binary per kernel."""
    chunks: list[bytes | memoryview] = []
    for i, (name, data) in enumerate(items):
        raw = name.encode("utf-8")
        if not raw or not len(data) or len(raw) > 0xFFFFFFFF or len(data) > 0xFFFFFFFF:
            raise OmError(f"{name!r}: empty or too large name or binary", f"{partition} item {i}")
        chunks += [_HEAD.pack(KERNEL_MAGIC, len(raw), len(data)), raw, data]
    return chunks


def load(data: bytes | memoryview, base: int, check_name: Callable[[str], str | None],
         partition: str = "TBE_KERNELS") -> dict[str, memoryview]:
    """name -> binary (zero-copy) of every item; OmError for anything that does not fit."""
    buf = memoryview(data)
    n = len(buf)
    pos = 0
    kernels: dict[str, memoryview] = {}
    while pos < n:
        where = f"{partition} item {len(kernels)}"
        if n - pos < ITEM_HEAD_SIZE:
            raise OmError(f"{n - pos} bytes left, an item head needs {ITEM_HEAD_SIZE}", where, base + pos)
        magic, name_len, bin_len = _HEAD.unpack_from(buf, pos)
        if magic != KERNEL_MAGIC:
            raise OmError(f"0x{magic:08x}, expected 0x{KERNEL_MAGIC:08x}", f"{where}.magic", base + pos)
        left = n - pos - ITEM_HEAD_SIZE
        if name_len == 0 or name_len > left:
            raise OmError(f"{name_len} bytes, {left} left (empty or past the end)", f"{where}.name_len", base + pos + 4)
        if bin_len == 0 or bin_len > left - name_len:
            raise OmError(f"{bin_len} bytes, {left - name_len} left (empty or past the end)", f"{where}.bin_len",
                          base + pos + 8)
        start = pos + ITEM_HEAD_SIZE
        try:
            name = bytes(buf[start:start + name_len]).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise OmError(f"name is not UTF-8: {exc}", f"{where}.name", base + start) from None
        problem = check_name(name)
        if problem:
            raise OmError(f"{name!r} {problem}", f"{where}.name", base + start)
        if name in kernels:
            raise OmError(f"{name!r} appears twice", f"{where}.name", base + start)
        kernels[name] = buf[start + name_len:start + name_len + bin_len]
        pos = start + name_len + bin_len
    return kernels
