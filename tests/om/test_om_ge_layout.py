"""GE's TILING_DATA and WEIGHTS_DATA layouts (opbuild/om/ge_tiling.py, ge_weights.py): round trips,
and every untrusted field refused with its name before use; on a real model, the binding of
tiling records to nodes and of weights to Const descriptors."""

from __future__ import annotations

import platform
import struct
from pathlib import Path

import numpy as np
import pytest

from opbuild.om import format as omf
from opbuild.om import ge_tiling, ge_weights
from opbuild.om.errors import OmError
from opbuild.om.loader import load_om, parse_om
from opbuild.om.run import OmRunner


def _two() -> bytes:
    return ge_tiling.build([ge_tiling.Tiling(8, 1, 4096, b"\x01" * 24, [ge_tiling.tiling_id(3)]),
                            ge_tiling.Tiling(1, 0, 0, b"", [ge_tiling.tiling_id(4), ge_tiling.tiling_id(5)])])


def test_tiling_round_trip_and_layout():
    data = _two()
    magic, version, data_len = struct.unpack_from("<III", data)
    assert (magic, version, data_len) == (0xDD776EFE, 2, len(data) - 12)
    # first record: type 0, OpRunInfoMsg of 56 bytes + one workspace
    assert struct.unpack_from("<BI", data, 12) == (0, 64)
    tiling_key, tiling_size, block_dim = struct.unpack_from("<QQI", data, 17)
    assert (tiling_key, tiling_size, block_dim) == (1, 24, 8)
    assert struct.unpack_from("<I", data, 17 + 32)[0] == 1 and struct.unpack_from("<q", data, 17 + 56)[0] == 4096
    parsed = ge_tiling.load(data)
    got = parsed.by_id
    assert parsed.version == 2 and sorted(got) == [3, 4, 5] and got[4] is got[5]
    assert parsed.find(99, [5]) is got[5] and parsed.find(3, []) is None  # version 2: by _op_tiling_ids
    v1 = ge_tiling.load(_patch(data, 4, "<I", 1))  # version 1: by the op id
    assert v1.version == 1 and v1.find(3, []).block_dim == 8 and v1.find(99, [3]) is None
    assert (got[3].block_dim, got[3].tiling_key, got[3].workspace_size, bytes(got[3].data)) == (8, 1, 4096, b"\x01" * 24)
    assert (got[4].workspace_size, bytes(got[4].data)) == (0, b"")
    assert ge_tiling.tiling_id(7, 1) == (1 << 56) | 7


def _patch(data: bytes, offset: int, fmt: str, value) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


@pytest.mark.parametrize("mutate, field", [
    (lambda d: _patch(d, 0, "<I", 0x544C4954), "TILING_DATA.magic"),
    (lambda d: _patch(d, 4, "<I", 3), "TILING_DATA.version"),
    (lambda d: _patch(d, 8, "<I", 5), "TILING_DATA.data_len"),
    (lambda d: _patch(d, 12, "<B", 1), "record at 12.type"),
    (lambda d: _patch(d, 13, "<I", 1 << 30), "record at 12.len"),
    (lambda d: _patch(d, 13, "<I", 20), "record at 12.len"),
    (lambda d: _patch(d, 17 + 32, "<I", 2), "record at 12.workspace_num"),
    (lambda d: _patch(d, 17 + 8, "<Q", 23), "record at 81.len"),
    (lambda d: _patch(d, 17 + 56, "<q", -1), "record at 12.workspace"),
    (lambda d: d[:-3], None),
])
def test_tiling_corruptions_are_refused(mutate, field):
    data = mutate(_two())
    if field is None:  # truncated: the header's data_len no longer fits
        data = _patch(data, 8, "<I", len(data) - 12)
    with pytest.raises(OmError) as err:
        ge_tiling.load(data, base=1000)
    if field:
        assert err.value.field.endswith(field) or err.value.field == field, err.value
    assert err.value.offset is not None and err.value.offset >= 1000


def test_tiling_duplicate_ids_and_ids_record():
    t = ge_tiling.Tiling(1, 0, 0, b"ab", [3])
    with pytest.raises(OmError, match="appears twice"):
        ge_tiling.load(ge_tiling.build([t, t]))
    with pytest.raises(OmError, match="8-byte"):
        ge_tiling.load(ge_tiling.build([ge_tiling.Tiling(1, 0, 0, b"ab", [])]))


def test_every_truncation_and_byte_flip_is_an_om_error():
    data = _two()
    for n in range(len(data)):
        cut = data[:n]
        if n >= 12:
            cut = _patch(cut, 8, "<I", n - 12)
        try:
            ge_tiling.load(cut)
        except OmError:
            pass
    rng = np.random.default_rng(0)
    for _ in range(300):
        bad = bytearray(data)
        bad[int(rng.integers(len(bad)))] ^= int(rng.integers(1, 256))
        try:
            ge_tiling.load(bytes(bad))
        except OmError:
            pass


def test_weights_layout_and_checks():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([1, 2, 3], np.int64)
    data, places = ge_weights.build([("a", a), ("b", b)])
    assert places == [(0, 24), (64, 24)] and len(data) == 88
    ws = [{"name": "a", "dtype": "float32", "shape": [2, 3], "data_offset": 0, "weight_size": 24},
          {"name": "b", "dtype": "int64", "shape": [3], "data_offset": 64, "weight_size": 24}]
    got = ge_weights.locate(data, ws)
    assert bytes(got["a"].data) == a.tobytes() and bytes(got["b"].data) == b.tobytes()
    for change, message in [({"data_offset": 80}, "run past the end"), ({"weight_size": 16}, "takes 24 bytes"),
                            ({"data_offset": -1}, "non-negative"), ({"shape": None}, "static shape")]:
        with pytest.raises(OmError, match=message):
            ge_weights.locate(data, [ws[0], dict(ws[1], **change)], base=10)


# ---- on a real model ---------------------------------------------------------------------------------

def _replace(data: bytes, ptype: int, payload: bytes) -> bytes:
    om = omf.read_om(data)
    parts = [(p.type, payload if p.type == ptype else bytes(p.data)) for p in om.partitions]
    h = om.header
    return omf.write_om(parts, name=h.text("name"), ops=h.ops, platform_version=h.text("platform_version"),
                        need_check_os_cpu_info=bool(h.need_check_os_cpu_info), is_unknow_model=bool(h.is_unknow_model))


def test_static_model_tiling_bound_by_op_id(static_om, inputs):
    from omtools import reference

    m = parse_om(static_om)
    md = m.model_def
    assert md["format_version"] == 3
    ids = {n["name"]: n["op_id"] for n in md["nodes"]}
    assert ids == {"mul0": 2, "act0": 3, "sum0": 4}  # after the two Data ops
    records = ge_tiling.load(m.om.get(omf.TILING_DATA).data).by_id
    assert sorted(records) == sorted(ids.values())
    assert all(n["tiling_ids"] == [n["op_id"]] for n in md["nodes"])  # GE's _op_tiling_ids
    for node in md["nodes"]:
        assert node["kernelname"] == f"{node['op'].split(':')[0].replace('vendors/', '')}:{node['selected']['binary']}"
        assert bytes(m.tilings[node["tiling"]].data) == bytes(records[node["op_id"]].data)
    out = OmRunner(load_om(static_om, trust=True)).run(inputs)["t2"]
    np.testing.assert_allclose(out, reference(inputs["x"], inputs["y"]), rtol=1e-4, atol=1e-4)
    # a tiling record moved to another op id: the node's tiling is missing, refused by name
    moved = [ge_tiling.Tiling(r.block_dim, r.tiling_key, r.workspace_size, bytes(r.data), [i + 100])
             for i, r in sorted(records.items())]
    with pytest.raises(OmError, match=r"node mul0: no tiling result in TILING_DATA for it \(op id 2"):
        parse_om(_replace(static_om, omf.TILING_DATA, ge_tiling.build(moved)))
    with pytest.raises(OmError, match="TILING_DATA.magic"):
        parse_om(_replace(static_om, omf.TILING_DATA, b"\0" * 16))


# ---- the format-2 file written before GE's layouts -------------------------------------------------

@pytest.mark.skipif(platform.machine() != "x86_64" or platform.system() != "Linux",
                    reason="the file's kernel is a linux x86_64 .so")
def test_format_2_file_still_loads_and_runs():
    old = Path(__file__).with_name("data") / "v2_static_mul_weight.om"
    m = parse_om(old.read_bytes())
    assert m.model_def["format_version"] == 2 and m.model_def["soc"] == "ascend910b"
    assert list(m.tilings) == ["mul0"] and list(m.weights) == ["w"]
    w = (np.arange(32, dtype=np.float32).reshape(4, 8) / 8 - 2)
    x = np.random.default_rng(1).random((4, 8), np.float32)
    m.load(check_compat=False, trust=True)  # (built on linux x86_64; the kernel is a host .so)
    np.testing.assert_array_equal(OmRunner(m).run({"x": x})["z"], x * w)
