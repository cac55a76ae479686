"""TILING_DATA in GE's layout (the host-resource serialization GE's model loader reads).

Little-endian, no padding between records (docs/om-format.md, "TILING_DATA"):

    TilingHeader  {u32 magic 0xDD776EFE; u32 version 2; u32 data_len}   (12 bytes; data_len: bytes after it)
    records       {u8 type; u32 len; value[len]} back to back, one group of three per tiling result:
      type 0  OpRunInfoMsg: u64 tiling_key @0, u64 tiling_size @8, u32 block_dim @16, u8 clear_atomic @20,
              i32 tiling_cond @24, u32 schedule_mode @28, u32 workspace_num @32, u32 local_memory_size @36,
              u32 reserved[3] @40, then i64 workspace[workspace_num] @56
      type 1  the tiling bytes (len = tiling_size)
      type 2  the tiling ids that share this result: i64 each, `n | resource type << 56` (resource
              type 0: the AI Core launch of the op)

How a node finds its result is GE's rule (TilingData.find): version 2, the node attribute
`_op_tiling_ids` (a list of ints) names its ids; version 1, the id is the node's `OpDef.id`.
opbuild writes version 2 with `n` = the node's `OpDef.id` and `_op_tiling_ids` on the node, so
both rules find the same record. What opbuild needs to run a static node is all in the records:
block_dim, tiling_key, the one workspace size and the tiling bytes (the selected key is the
node's `_opbuild_selected`). `load` checks every length, type and count before it uses it and
never reads outside the partition.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Iterable

from opbuild.om.errors import OmError

MAGIC = 0xDD776EFE
VERSION = 2
VERSIONS_READ = (1, 2)
"""GE's version 1 used the bare op id as the tiling id: with resource type 0 the ids are the same."""
_HEADER = struct.Struct("<III")
_TL = struct.Struct("<BI")
_RUN_INFO = struct.Struct("<QQIB3xiIIIIII4x")
RUN_INFO_SIZE = _RUN_INFO.size  # 56
OP_RUN_INFO, TILING_BYTES, TILING_IDS = 0, 1, 2
AICORE = 0
"""The resource type (bits 56..63 of a tiling id) of an op's own launch (GE's kAiCore)."""
_ID_MASK = (1 << 56) - 1


def tiling_id(op_id: int, resource: int = AICORE) -> int:
    """GE's tiling id of an op: its id in the low 56 bits, the resource type above."""
    return (op_id & _ID_MASK) | (resource << 56)


@dataclass
class Tiling:
    """One tiling result: what a static node launches with."""

    block_dim: int
    tiling_key: int
    workspace_size: int
    data: bytes | memoryview = field(repr=False)
    ids: list[int] = field(default_factory=list)


@dataclass
class TilingData:
    """A parsed TILING_DATA partition: its header version and the results by tiling id."""

    version: int
    by_id: dict[int, Tiling]

    def find(self, op_id: int, node_ids: Iterable[int]) -> Tiling | None:
        """The AI Core tiling result of a node (GE's lookup): by its `_op_tiling_ids` in version
        2, by its op id in version 1."""
        if self.version == 1:
            return self.by_id.get(tiling_id(op_id))
        for tid in node_ids:
            if (tid >> 56) & 0xFF == AICORE and tid in self.by_id:
                return self.by_id[tid]
        return None


def build(tilings: Iterable[Tiling]) -> bytes:
    """The TILING_DATA partition of `tilings` (each with at least one id)."""
    body: list[bytes | memoryview] = []
    for t in tilings:
        workspaces = [t.workspace_size] if t.workspace_size else []
        msg = _RUN_INFO.pack(t.tiling_key, len(t.data), t.block_dim, 0, 0, 0, len(workspaces), 0, 0, 0, 0)
        msg += struct.pack(f"<{len(workspaces)}q", *workspaces)
        body += [_TL.pack(OP_RUN_INFO, len(msg)), msg, _TL.pack(TILING_BYTES, len(t.data)), t.data,
                 _TL.pack(TILING_IDS, 8 * len(t.ids)), struct.pack(f"<{len(t.ids)}q", *t.ids)]
    size = sum(len(b) for b in body)
    if size > 0xFFFFFFFF - _HEADER.size:
        raise OmError(f"{size} bytes of tiling records, at most 4 GiB", "TILING_DATA")
    return b"".join([_HEADER.pack(MAGIC, VERSION, size), *body])


def is_ge_layout(data: bytes | memoryview) -> bool:
    """Whether a TILING_DATA partition starts with GE's TilingHeader magic."""
    return len(data) >= 4 and struct.unpack_from("<I", data, 0)[0] == MAGIC


def load(data: bytes | memoryview, base: int = 0) -> TilingData:
    """The results by tiling id; OmError naming the field and file offset of any problem."""
    buf = memoryview(data)
    n = len(buf)
    where = "TILING_DATA"
    if n < _HEADER.size:
        raise OmError(f"partition has {n} bytes, the TilingHeader needs {_HEADER.size}", f"{where}.header", base)
    magic, version, data_len = _HEADER.unpack_from(buf, 0)
    if magic != MAGIC:
        raise OmError(f"0x{magic:08x}, expected 0x{MAGIC:08x}", f"{where}.magic", base)
    if version not in VERSIONS_READ:
        raise OmError(f"{version}, expected one of {list(VERSIONS_READ)}", f"{where}.version", base + 4)
    if data_len != n - _HEADER.size:
        raise OmError(f"{data_len}, but {n - _HEADER.size} bytes follow the header", f"{where}.data_len", base + 8)
    pos = _HEADER.size
    out: dict[int, Tiling] = {}
    current: Tiling | None = None
    expect = OP_RUN_INFO
    size = 0
    while pos < n:
        rec = f"{where} record at {pos}"
        if n - pos < _TL.size:
            raise OmError(f"{n - pos} bytes left, a record head needs {_TL.size}", rec, base + pos)
        rtype, length = _TL.unpack_from(buf, pos)
        vpos = pos + _TL.size
        if rtype != expect:
            names = {OP_RUN_INFO: "OpRunInfoMsg (0)", TILING_BYTES: "tiling data (1)", TILING_IDS: "tiling ids (2)"}
            raise OmError(f"type {rtype}, expected {names[expect]} (records come in groups 0, 1, 2)", f"{rec}.type",
                          base + pos)
        if length > n - vpos:
            raise OmError(f"{length} bytes, only {n - vpos} left", f"{rec}.len", base + pos + 1)
        value = buf[vpos:vpos + length]
        if rtype == OP_RUN_INFO:
            if length < RUN_INFO_SIZE:
                raise OmError(f"{length} bytes, OpRunInfoMsg needs {RUN_INFO_SIZE}", f"{rec}.len", base + pos + 1)
            key, size, block_dim, _clear, _cond, _mode, ws_num, _local, *_ = _RUN_INFO.unpack_from(value, 0)
            if length != RUN_INFO_SIZE + 8 * ws_num:
                raise OmError(f"{length} bytes, but workspace_num {ws_num} needs {RUN_INFO_SIZE + 8 * ws_num}",
                              f"{rec}.workspace_num", base + vpos + 32)
            if ws_num > 1:
                raise OmError(f"{ws_num} workspaces: opbuild's runtime gives an op one workspace",
                              f"{rec}.workspace_num", base + vpos + 32)
            workspace = struct.unpack_from("<q", value, RUN_INFO_SIZE)[0] if ws_num else 0
            if workspace < 0:
                raise OmError(f"workspace size {workspace} is negative", f"{rec}.workspace", base + vpos + RUN_INFO_SIZE)
            current = Tiling(block_dim, key, workspace, b"")
            expect = TILING_BYTES
        elif rtype == TILING_BYTES:
            if length != size:
                raise OmError(f"{length} bytes, but the OpRunInfoMsg before says tiling_size {size}", f"{rec}.len",
                              base + pos + 1)
            assert current is not None
            current.data = value
            expect = TILING_IDS
        else:
            if length % 8 or not length:
                raise OmError(f"{length} bytes: tiling ids are one or more 8-byte integers", f"{rec}.len", base + pos + 1)
            assert current is not None
            current.ids = list(struct.unpack_from(f"<{length // 8}q", value, 0))
            for tid in current.ids:
                if tid in out:
                    raise OmError(f"tiling id 0x{tid:x} appears twice", f"{rec}.ids", base + vpos)
                out[tid] = current
            current, expect = None, OP_RUN_INFO
        pos = vpos + length
    if expect != OP_RUN_INFO:
        raise OmError("the partition ends inside a record group (0, 1, 2)", where, base + n)
    return TilingData(version, out)
