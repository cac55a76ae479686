"""The CUST_AICPU_KERNELS partition: GE's KernelStore layout.

GE serializes a KernelStore (CustAICPUKernelStore for this partition) as items back to back, no
count: per item a 12-byte head `{u32 magic = 0x5d776efd; u32 name_len; u32 bin_len}`
(KernelStoreItemHead, kKernelItemMagic), then the name, then the binary. Here each item is one
package's `libcust_aicpu_kernels.so`, named `<package>:libcust_aicpu_kernels.so` (like the
TBE_KERNELS items `<package>:<binary>`), once per package however many nodes use it.

`load` checks every length against the partition and never reads outside it.
"""

from __future__ import annotations

import struct
from typing import Callable

from opbuild.om.errors import OmError

KERNEL_ITEM_MAGIC = 0x5D776EFD
_HEAD = struct.Struct("<III")


def build(items: dict[str, bytes]) -> bytes:
    """The partition holding `items` (name -> binary), in name order."""
    chunks = []
    for name in sorted(items):
        raw, data = name.encode("utf-8"), items[name]
        if not data:
            raise OmError(f"{name}: empty binary", "CUST_AICPU_KERNELS")
        chunks += [_HEAD.pack(KERNEL_ITEM_MAGIC, len(raw), len(data)), raw, data]
    return b"".join(chunks)


def load(data: bytes | memoryview, base: int = 0, check_name: Callable[[str], str | None] | None = None
         ) -> dict[str, memoryview]:
    """name -> binary (views of `data`); OmError naming the item, field and file offset of a problem."""
    buf = memoryview(data)
    n = len(buf)
    pos = 0
    items: dict[str, memoryview] = {}
    while pos < n:
        where = f"CUST_AICPU_KERNELS item {len(items)}"
        if n - pos < _HEAD.size:
            raise OmError(f"{n - pos} trailing bytes, an item head needs {_HEAD.size}", where, base + pos)
        magic, name_len, bin_len = _HEAD.unpack_from(buf, pos)
        if magic != KERNEL_ITEM_MAGIC:
            raise OmError(f"0x{magic:08x}, expected 0x{KERNEL_ITEM_MAGIC:08x}", f"{where}.magic", base + pos)
        body = pos + _HEAD.size
        if name_len == 0 or name_len > n - body:
            raise OmError(f"{name_len} bytes, {n - body} left", f"{where}.name_len", base + pos + 4)
        if bin_len == 0 or bin_len > n - body - name_len:
            raise OmError(f"{bin_len} bytes, {n - body - name_len} left", f"{where}.bin_len", base + pos + 8)
        try:
            name = bytes(buf[body:body + name_len]).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise OmError(f"name is not UTF-8: {exc}", f"{where}.name", base + body) from None
        problem = check_name(name) if check_name else None
        if problem:
            raise OmError(f"{name!r} {problem}", f"{where}.name", base + body)
        if name in items:
            raise OmError(f"{name!r} appears twice", f"{where}.name", base + body)
        items[name] = buf[body + name_len:body + name_len + bin_len]
        pos = body + name_len + bin_len
    return items
