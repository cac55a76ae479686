"""Item tables of our own partitions: TBE_KERNELS (format 1), TILING_DATA and WEIGHTS_DATA
(formats 1 and 2; format 3 writes GE's layouts, ge_tiling.py and ge_weights.py). Still read.

All three share one length-checked layout (docs/om-format.md):

    u32 num
    per item: {u32 magic; u16 name_len; u16 reserved (0); u32 meta_len; u32 data_len}  (16 bytes)
              name (UTF-8), meta (UTF-8 JSON object), data

magic: TBE_KERNELS 0x4C4E524B ("KRNL"), TILING_DATA 0x544C4954 ("TILT"), WEIGHTS_DATA 0x54484757 ("WGHT").
TBE_KERNELS: name = `<package>:<BinaryName>`, meta = the kernel's descriptor JSON, data = the kernel
binary (non-empty). TILING_DATA: name = node name, meta = {block_dim, tiling_key, workspace_size,
full_key}, data = tiling bytes. WEIGHTS_DATA: name = tensor name, meta = {dtype, shape}, data = raw.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from typing import Any, Sequence

from opbuild.nonfinite import dumps
from opbuild.om.errors import OmError
from opbuild.om.so_store import check_so_name

KERNEL_MAGIC = 0x4C4E524B
TILING_MAGIC = 0x544C4954
WEIGHT_MAGIC = 0x54484757
_HEAD = struct.Struct("<IHHII")
ITEM_HEAD_SIZE = _HEAD.size


@dataclass
class Item:
    name: str
    meta: dict[str, Any]
    data: bytes | memoryview = field(repr=False)


def build(items: Sequence[Item], magic: int, what: str, allow_empty: bool = True) -> bytes:
    chunks: list[Any] = [struct.pack("<I", len(items))]
    for i, it in enumerate(items):
        name = it.name.encode("utf-8")
        meta = dumps(it.meta, sort_keys=True, separators=(",", ":")).encode("utf-8")
        if len(name) > 0xFFFF or len(meta) > 0xFFFFFFFF or len(it.data) > 0xFFFFFFFF:
            raise OmError("item too large", f"{what} item {i}")
        if not allow_empty and not len(it.data):
            raise OmError(f"{it.name}: empty data", f"{what} item {i}")
        chunks += [_HEAD.pack(magic, len(name), 0, len(meta), len(it.data)), name, meta, it.data]
    return b"".join(chunks)


def load(data: bytes | memoryview, magic: int, what: str, base: int = 0, allow_empty: bool = True,
         check_name=check_so_name) -> list[Item]:
    buf = memoryview(data)
    n = len(buf)
    if n < 4:
        raise OmError(f"partition has {n} bytes, num needs 4", f"{what}.num", base)
    (num,) = struct.unpack_from("<I", buf, 0)
    if num > (n - 4) // (ITEM_HEAD_SIZE + 1 + 2):
        raise OmError(f"{num} items cannot fit in {n - 4} bytes", f"{what}.num", base)
    pos = 4
    items: list[Item] = []
    names: set[str] = set()
    for i in range(num):
        where = f"{what} item {i}"
        if n - pos < ITEM_HEAD_SIZE:
            raise OmError(f"num says {num} items, the partition ends after {i}", f"{what}.num", base)
        m, name_len, reserved, meta_len, data_len = _HEAD.unpack_from(buf, pos)
        if m != magic:
            raise OmError(f"0x{m:08x}, expected 0x{magic:08x}", f"{where}.magic", base + pos)
        if reserved != 0:
            raise OmError(f"{reserved}, expected 0", f"{where}.reserved", base + pos + 6)
        if name_len == 0:
            raise OmError("0 (empty name)", f"{where}.name_len", base + pos + 4)
        if data_len == 0 and not allow_empty:
            raise OmError("0 (empty data)", f"{where}.data_len", base + pos + 12)
        body = pos + ITEM_HEAD_SIZE
        left = n - body
        if name_len > left:
            raise OmError(f"{name_len} bytes, only {left} left", f"{where}.name_len", base + pos + 4)
        if meta_len > left - name_len:
            raise OmError(f"{meta_len} bytes, only {left - name_len} left", f"{where}.meta_len", base + pos + 8)
        if data_len > left - name_len - meta_len:
            raise OmError(f"{data_len} bytes, only {left - name_len - meta_len} left", f"{where}.data_len", base + pos + 12)
        try:
            name = bytes(buf[body:body + name_len]).decode("utf-8")
            meta = json.loads(bytes(buf[body + name_len:body + name_len + meta_len]).decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise OmError(f"name or meta unreadable: {exc}", where, base + body) from None
        if not isinstance(meta, dict):
            raise OmError("meta is not a JSON object", f"{where}.meta", base + body + name_len)
        problem = check_name(name) if check_name else None
        if problem:
            raise OmError(f"{name!r} {problem}", f"{where}.name", base + body)
        if name in names:
            raise OmError(f"{name!r} appears twice", f"{where}.name", base + body)
        names.add(name)
        start = body + name_len + meta_len
        items.append(Item(name, meta, buf[start:start + data_len]))
        pos = start + data_len
    if pos != n:
        raise OmError(f"{n - pos} bytes after the last of {num} items (num disagrees with the items)", f"{what}.num", base)
    return items
