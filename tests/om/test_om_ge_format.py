"""The .om as GE's tools see it: MODEL_DEF read by a protobuf walker written here from GE's
ge_ir.proto field numbers (independent of opbuild/om/ge_ir.py), TBE_KERNELS read with GE's
KernelStoreItemHead layout; format-1 (JSON) files still load and run; a GE-style file (zero
checksum, a TASK_INFO partition) is accepted."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from omtools import reference

from opbuild.om import format as omf
from opbuild.om import tables
from opbuild.om.errors import OmError
from opbuild.om.loader import load_om, parse_om
from opbuild.om.run import OmRunner

pytestmark = pytest.mark.slow  # the session's sample package

# ---- a minimal protobuf reader: (field number, wire type, value) triples --------------------------

def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, pos


def fields(buf: bytes) -> list[tuple[int, int, object]]:
    out, pos = [], 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 2:
            n, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        else:
            raise AssertionError(f"wire type {wire}")
        out.append((number, wire, value))
    return out


def strings(buf: bytes, number: int) -> list[str]:
    return [v.decode() for n, w, v in fields(buf) if n == number]


def messages(buf: bytes, number: int) -> list[bytes]:
    return [v for n, w, v in fields(buf) if n == number]


def int64s(buf: bytes, number: int) -> list[int]:
    out = []
    for n, w, v in fields(buf):
        if n != number:
            continue
        if w == 2:  # packed
            pos = 0
            while pos < len(v):
                x, pos = _varint(v, pos)
                out.append(x)
        else:
            out.append(v)
    return [x - (1 << 64) if x >= 1 << 63 else x for x in out]


def attr_map(buf: bytes, number: int) -> dict[str, bytes]:
    """A map<string, AttrDef> field: key (1) -> the AttrDef bytes (2)."""
    return {strings(e, 1)[0]: (messages(e, 2) or [b""])[0] for e in messages(buf, number)}


def desc(buf: bytes) -> tuple[int, list[int], str]:
    """TensorDescriptor: dtype (2, ge.proto.DataType), shape (3: ShapeDef dim 1), layout (4)."""
    dtype = [v for n, w, v in fields(buf) if n == 2]
    shape = messages(buf, 3)
    return (dtype[0] if dtype else 0), (int64s(shape[0], 1) if shape else []), (strings(buf, 4) or [""])[0]


def graph_ops(model_def: bytes) -> list[dict]:
    graphs = messages(model_def, 7)  # ModelDef.graph
    assert len(graphs) == 1
    ops = []
    for op in messages(graphs[0], 6):  # GraphDef.op
        ops.append({"name": strings(op, 1)[0], "type": strings(op, 2)[0], "input": strings(op, 5),
                    "attr": attr_map(op, 10), "input_desc": [desc(d) for d in messages(op, 33)],
                    "output_desc": [desc(d) for d in messages(op, 34)]})
    return ops


DT_FLOAT = 1  # ge.proto.DataType


def test_model_def_graph_read_from_ge_field_numbers(static_om):
    om = omf.read_om(static_om)
    model_def = bytes(om.get(omf.MODEL_DEF).data)
    assert strings(model_def, 1) == ["static3"]  # ModelDef.name
    ops = {op["name"]: op for op in graph_ops(model_def)}
    assert [(n, o["type"]) for n, o in ops.items()] == [
        ("x", "Data"), ("y", "Data"), ("mul0", "MulCustom"), ("act0", "LeakyReluCustom"), ("sum0", "ReduceSumCustom"),
        ("Node_Output", "NetOutput")]
    # every edge, as "producer:output index"
    assert ops["mul0"]["input"] == ["x:0", "y:0"]
    assert ops["act0"]["input"] == ["mul0:0"]
    assert ops["sum0"]["input"] == ["act0:0"]
    assert ops["Node_Output"]["input"] == ["sum0:0"]
    # tensor descriptors: dtype, shape, layout
    assert ops["x"]["output_desc"] == [(DT_FLOAT, [16, 1024], "ND")]
    assert ops["mul0"]["input_desc"] == [(DT_FLOAT, [16, 1024], "ND")] * 2
    assert ops["act0"]["output_desc"] == [(DT_FLOAT, [16, 1024], "ND")]
    assert ops["sum0"]["output_desc"] == [(DT_FLOAT, [16], "ND")]
    # attributes: AttrDef.f (4, float32) and AttrDef.list (1) -> ListValue.i (3)
    slope = [v for n, w, v in fields(ops["act0"]["attr"]["negative_slope"]) if n == 4]
    assert struct.unpack("<f", slope[0])[0] == pytest.approx(0.2)
    axes = messages(ops["sum0"]["attr"]["axes"], 1)[0]
    assert int64s(axes, 3) == [1]
    assert [v for n, w, v in fields(ops["sum0"]["attr"]["keep_dims"]) if n == 5] == [0]  # AttrDef.b
    # the graph's inputs and outputs (GraphDef 4 and 5)
    graph = messages(model_def, 7)[0]
    # (GE's SerializeGraph writes the inputs as "<Data>:0"; its reader needs the ':')
    assert strings(graph, 4) == ["x:0", "y:0"] and strings(graph, 5) == ["sum0:0"]
    # NetOutput: one input_desc per input (ge::Model::Load asserts an in-anchor per input)
    assert ops["Node_Output"]["input_desc"] == ops["sum0"]["output_desc"]


def test_tbe_kernels_in_kernel_store_layout(static_om):
    om = omf.read_om(static_om)
    data = bytes(om.get(omf.TBE_KERNELS).data)
    names, pos = [], 0
    while pos < len(data):  # KernelStoreItemHead {u32 magic; u32 name_len; u32 bin_len}, name, binary
        magic, name_len, bin_len = struct.unpack_from("<III", data, pos)
        assert magic == 0x5D776EFD and bin_len > 0
        names.append(data[pos + 12:pos + 12 + name_len].decode())
        assert data[pos + 12 + name_len:pos + 16 + name_len] == b"\x7fELF"  # host kernels are ELF .so files
        pos += 12 + name_len + bin_len
    assert pos == len(data)
    model_def = bytes(om.get(omf.MODEL_DEF).data)
    kernels = messages(attr_map(model_def, 11)["_opbuild_kernels"], 10)[0]  # AttrDef.func -> NamedAttrs
    assert sorted(attr_map(kernels, 2)) == sorted(names) and len(names) == 3


def _legacy(data: bytes) -> bytes:
    """`data` rewritten as a format-1 file: JSON MODEL_DEF (no inferred output shapes), TBE_KERNELS
    as the old item table with each kernel's descriptor, TILING_DATA and WEIGHTS_DATA as the old
    item tables."""
    from opbuild.nonfinite import dumps

    m = parse_om(data)
    md = dict(m.model_def, format_version=1)
    md["nodes"] = [{k: v for k, v in n.items() if k != "output_shapes"} for n in md["nodes"]]
    md["weights"] = [{"name": w["name"]} for w in md["weights"]]
    parts = []
    for p in m.om.partitions:
        payload = bytes(p.data)
        if p.type == omf.MODEL_DEF:
            payload = dumps(md, sort_keys=True).encode()
        elif p.type == omf.TBE_KERNELS:
            payload = tables.build(sorted(m.kernels.values(), key=lambda i: i.name), tables.KERNEL_MAGIC, "TBE_KERNELS",
                                   allow_empty=False)
        elif p.type == omf.TILING_DATA:  # formats 1 and 2: our item tables
            payload = tables.build(list(m.tilings.values()), tables.TILING_MAGIC, "TILING_DATA")
        elif p.type == omf.WEIGHTS_DATA:
            payload = tables.build(list(m.weights.values()), tables.WEIGHT_MAGIC, "WEIGHTS_DATA")
        parts.append((p.type, payload))
    h = m.om.header
    return omf.write_om(parts, name=md["name"], ops=h.ops, platform_version=h.text("platform_version"),
                        need_check_os_cpu_info=bool(h.need_check_os_cpu_info), is_unknow_model=bool(h.is_unknow_model))


def test_format_1_json_model_still_loads_and_runs(static_om, inputs):
    old = _legacy(static_om)
    assert bytes(omf.read_om(old).get(omf.MODEL_DEF).data[:1]) == b"{"
    model = load_om(old, trust=True)
    assert model.model_def["format_version"] == 1
    out = OmRunner(model).run(inputs)["t2"]
    np.testing.assert_allclose(out, reference(inputs["x"], inputs["y"]), rtol=1e-4, atol=1e-4)


def test_ge_style_file_zero_checksum_and_task_info(static_om, inputs):
    om = omf.read_om(static_om)
    parts = [(p.type, bytes(p.data)) for p in om.partitions] + [(omf.TASK_INFO, b"\x08\x01")]
    table = struct.pack("<II", len(parts), 0)
    offset, body = 0, b""
    for ptype, payload in parts:
        table += struct.pack("<IIQQ", ptype, 0, offset, len(payload))
        offset += len(payload)
        body += payload
    header = bytearray(om.header.pack())
    struct.pack_into("64s", header, omf.HEADER_FIELDS["checksum"][1], b"")  # GE leaves it zero
    struct.pack_into("<Q", header, omf.HEADER_FIELDS["model_length"][1], len(table) + len(body))
    struct.pack_into("<I", header, omf.HEADER_FIELDS["length"][1], len(table) + len(body))
    ge_file = bytes(header) + table + body
    parsed = omf.read_om(ge_file)
    assert parsed.get(omf.TASK_INFO).name == "TASK_INFO"
    out = OmRunner(load_om(ge_file, trust=True)).run(inputs)["t2"]
    np.testing.assert_allclose(out, reference(inputs["x"], inputs["y"]), rtol=1e-4, atol=1e-4)
    # a number GE does not define is still refused
    bad = bytearray(ge_file)
    struct.pack_into("<I", bad, omf.HEADER_SIZE + 8 + 24 * (len(parts) - 1), 99)
    with pytest.raises(OmError, match="unknown partition type 99"):
        omf.read_om(bytes(bad))


def test_nonzero_checksum_is_still_verified(static_om):
    data = bytearray(static_om)
    data[-1] ^= 1
    with pytest.raises(OmError, match="checksum"):
        parse_om(bytes(data))
