"""The GE offline-model container: ModelFileHeader, partition table, partitions.

Byte layouts (little-endian) are GE's, as docs/om-format.md describes them:

* ModelFileHeader, 256 bytes (offsets in `HEADER_FIELDS`).
* One ModelPartitionTable: `u32 num` + 4 bytes padding, then `num` 24-byte entries
  `{u32 type; u32 pad; u64 mem_offset; u64 mem_size}`; `mem_offset` is relative to the end of the
  table and partitions follow the table back to back, in table order.

`read_om` checks every field before it uses it and never reads outside the buffer; partitions are
returned as zero-copy memoryviews of the buffer.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field
from typing import Iterable

from opbuild.om.errors import OmError

MAGIC = 0x444F4D49
HEADER_SIZE = 256
MODEL_VERSION = 0x20000000
TABLE_HEAD = 8
ENTRY_SIZE = 24
MAX_PARTITIONS = 64

MODEL_DEF, WEIGHTS_DATA, TASK_INFO, TBE_KERNELS, CUST_AICPU_KERNELS, SO_BINS, TILING_DATA = 0, 1, 2, 3, 4, 5, 12
PARTITION_NAMES = {MODEL_DEF: "MODEL_DEF", WEIGHTS_DATA: "WEIGHTS_DATA", TBE_KERNELS: "TBE_KERNELS",
                   CUST_AICPU_KERNELS: "CUST_AICPU_KERNELS", SO_BINS: "SO_BINS", TILING_DATA: "TILING_DATA"}
"""The partition types this implementation writes and reads."""
GE_PARTITION_NAMES = {
    **PARTITION_NAMES, TASK_INFO: "TASK_INFO", 6: "FLOW_MODEL",
    7: "FLOW_SUBMODEL", 8: "MODEL_INOUT_INFO", 9: "STATIC_TASK_DESC", 10: "DYNAMIC_TASK_DESC", 11: "TASK_PARAM",
    20: "PRE_MODEL_DESC", 21: "PRE_MODEL_SQE", 22: "PRE_KERNEL_ARGS", 23: "PRE_MODEL_DESC_EXTEND",
    24: "BUNDLE_MODEL_INFO", 25: "BUNDLE_MODEL_VAR_INFO", 26: "CUSTOM_OPS",
}
"""Every ModelPartitionType of GE. A file may hold any of them (GE's own files carry TASK_INFO);
the reader checks their bounds and ignores those not in PARTITION_NAMES. Other numbers are
rejected."""
NO_CHECKSUM = b"\0" * 64
"""A checksum field of zeros: the writer computed none (GE's files). Not verified."""

# name: (struct format, offset)
HEADER_FIELDS: dict[str, tuple[str, int]] = {
    "magic": ("<I", 0), "headsize": ("<I", 4), "version": ("<I", 8), "checksum": ("64s", 12),
    "length": ("<I", 76), "is_encrypt": ("<B", 80), "is_checksum": ("<B", 81), "modeltype": ("<B", 82),
    "genmode": ("<B", 83), "name": ("32s", 84), "ops": ("<I", 116), "userdefineinfo": ("32s", 120),
    "om_ir_version": ("<I", 152), "model_num": ("<I", 156), "platform_version": ("20s", 160),
    "platform_type": ("<B", 180), "padd": ("3s", 181), "model_length": ("<Q", 184),
    "need_check_os_cpu_info": ("<B", 192), "is_unknow_model": ("<B", 193), "reserved": ("62s", 194),
}
_PART_ENTRY = struct.Struct("<IIQQ")


@dataclass
class Header:
    """The ModelFileHeader fields (bytes fields as bytes, fixed length)."""

    magic: int = MAGIC
    headsize: int = HEADER_SIZE
    version: int = MODEL_VERSION
    checksum: bytes = b"\0" * 64
    length: int = 0
    is_encrypt: int = 0
    is_checksum: int = 0  # GE's CHECK (0) / UNCHECK (1); read_om verifies checksum[0:32] whatever it says
    modeltype: int = 1
    genmode: int = 0
    name: bytes = b"\0" * 32
    ops: int = 0
    userdefineinfo: bytes = b"\0" * 32
    om_ir_version: int = 0
    model_num: int = 1
    platform_version: bytes = b"\0" * 20
    platform_type: int = 1
    padd: bytes = b"\0\0\0"
    model_length: int = 0
    need_check_os_cpu_info: int = 0
    is_unknow_model: int = 0
    reserved: bytes = b"\0" * 62

    def pack(self) -> bytes:
        out = bytearray(HEADER_SIZE)
        for name, (fmt, off) in HEADER_FIELDS.items():
            struct.pack_into(fmt, out, off, getattr(self, name))
        return bytes(out)

    @classmethod
    def unpack(cls, buf: memoryview) -> "Header":
        return cls(**{name: struct.unpack_from(fmt, buf, off)[0] for name, (fmt, off) in HEADER_FIELDS.items()})

    def text(self, name: str) -> str:
        return getattr(self, name).split(b"\0", 1)[0].decode("utf-8", "replace")


@dataclass
class Partition:
    type: int
    offset: int  # relative to the end of the partition table
    size: int
    data: memoryview = field(repr=False)
    file_offset: int = 0  # absolute offset in the file

    @property
    def name(self) -> str:
        return GE_PARTITION_NAMES.get(self.type, f"type {self.type}")


@dataclass
class OmFile:
    header: Header
    partitions: list[Partition]
    table_offset: int
    data_offset: int

    def get(self, ptype: int) -> Partition | None:
        for p in self.partitions:
            if p.type == ptype:
                return p
        return None

    def require(self, ptype: int) -> Partition:
        """A partition every model has (read_om refuses a file without MODEL_DEF)."""
        found = self.get(ptype)
        if found is None:
            raise OmError(f"no {PARTITION_NAMES.get(ptype, f'type {ptype}')} partition", "partition_table",
                          self.table_offset)
        return found


def _fixed(text: str, size: int, what: str) -> bytes:
    raw = text.encode("utf-8")
    if len(raw) > size:
        raw = raw[:size]
    return raw.ljust(size, b"\0")


def write_om(partitions: Iterable[tuple[int, bytes | bytearray | memoryview]], *, name: str = "", ops: int = 0,
             platform_version: str = "", need_check_os_cpu_info: bool = False, is_unknow_model: bool = False,
             checksum: bool = True) -> bytes:
    """The bytes of an .om holding `partitions` (type, payload) in the given order.

    checksum[0:32] is always the sha256 of the body: readers verify it whatever the header flags
    say. checksum=False only writes GE's is_checksum=1 (UNCHECK) flag byte.
    """
    # a payload may be one bytes-like object or a list of chunks (written without joining first)
    parts = [(t, list(p) if isinstance(p, (list, tuple)) else [p]) for t, p in partitions]
    if len(parts) > MAX_PARTITIONS:
        raise OmError(f"{len(parts)} partitions, at most {MAX_PARTITIONS}", "partition_table.num")
    seen = set()
    for ptype, _ in parts:
        if ptype not in PARTITION_NAMES:
            raise OmError(f"unsupported partition type {ptype}", "partition_table")
        if ptype in seen:
            raise OmError(f"partition {PARTITION_NAMES[ptype]} given twice", "partition_table")
        seen.add(ptype)
    table = bytearray(struct.pack("<II", len(parts), 0))
    offset = 0
    for ptype, chunks in parts:
        size = sum(len(c) for c in chunks)
        table += _PART_ENTRY.pack(ptype, 0, offset, size)
        offset += size
    total = len(table) + offset
    h = hashlib.sha256(table)
    for _, chunks in parts:
        for c in chunks:
            h.update(c)
    digest = h.digest()
    header = Header(
        checksum=digest.ljust(64, b"\0"), length=total if total <= 0xFFFFFFFF else 0, is_checksum=0 if checksum else 1,
        name=_fixed(name, 32, "name"), ops=ops, platform_version=_fixed(platform_version, 20, "platform_version"),
        model_length=total, need_check_os_cpu_info=1 if need_check_os_cpu_info else 0,
        is_unknow_model=1 if is_unknow_model else 0,
    )
    return b"".join([header.pack(), table, *(c for _, chunks in parts for c in chunks)])


def _bad(field: str, offset: int, message: str) -> OmError:
    return OmError(message, field, offset)


def read_om(data: bytes | bytearray | memoryview, *, verify_checksum: bool = True) -> OmFile:
    """Parse an .om buffer; OmError naming the field and its offset for anything malformed.

    The sha256 in checksum[0:32] covers the partition table and every partition; it is verified
    whatever `is_checksum` says (a header flag may add checks, never remove them: the flag is
    part of the unverified header). A checksum field of 64 zero bytes is what GE writes when it
    computes none: such a file is read unverified, as GE reads it (integrity is then the
    caller's to establish; loading code still needs trust). `verify_checksum=False` is for benchmarks of the parser only.
    """
    buf = memoryview(data).cast("B") if not isinstance(data, memoryview) or data.format != "B" else data
    n = len(buf)
    if n < HEADER_SIZE:
        raise _bad("ModelFileHeader", 0, f"file has {n} bytes, the header alone needs {HEADER_SIZE}")
    h = Header.unpack(buf)
    off = HEADER_FIELDS
    if h.magic != MAGIC:
        raise _bad("magic", off["magic"][1], f"0x{h.magic:08x}, expected 0x{MAGIC:08x}")
    if h.headsize != HEADER_SIZE:
        raise _bad("headsize", off["headsize"][1], f"{h.headsize}, expected {HEADER_SIZE}")
    if h.version != MODEL_VERSION:
        raise _bad("version", off["version"][1], f"0x{h.version:08x}, expected 0x{MODEL_VERSION:08x}")
    if h.is_encrypt != 0:
        raise _bad("is_encrypt", off["is_encrypt"][1], f"{h.is_encrypt}: encrypted models are not supported")
    if h.is_checksum not in (0, 1):
        raise _bad("is_checksum", off["is_checksum"][1], f"{h.is_checksum}, expected 0 (check) or 1 (uncheck)")
    if h.model_num != 1:
        raise _bad("model_num", off["model_num"][1], f"{h.model_num}, only single-model files (1) are supported")
    if h.need_check_os_cpu_info not in (0, 1):
        raise _bad("need_check_os_cpu_info", off["need_check_os_cpu_info"][1], f"{h.need_check_os_cpu_info}, expected 0 or 1")
    if h.is_unknow_model not in (0, 1):
        raise _bad("is_unknow_model", off["is_unknow_model"][1], f"{h.is_unknow_model}, expected 0 or 1")
    body_len = n - HEADER_SIZE
    if h.model_length != 0:
        if h.model_length != body_len:
            raise _bad("model_length", off["model_length"][1],
                       f"{h.model_length}, but the file has {body_len} bytes after the header (truncated or extended?)")
        if h.length not in (0, body_len if body_len <= 0xFFFFFFFF else 0):
            raise _bad("length", off["length"][1], f"{h.length} disagrees with model_length {h.model_length}")
    elif h.length != body_len:
        raise _bad("length", off["length"][1], f"{h.length}, but the file has {body_len} bytes after the header")
    if verify_checksum and h.checksum != NO_CHECKSUM:
        digest = hashlib.sha256(buf[HEADER_SIZE:]).digest()
        if h.checksum[:32] != digest:
            note = " (is_checksum=1 does not turn the check off)" if h.is_checksum else ""
            raise _bad("checksum", off["checksum"][1], f"sha256 of the model data does not match (file corrupted){note}")
    pos = HEADER_SIZE
    if body_len < TABLE_HEAD:
        raise _bad("partition_table.num", pos, f"{body_len} bytes after the header, the table head needs {TABLE_HEAD}")
    num, pad = struct.unpack_from("<II", buf, pos)
    if num == 0 or num > MAX_PARTITIONS:
        raise _bad("partition_table.num", pos, f"{num} partitions, expected 1..{MAX_PARTITIONS}")
    table_end = pos + TABLE_HEAD + ENTRY_SIZE * num
    if table_end > n:
        raise _bad("partition_table.num", pos, f"{num} entries need {table_end - pos} bytes, only {n - pos} left")
    data_offset = table_end
    expect = 0
    parts: list[Partition] = []
    seen: set[int] = set()
    for i in range(num):
        epos = pos + TABLE_HEAD + ENTRY_SIZE * i
        ptype, _pad, moff, msize = _PART_ENTRY.unpack_from(buf, epos)
        if ptype not in GE_PARTITION_NAMES:
            raise _bad(f"partition[{i}].type", epos, f"unknown partition type {ptype}")
        if ptype in seen:
            raise _bad(f"partition[{i}].type", epos, f"partition {GE_PARTITION_NAMES[ptype]} appears twice")
        seen.add(ptype)
        if moff != expect:
            raise _bad(f"partition[{i}].mem_offset", epos + 8,
                       f"{moff}, expected {expect} (partitions follow each other back to back: overlapping or gap)")
        if msize > n - data_offset - moff:
            raise _bad(f"partition[{i}].mem_size", epos + 16,
                       f"{msize} bytes at offset {moff} run past the end of the file ({n - data_offset - moff} bytes left)")
        start = data_offset + moff
        parts.append(Partition(ptype, moff, msize, buf[start:start + msize], start))
        expect = moff + msize
    if data_offset + expect != n:
        raise _bad("partition_table", pos, f"partitions end at {data_offset + expect}, the file at {n} (trailing bytes)")
    if MODEL_DEF not in seen:
        raise _bad("partition_table", pos, "no MODEL_DEF partition")
    return OmFile(h, parts, pos, data_offset)


def reseal(data: bytes | bytearray) -> bytes:
    """`data` with length fields and checksum recomputed over its current body (tests, tools)."""
    out = bytearray(data)
    if len(out) < HEADER_SIZE:
        return bytes(out)
    body = memoryview(out)[HEADER_SIZE:]
    struct.pack_into("<Q", out, HEADER_FIELDS["model_length"][1], len(body))
    struct.pack_into("<I", out, HEADER_FIELDS["length"][1], len(body) if len(body) <= 0xFFFFFFFF else 0)
    struct.pack_into("32s", out, HEADER_FIELDS["checksum"][1], hashlib.sha256(body).digest())
    return bytes(out)
