"""Round trips and bad input of every .om structure (header, partition table, SO_BINS, tables)."""

from __future__ import annotations

import struct

import pytest

from opbuild.om import format as omf
from opbuild.om import so_store, tables
from opbuild.om.errors import OmError
from opbuild.om.so_store import OpSoBin, SoBinType


def _bins():
    return [OpSoBin("libtiling_linux_x86_64.so", "vendors/customize", b"\x7fELF" + b"a" * 100, SoBinType.SpaceRegistry),
            OpSoBin("libopmaster_device_v1.so", "built-in", b"\x7fELF" + b"b" * 7, SoBinType.OpMasterDevice),
            OpSoBin("fused.so", "vendors/x", b"c", SoBinType.Autofuse)]


def test_header_offsets_and_round_trip():
    h = omf.Header(name=b"m".ljust(32, b"\0"), ops=3, model_length=12345, length=12345, need_check_os_cpu_info=1,
                   is_unknow_model=1, platform_version=b"ascend910b".ljust(20, b"\0"))
    raw = h.pack()
    assert len(raw) == 256
    assert struct.unpack_from("<I", raw, 0)[0] == 0x444F4D49 and raw[:4] == b"IMOD"
    assert struct.unpack_from("<I", raw, 4)[0] == 256
    assert struct.unpack_from("<I", raw, 8)[0] == 0x20000000
    assert struct.unpack_from("<I", raw, 116)[0] == 3
    assert struct.unpack_from("<Q", raw, 184)[0] == 12345
    assert raw[192] == 1 and raw[193] == 1 and raw[84:85] == b"m"
    assert omf.Header.unpack(memoryview(raw)) == h


def test_om_round_trip_and_layout():
    parts = [(omf.MODEL_DEF, b"{}"), (omf.WEIGHTS_DATA, b"w" * 5), (omf.TBE_KERNELS, b"k" * 9),
             (omf.SO_BINS, so_store.build(_bins())), (omf.TILING_DATA, b"t")]
    data = omf.write_om(parts, name="abc", ops=2)
    om = omf.read_om(data)
    assert [(p.type, bytes(p.data)) for p in om.partitions] == [(t, bytes(b)) for t, b in parts]
    num = struct.unpack_from("<I", data, 256)[0]
    assert num == 5 and om.data_offset == 256 + 8 + 24 * 5
    t, _, off, size = struct.unpack_from("<IIQQ", data, 256 + 8 + 24 * 2)
    assert (t, off, size) == (omf.TBE_KERNELS, 7, 9)
    assert om.header.text("name") == "abc"


def test_so_store_round_trip_exact_bytes():
    bins = _bins()
    raw = so_store.build(bins)
    assert struct.unpack_from("<I", raw, 0)[0] == 3
    magic, name_len, so_type, vendor_len, bin_len = struct.unpack_from("<IHHII", raw, 4)
    assert (magic, name_len, so_type, vendor_len, bin_len) == (0x5D776EFD, len(bins[0].name), 0, len("vendors/customize"), 104)
    assert raw[20:20 + name_len] == bins[0].name.encode()
    back = so_store.load(raw)
    assert [(b.name, b.vendor, bytes(b.data), b.type) for b in back] == [(b.name, b.vendor, bytes(b.data), b.type) for b in bins]


@pytest.mark.parametrize("types,flag", [
    ([], 0), ([0], 0x8000), ([1], 0x4000), ([2], 0x2000), ([0, 1], 0xC000), ([0, 2], 0xA000), ([1, 2], 0x6000),
    ([0, 1, 2], 0xE000), ([1, 1], 0x4000)])
def test_flags(types, flag):
    assert so_store.flag_of(types) == flag
    assert sorted(so_store.flag_types(flag)) == sorted(set(types))


def test_tables_round_trip():
    items = [tables.Item("customize:K1", {"a": 1}, b"xyz"), tables.Item("built-in:K2", {}, b"q")]
    raw = tables.build(items, tables.KERNEL_MAGIC, "TBE_KERNELS")
    back = tables.load(raw, tables.KERNEL_MAGIC, "TBE_KERNELS", check_name=None)
    assert [(i.name, i.meta, bytes(i.data)) for i in back] == [(i.name, i.meta, i.data) for i in items]


def _item(name=b"liba.so", vendor=b"built-in", data=b"bin", so_type=0, magic=0x5D776EFD, bin_len=None, name_len=None):
    return struct.pack("<IHHII", magic, len(name) if name_len is None else name_len, so_type, len(vendor),
                       len(data) if bin_len is None else bin_len) + name + vendor + data


@pytest.mark.parametrize("payload,field", [
    (b"\x01\x00", "SO_BINS.so_num"),
    (struct.pack("<I", 2) + _item(), "SO_BINS.so_num"),
    (struct.pack("<I", 1) + _item() + _item(), "SO_BINS.so_num"),
    (struct.pack("<I", 0xFFFFFFFF) + _item(), "SO_BINS.so_num"),
    (struct.pack("<I", 1) + _item(magic=0x12345678), "SO_BINS item 0.magic"),
    (struct.pack("<I", 1) + _item(name=b"../evil.so"), "SO_BINS item 0.so_name"),
    (struct.pack("<I", 1) + _item(name=b"a/b.so"), "SO_BINS item 0.so_name"),
    (struct.pack("<I", 1) + _item(vendor=b"vendors/.."), "SO_BINS item 0.vendor_name"),
    (struct.pack("<I", 1) + _item(vendor=b"elsewhere"), "SO_BINS item 0.vendor_name"),
    (struct.pack("<I", 1) + _item(data=b"", bin_len=0), "SO_BINS item 0.bin_len"),
    (struct.pack("<I", 1) + _item(bin_len=0xFFFFFFFF), "SO_BINS item 0.bin_len"),
    (struct.pack("<I", 1) + _item(name_len=0xFFFF), "SO_BINS item 0.so_name_len"),
    (struct.pack("<I", 1) + _item(so_type=9), "SO_BINS item 0.so_bin_type"),
])
def test_so_store_bad_input(payload, field):
    with pytest.raises(OmError) as exc:
        so_store.load(payload, base=1000)
    assert exc.value.field == field, str(exc.value)
    assert exc.value.offset is not None and exc.value.offset >= 1000


def test_build_rejects_bad_names():
    for bad in ("", "a/b.so", "..so", "x\0"):
        with pytest.raises(OmError):
            so_store.build([OpSoBin(bad, "built-in", b"x", SoBinType.Autofuse)])
    with pytest.raises(OmError):
        so_store.build([OpSoBin("a.so", "built-in", b"", SoBinType.Autofuse)])


def _good() -> bytes:
    return omf.write_om([(omf.MODEL_DEF, b"{}"), (omf.SO_BINS, so_store.build(_bins()))])


def _patch(data: bytes, offset: int, fmt: str, value) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    return omf.reseal(out)


@pytest.mark.parametrize("mutate,field", [
    (lambda d: d[:100], "ModelFileHeader"),
    (lambda d: d[:-1], "model_length"),
    (lambda d: d + b"\0", "model_length"),
    (lambda d: _patch(d, 0, "<I", 0x11223344), "magic"),
    (lambda d: _patch(d, 4, "<I", 255), "headsize"),
    (lambda d: _patch(d, 8, "<I", 1), "version"),
    (lambda d: _patch(d, 80, "<B", 1), "is_encrypt"),
    (lambda d: _patch(d, 156, "<I", 2), "model_num"),
    (lambda d: bytes(d[:300]) + bytes([d[300] ^ 1]) + bytes(d[301:]), "checksum"),
    (lambda d: _patch(d, 256, "<I", 0), "partition_table.num"),
    (lambda d: _patch(d, 256, "<I", 1000), "partition_table.num"),
    (lambda d: _patch(d, 256 + 8, "<I", 77), "partition[0].type"),
    (lambda d: _patch(d, 256 + 8 + 24, "<I", 0), "partition[1].type"),
    (lambda d: _patch(d, 256 + 8 + 24 + 8, "<Q", 0), "partition[1].mem_offset"),          # overlapping
    (lambda d: _patch(d, 256 + 8 + 24 + 8, "<Q", 1 << 40), "partition[1].mem_offset"),    # out of file
    (lambda d: _patch(d, 256 + 8 + 24 + 16, "<Q", 1 << 62), "partition[1].mem_size"),     # over-long
    (lambda d: _patch(d, 256 + 8 + 24 + 16, "<Q", 5), "partition_table"),                # trailing bytes
    (lambda d: _patch(d, 256 + 8 + 16, "<Q", 1), "partition[1].mem_offset"),             # gap
])
def test_om_bad_input(mutate, field):
    with pytest.raises(OmError) as exc:
        omf.read_om(mutate(_good()))
    assert exc.value.field == field, str(exc.value)
    assert "@" in str(exc.value)


def test_ge_ir_proto_matches_the_schema_tables():
    """opbuild/om/ge_ir.proto is generated from opbuild/om/ge_ir.py (`python -m opbuild.om.ge_ir`)."""
    from opbuild.om import ge_ir

    assert ge_ir.main(["--check"]) == 0
    text = ge_ir.PROTO_FILE.read_text()
    for line in ("repeated GraphDef graph = 7;", "repeated OpDef op = 6;", "repeated string input = 5;",
                 "repeated TensorDescriptor input_desc = 33;", "repeated TensorDescriptor output_desc = 34;",
                 "map<string, AttrDef> attr = 10;", "DataType dtype = 2;", "ShapeDef shape = 3;"):
        assert line in text
