"""OpSoStore: the SO_BINS partition (GE `op_so_store.{h,cc}` byte format).

    SoStoreHead      u32 so_num
    per so:          SoStoreItemHead {u32 magic 0x5D776EFD; u16 so_name_len; u16 so_bin_type;
                                      u32 vendor_name_len; u32 bin_len}   (16 bytes)
                     so_name, vendor_name, binary   (no padding, no NUL terminators)

`load` checks every length against the bytes left before slicing, and returns the binaries as
zero-copy memoryviews of the partition.
"""

from __future__ import annotations

import enum
import hashlib
import struct
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from opbuild.abi.package_layout import vendor_name_problem
from opbuild.om.errors import OmError

SO_MAGIC = 0x5D776EFD
_HEAD = struct.Struct("<IHHII")
ITEM_HEAD_SIZE = _HEAD.size  # 16
MAX_SO_NUM = 1 << 16


class SoBinType(enum.IntEnum):
    SpaceRegistry = 0
    OpMasterDevice = 1
    Autofuse = 2


FLAG_BITS = {SoBinType.SpaceRegistry: 0x8000, SoBinType.OpMasterDevice: 0x4000, SoBinType.Autofuse: 0x2000}
"""so_in_om_flag bit of each type (bit 15, 14, 13)."""
ALL_FLAGS = 0xE000


def flag_of(types: Iterable[int]) -> int:
    flag = 0
    for t in types:
        flag |= FLAG_BITS[SoBinType(t)]
    return flag


def flag_types(flag: int) -> list[SoBinType]:
    return [t for t, bit in FLAG_BITS.items() if flag & bit]


def check_so_name(name: str) -> str | None:
    """Why `name` is not a usable so name (None when it is): a plain file name."""
    if not name:
        return "is empty"
    if "/" in name or "\\" in name or "\0" in name:
        return "contains a path separator or NUL"
    if ".." in name:
        return "contains '..'"
    if not name.isprintable():
        return "contains non-printable characters"
    return None


def check_vendor(vendor: str) -> str | None:
    """Why `vendor` is not `built-in` or `vendors/<name>` (None when it is)."""
    if vendor == "built-in":
        return None
    head, sep, rest = vendor.partition("/")
    if head != "vendors" or not sep:
        return "is neither 'built-in' nor 'vendors/<name>'"
    problem = vendor_name_problem(rest)
    return f"vendor name {problem}" if problem else None


@dataclass
class OpSoBin:
    """One .so of the store: file name, vendor (`built-in` or `vendors/<name>`), bytes, type."""

    name: str
    vendor: str
    data: bytes | memoryview = field(repr=False)
    type: SoBinType

    @property
    def size(self) -> int:
        return len(self.data)

    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def build(bins: Sequence[OpSoBin]) -> bytes:
    """The SO_BINS payload of `bins`, in order."""
    return b"".join(build_chunks(bins))


def build_chunks(bins: Sequence[OpSoBin]) -> list[bytes | memoryview]:
    """The SO_BINS payload as a list of chunks (binaries not copied; format.write_om takes it)."""
    if len(bins) > MAX_SO_NUM:
        raise OmError(f"{len(bins)} .so files, at most {MAX_SO_NUM}", "SO_BINS.so_num")
    chunks: list[bytes | memoryview] = [struct.pack("<I", len(bins))]
    for i, b in enumerate(bins):
        name = b.name.encode("utf-8")
        vendor = b.vendor.encode("utf-8")
        problem = check_so_name(b.name)
        if problem:
            raise OmError(f"so_name {b.name!r} {problem}", f"SO_BINS item {i}")
        problem = check_vendor(b.vendor)
        if problem:
            raise OmError(f"vendor_name {b.vendor!r} {problem}", f"SO_BINS item {i}")
        if len(name) > 0xFFFF:
            raise OmError(f"so_name is {len(name)} bytes, at most 65535", f"SO_BINS item {i}")
        if not len(b.data):
            raise OmError(f"{b.name}: empty binary", f"SO_BINS item {i}")
        if len(b.data) > 0xFFFFFFFF or len(vendor) > 0xFFFFFFFF:
            raise OmError(f"{b.name}: binary over 4 GiB", f"SO_BINS item {i}")
        chunks.append(_HEAD.pack(SO_MAGIC, len(name), int(b.type), len(vendor), len(b.data)))
        chunks.append(name)
        chunks.append(vendor)
        chunks.append(b.data)
    return chunks


def load(data: bytes | memoryview, base: int = 0) -> list[OpSoBin]:
    """Parse an SO_BINS payload; `base` is its offset in the file (for error messages)."""
    buf = memoryview(data)
    n = len(buf)
    if n < 4:
        raise OmError(f"partition has {n} bytes, so_num needs 4", "SO_BINS.so_num", base)
    (so_num,) = struct.unpack_from("<I", buf, 0)
    # every item needs at least its head, a 1-byte name and a 1-byte binary
    if so_num > (n - 4) // (ITEM_HEAD_SIZE + 2):
        raise OmError(f"{so_num} items cannot fit in {n - 4} bytes", "SO_BINS.so_num", base)
    pos = 4
    bins: list[OpSoBin] = []
    for i in range(so_num):
        where = f"SO_BINS item {i}"
        if n - pos < ITEM_HEAD_SIZE:
            raise OmError(f"so_num says {so_num} items, the partition ends after {i}", "SO_BINS.so_num", base)
        magic, name_len, so_type, vendor_len, bin_len = _HEAD.unpack_from(buf, pos)
        if magic != SO_MAGIC:
            raise OmError(f"0x{magic:08x}, expected 0x{SO_MAGIC:08x}", f"{where}.magic", base + pos)
        if so_type not in SoBinType._value2member_map_:
            raise OmError(f"unknown so_bin_type {so_type}", f"{where}.so_bin_type", base + pos + 6)
        if name_len == 0:
            raise OmError("0 (empty name)", f"{where}.so_name_len", base + pos + 4)
        if bin_len == 0:
            raise OmError("0 (empty binary)", f"{where}.bin_len", base + pos + 12)
        body = pos + ITEM_HEAD_SIZE
        left = n - body
        if name_len > left:
            raise OmError(f"{name_len} bytes, only {left} left", f"{where}.so_name_len", base + pos + 4)
        if vendor_len > left - name_len:
            raise OmError(f"{vendor_len} bytes, only {left - name_len} left", f"{where}.vendor_name_len", base + pos + 8)
        if bin_len > left - name_len - vendor_len:
            raise OmError(f"{bin_len} bytes, only {left - name_len - vendor_len} left", f"{where}.bin_len", base + pos + 12)
        try:
            name = bytes(buf[body:body + name_len]).decode("utf-8")
            vendor = bytes(buf[body + name_len:body + name_len + vendor_len]).decode("utf-8")
        except UnicodeDecodeError:
            raise OmError("name or vendor is not UTF-8", where, base + body) from None
        problem = check_so_name(name)
        if problem:
            raise OmError(f"{name!r} {problem}", f"{where}.so_name", base + body)
        problem = check_vendor(vendor)
        if problem:
            raise OmError(f"{vendor!r} {problem}", f"{where}.vendor_name", base + body + name_len)
        start = body + name_len + vendor_len
        bins.append(OpSoBin(name, vendor, buf[start:start + bin_len], SoBinType(so_type)))
        pos = start + bin_len
    if pos != n:
        raise OmError(f"{n - pos} bytes after the last of {so_num} items (so_num disagrees with the items)",
                      "SO_BINS.so_num", base)
    return bins
