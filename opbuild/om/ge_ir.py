"""GE's `ge.proto` IR messages (ModelDef, GraphDef, OpDef, TensorDescriptor, AttrDef, ...) with
GE's field numbers, as Python protobuf classes.

The schema is written once, as the tables below (names, numbers and types from GE's public
`proto/ge_ir.proto`, which this is not a copy of: only the messages an `.om` MODEL_DEF uses).
From them come
  * the message classes: a `FileDescriptorProto` built at import time and turned into classes by
    the protobuf runtime (`message_factory.GetMessageClass`), in a private descriptor pool. No
    protoc, no generated `_pb2` module pinned to one protobuf release, nothing fetched: any
    protobuf >= 4.25 builds the same classes;
  * `proto_text()`: the same schema as a `.proto` file (opbuild/om/ge_ir.proto, for other tools;
    `python -m opbuild.om.ge_ir --check` verifies the committed copy).
"""

from __future__ import annotations

import sys
from pathlib import Path

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

PACKAGE = "ge.proto"
PROTO_FILE = Path(__file__).with_name("ge_ir.proto")

DATA_TYPES: tuple[tuple[str, int], ...] = (
    ("DT_UNDEFINED", 0), ("DT_FLOAT", 1), ("DT_FLOAT16", 2), ("DT_INT8", 3), ("DT_UINT8", 4), ("DT_INT16", 5),
    ("DT_UINT16", 6), ("DT_INT32", 7), ("DT_INT64", 8), ("DT_UINT32", 9), ("DT_UINT64", 10), ("DT_BOOL", 11),
    ("DT_DOUBLE", 12), ("DT_STRING", 13), ("DT_DUAL_SUB_INT8", 14), ("DT_DUAL_SUB_UINT8", 15), ("DT_COMPLEX64", 16),
    ("DT_COMPLEX128", 17), ("DT_QINT8", 18), ("DT_QINT16", 19), ("DT_QINT32", 20), ("DT_QUINT8", 21),
    ("DT_QUINT16", 22), ("DT_RESOURCE", 23), ("DT_STRING_REF", 24), ("DT_DUAL", 25), ("DT_VARIANT", 26),
    ("DT_BF16", 27),
)
"""`ge.proto.DataType`: the serialized dtype enum (not ge::DataType's numbering: DT_FLOAT is 1 here)."""

LIST_VALUE_TYPES: tuple[tuple[str, int], ...] = (
    ("VT_LIST_NONE", 0), ("VT_LIST_STRING", 1), ("VT_LIST_INT", 2), ("VT_LIST_FLOAT", 3), ("VT_LIST_BOOL", 4),
    ("VT_LIST_BYTES", 5), ("VT_LIST_TENSOR_DESC", 6), ("VT_LIST_TENSOR", 7), ("VT_LIST_GRAPH", 8),
    ("VT_LIST_NAMED_ATTRS", 9), ("VT_LIST_DATA_TYPE", 10),
)

# A field: (name, number, type, label) with type a scalar name, a message/enum name, or
# "map<string, X>"; label "" (singular), "repeated" or "oneof <name>".
MESSAGES: dict[str, tuple[tuple[str, int, str, str], ...]] = {
    "AttrDef.ListValue": (
        ("s", 2, "bytes", "repeated"), ("i", 3, "int64", "repeated"), ("f", 4, "float", "repeated"),
        ("b", 5, "bool", "repeated"), ("bt", 7, "bytes", "repeated"), ("td", 8, "TensorDescriptor", "repeated"),
        ("t", 9, "TensorDef", "repeated"), ("g", 10, "GraphDef", "repeated"), ("na", 11, "NamedAttrs", "repeated"),
        ("dt", 12, "int64", "repeated"), ("val_type", 20, "AttrDef.ListValue.ListValueType", ""),
    ),
    "AttrDef.ListListInt.ListInt": (("list_i", 1, "int64", "repeated"),),
    "AttrDef.ListListInt": (("list_list_i", 1, "AttrDef.ListListInt.ListInt", "repeated"),),
    "AttrDef.ListListFloat.ListFloat": (("list_f", 1, "float", "repeated"),),
    "AttrDef.ListListFloat": (("list_list_f", 1, "AttrDef.ListListFloat.ListFloat", "repeated"),),
    "AttrDef": (
        ("s", 2, "bytes", "oneof value"), ("i", 3, "int64", "oneof value"), ("f", 4, "float", "oneof value"),
        ("b", 5, "bool", "oneof value"), ("bt", 7, "bytes", "oneof value"),
        ("list", 1, "AttrDef.ListValue", "oneof value"), ("func", 10, "NamedAttrs", "oneof value"),
        ("td", 11, "TensorDescriptor", "oneof value"), ("t", 12, "TensorDef", "oneof value"),
        ("g", 13, "GraphDef", "oneof value"), ("list_list_int", 14, "AttrDef.ListListInt", "oneof value"),
        ("dt", 15, "int64", "oneof value"), ("list_list_float", 16, "AttrDef.ListListFloat", "oneof value"),
    ),
    "NamedAttrs": (("name", 1, "string", ""), ("attr", 2, "map<string, AttrDef>", "")),
    "ShapeDef": (("dim", 1, "int64", "repeated"),),
    "TensorDescriptor": (
        ("name", 1, "string", ""), ("dtype", 2, "DataType", ""), ("shape", 3, "ShapeDef", ""),
        ("layout", 4, "string", ""), ("attr", 5, "map<string, AttrDef>", ""), ("has_out_attr", 9, "bool", ""),
        ("size", 10, "int64", ""), ("weight_size", 11, "int64", ""), ("reuse_input", 12, "bool", ""),
        ("output_tensor", 13, "bool", ""), ("device_type", 14, "string", ""), ("input_tensor", 15, "bool", ""),
        ("real_dim_cnt", 16, "int64", ""), ("reuse_input_index", 17, "int64", ""), ("data_offset", 18, "int64", ""),
        ("cmps_size", 19, "int64", ""), ("cmps_tab", 20, "string", ""), ("cmps_tab_offset", 21, "int64", ""),
    ),
    "TensorDef": (("desc", 1, "TensorDescriptor", ""), ("data", 2, "bytes", "")),
    "OpDef": (
        ("name", 1, "string", ""), ("type", 2, "string", ""), ("input", 5, "string", "repeated"),
        ("attr", 10, "map<string, AttrDef>", ""), ("has_out_attr", 20, "bool", ""), ("id", 21, "int64", ""),
        ("stream_id", 22, "int64", ""), ("input_name", 23, "string", "repeated"),
        ("src_name", 24, "string", "repeated"), ("src_index", 25, "int64", "repeated"),
        ("dst_name", 26, "string", "repeated"), ("dst_index", 27, "int64", "repeated"),
        ("input_i", 28, "int64", "repeated"), ("output_i", 29, "int64", "repeated"),
        ("workspace", 30, "int64", "repeated"), ("workspace_bytes", 31, "int64", "repeated"),
        ("is_input_const", 32, "bool", "repeated"), ("input_desc", 33, "TensorDescriptor", "repeated"),
        ("output_desc", 34, "TensorDescriptor", "repeated"), ("subgraph_name", 35, "string", "repeated"),
    ),
    "GraphDef": (
        ("name", 1, "string", ""), ("input", 4, "string", "repeated"), ("output", 5, "string", "repeated"),
        ("op", 6, "OpDef", "repeated"), ("attr", 11, "map<string, AttrDef>", ""),
    ),
    "ModelDef": (
        ("name", 1, "string", ""), ("version", 2, "uint32", ""), ("custom_version", 3, "string", ""),
        ("graph", 7, "GraphDef", "repeated"), ("attr", 11, "map<string, AttrDef>", ""),
    ),
}
ENUMS: dict[str, tuple[tuple[str, int], ...]] = {
    "DataType": DATA_TYPES, "AttrDef.ListValue.ListValueType": LIST_VALUE_TYPES,
}

_F = descriptor_pb2.FieldDescriptorProto
_SCALARS = {"string": _F.TYPE_STRING, "bytes": _F.TYPE_BYTES, "int64": _F.TYPE_INT64, "uint32": _F.TYPE_UINT32,
            "float": _F.TYPE_FLOAT, "bool": _F.TYPE_BOOL}


def _entry_name(field: str) -> str:
    return "".join(p.capitalize() for p in field.split("_")) + "Entry"


def _fill_field(f, name: str, number: int, ftype: str, repeated: bool) -> None:
    f.name, f.number = name, number
    f.label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
    if ftype in _SCALARS:
        f.type = _SCALARS[ftype]
    else:
        f.type = _F.TYPE_ENUM if ftype in ENUMS else _F.TYPE_MESSAGE
        f.type_name = f".{PACKAGE}.{ftype}"


def file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    """The schema as a FileDescriptorProto (proto3, package ge.proto)."""
    fdp = descriptor_pb2.FileDescriptorProto(name="ge_ir.proto", package=PACKAGE, syntax="proto3")
    built: dict[str, descriptor_pb2.DescriptorProto] = {}

    def message(path: str) -> descriptor_pb2.DescriptorProto:
        if path not in built:
            parent, _, leaf = path.rpartition(".")
            built[path] = (message(parent).nested_type if parent else fdp.message_type).add(name=leaf)
        return built[path]

    for path in MESSAGES:  # parents listed after their nested types: create every level first
        message(path)
    for path, values in ENUMS.items():
        parent, _, leaf = path.rpartition(".")
        enum = (message(parent).enum_type if parent else fdp.enum_type).add(name=leaf)
        for name, number in values:
            enum.value.add(name=name, number=number)
    for path, fields in MESSAGES.items():
        msg = message(path)
        oneofs: dict[str, int] = {}
        for name, number, ftype, label in fields:
            f = msg.field.add()
            if ftype.startswith("map<"):
                key, value = (t.strip() for t in ftype[4:-1].split(","))
                entry = msg.nested_type.add(name=_entry_name(name))
                entry.options.map_entry = True
                _fill_field(entry.field.add(), "key", 1, key, False)
                _fill_field(entry.field.add(), "value", 2, value, False)
                _fill_field(f, name, number, f"{path}.{entry.name}", True)
                continue
            _fill_field(f, name, number, ftype, label == "repeated")
            if label.startswith("oneof "):
                group = label.split()[1]
                if group not in oneofs:
                    oneofs[group] = len(msg.oneof_decl)
                    msg.oneof_decl.add(name=group)
                f.oneof_index = oneofs[group]
    return fdp


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(file_descriptor())


def _cls(name: str):
    return message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"{PACKAGE}.{name}"))


ModelDef = _cls("ModelDef")
GraphDef = _cls("GraphDef")
OpDef = _cls("OpDef")
TensorDescriptor = _cls("TensorDescriptor")
TensorDef = _cls("TensorDef")
AttrDef = _cls("AttrDef")
NamedAttrs = _cls("NamedAttrs")
ShapeDef = _cls("ShapeDef")


def proto_text() -> str:
    """The schema as .proto source (what opbuild/om/ge_ir.proto holds)."""
    lines = ["// GE's ge.proto IR messages as an .om MODEL_DEF uses them, with GE's field numbers.",
             "// Generated from opbuild/om/ge_ir.py by `python -m opbuild.om.ge_ir`; do not edit.",
             'syntax = "proto3";', "", f"package {PACKAGE};", ""]

    def enum(name: str, values, indent: str) -> None:
        lines.append(f"{indent}enum {name} {{")
        lines.extend(f"{indent}  {n} = {v};" for n, v in values)
        lines.append(f"{indent}}}")

    def message(path: str, indent: str) -> None:
        lines.append(f"{indent}message {path.rpartition('.')[2]} {{")
        for sub in MESSAGES:
            if sub.rpartition(".")[0] == path:
                message(sub, indent + "  ")
        for sub, values in ENUMS.items():
            if sub.rpartition(".")[0] == path:
                enum(sub.rpartition(".")[2], values, indent + "  ")
        oneof = None
        for name, number, ftype, label in MESSAGES[path]:
            group = label.split()[1] if label.startswith("oneof ") else None
            if group != oneof:
                if oneof is not None:
                    lines.append(f"{indent}  }}")
                if group is not None:
                    lines.append(f"{indent}  oneof {group} {{")
                oneof = group
            short = ftype
            for prefix in (path + ".", path.rpartition(".")[0] + "."):
                if prefix != "." and short.startswith(prefix):
                    short = short[len(prefix):]
            pad = indent + ("    " if group else "  ")
            lines.append(f"{pad}{'repeated ' if label == 'repeated' else ''}{short} {name} = {number};")
        if oneof is not None:
            lines.append(f"{indent}  }}")
        lines.append(f"{indent}}}")

    for name, values in ENUMS.items():
        if "." not in name:
            enum(name, values, "")
            lines.append("")
    for path in MESSAGES:
        if "." not in path:
            message(path, "")
            lines.append("")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """Write opbuild/om/ge_ir.proto; with --check, exit 1 when it differs from the tables."""
    text = proto_text()
    if "--check" in argv:
        if not PROTO_FILE.is_file() or PROTO_FILE.read_text() != text:
            print(f"{PROTO_FILE} is out of date: run python -m opbuild.om.ge_ir", file=sys.stderr)
            return 1
        return 0
    PROTO_FILE.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
