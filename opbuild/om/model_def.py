"""MODEL_DEF as GE's `ge.proto.ModelDef` (opbuild/om/ge_ir.py), to and from the model dict the
rest of opbuild/om works with (its JSON schema: loader._MODEL_DEF_SCHEMA).

The graph is GE's: `graph[0]` holds one `Data` op per model input (attr `index`; listed in
`GraphDef.input` as "<name>:0"), one `Const` op per weight (attr `value`: a TensorDef whose
descriptor gives dtype, shape and, format 3, `data_offset`/`weight_size` of its bytes in
WEIGHTS_DATA), one op per node (`type` = op type, `input` = "producer:output index",
`input_desc`/`output_desc` with dtype, layout and shape, the op's attributes typed as GE types
them, `_kernelname` on static nodes) and a `NetOutput` op whose inputs are the model outputs
(one `input_desc` each). Ops are numbered (`OpDef.id`) in that order. A tensor is named by its
producer's `output_desc[k].name`.

What only opbuild needs rides in attributes whose names start with `_opbuild_` (GE's
convention for private attributes): on the model, the op definitions, key rules, binaries and
kernel descriptors; on a node, its package op, preprocess/autofuse flags, selected binary and
tiling. Tools that read GE's schema see the whole graph and skip these.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from opbuild.abi.vocabulary import ATTR_TYPE, DTYPES
from opbuild.nonfinite import dumps, from_json, to_json
from opbuild.om import ge_ir
from opbuild.om.errors import OmError, listed, shown
from opbuild.runtime.host import op_proto

FORMAT = "opbuild-om"
FORMAT_VERSION = 3
"""1: MODEL_DEF as JSON and TBE_KERNELS as our item table (still read, opbuild/om/legacy.py);
2: MODEL_DEF as GE's ge.proto.ModelDef and TBE_KERNELS in GE's KernelStore layout (still read);
3: what GE's loader needs besides: `GraphDef.input` as "<Data>:0", NetOutput `input_desc`, the
model attributes `atc --mode=6` prints, the full SoC name in `soc_version`, `_kernelname` on
static nodes, TILING_DATA in GE's layout (ge_tiling.py) and WEIGHTS_DATA as raw bytes located
by the Const descriptors (ge_weights.py). The version is the model attribute `_opbuild_format`
(absent: 2)."""
FORMATS_READ = (1, 2, 3)

IR_VERSION = 1
"""ModelDef.version: the version of this mapping (GE: the IR proto version)."""

DATA, CONST, NET_OUTPUT = "Data", "Const", "NetOutput"
NET_OUTPUT_NAME = "Node_Output"
PRIVATE = "_opbuild_"
"""Prefix of the attributes only opbuild reads."""

_PROTO_DTYPE = {d.name: dict(ge_ir.DATA_TYPES)[d.ge_name] for d in DTYPES}
_DTYPE_BY_PROTO = {v: k for k, v in _PROTO_DTYPE.items()}
UNKNOWN_RANK = [op_proto.UNKNOWN_RANK]
OM_INFO_LIST = ("weight_data_size", "tbe_kernels_size", "cust_aicpu_kernel_store_size", "task_info_size",
                "so_store_size")
"""The five sizes of the model attribute `om_info_list`, in GE's order (`atc --mode=6` prints them)."""
MODEL_INFO_INTS = ("memory_size", "weight_size", "stream_num", "event_num")
MODEL_INFO_STRS = ("atc_version", "atc_cmdline", "framework_type")
"""The other model attributes `atc --mode=6` prints (GE's ATTR_MODEL_*), integers and strings."""
FRAMEWORK_TYPES = {"0": "Caffe", "1": "MindSpore", "3": "TensorFlow", "5": "ONNX"}
"""GE's framework numbers (`framework_type`, atc's `--framework`); opbuild converts ONNX ones."""
ONNX_FRAMEWORK = "5"


def node_op_id(md: dict[str, Any], index: int) -> int:
    """`OpDef.id` of the model's node `index`: ops are numbered in graph order, the Data ops,
    then the Const ops, then the nodes (the id TILING_DATA's tiling ids are made of)."""
    return len(md["inputs"]) + len(md["weights"]) + index


def _desc(name: str, dtype: str, shape, layout: str = "ND"):
    d = ge_ir.TensorDescriptor(name=name, dtype=_PROTO_DTYPE[dtype], layout=layout)
    d.shape.dim.extend(UNKNOWN_RANK if shape is None else shape)
    return d


_LIST_VALUE_TYPE = dict(ge_ir.LIST_VALUE_TYPES)


def _set_attr(attr, attr_type: str, value: Any) -> None:
    """A spec attribute value (JSON form) as GE types it: in the AttrDef field of its type
    (vocabulary.AttrType.ge_attr: int i, float f, bool b, str s), a list in that field of
    AttrDef.list with the list's VT_LIST_* value type."""
    t = ATTR_TYPE[attr_type]
    value = from_json(attr_type, value)
    if t.is_list:
        lst = attr.list
        lst.val_type = _LIST_VALUE_TYPE[f"VT_LIST_{t.element.upper()}"]
        getattr(lst, t.ge_attr).extend(value)
    else:
        setattr(attr, t.ge_attr, value.encode() if t.element == "str" else value)


def _get_attr(attr, attr_type: str) -> Any:
    """The JSON form of an attribute value written by `_set_attr` (float32: the shortest decimal)."""
    def f32(v: float) -> float:
        return float(str(np.float32(v))) if np.isfinite(v) else v

    t = ATTR_TYPE[attr_type]
    if t.is_list:
        values = list(getattr(attr.list, t.ge_attr))
        return to_json([f32(v) for v in values]) if t.element == "float" else values
    value = getattr(attr, t.ge_attr)
    if t.element == "float":
        return to_json(f32(value))
    return value.decode() if t.element == "str" else value


def _json_attr(attr, value: Any) -> None:
    attr.s = dumps(value, sort_keys=True, separators=(",", ":")).encode()


def encode(md: dict[str, Any], kernel_descs: dict[str, dict[str, Any]]) -> bytes:
    """The ModelDef bytes of the model dict `md` (weights with dtype and shape) and the
    descriptors of its TBE_KERNELS items."""
    model = ge_ir.ModelDef(name=md["name"], version=IR_VERSION)
    a = model.attr
    a[f"{PRIVATE}format"].i = FORMAT_VERSION
    a["soc_version"].s = md["soc_version"].encode()
    a[f"{PRIVATE}soc"].s = md["soc"].encode()
    info = md["model_info"]
    a["om_info_list"].list.val_type = _LIST_VALUE_TYPE["VT_LIST_INT"]
    a["om_info_list"].list.i.extend(info["om_info_list"])
    for key in MODEL_INFO_INTS:
        a[key].i = info[key]
    for key in MODEL_INFO_STRS:
        a[key].s = info[key].encode()
    a["dynamic"].b = md["dynamic"]
    a["deterministic"].i = md["deterministic"]
    a["impl_mode"].i = md["impl_mode"]
    a["so_in_om_flag"].i = md["so_in_om_flag"]
    info = md["so_in_om_info"]
    for key, name in (("cpu_info", "host_env_cpu"), ("os_info", "host_env_os"), ("opp_version", "opp_version"),
                      ("compiler_version", "compiler_version")):
        a[name].s = info[key].encode()
    if md.get("sha256") is not None:
        digests = a[f"{PRIVATE}sha256"].func
        digests.name = "sha256"
        for partition, values in sorted(md["sha256"].items()):
            lst = digests.attr[partition].list
            lst.val_type = _LIST_VALUE_TYPE["VT_LIST_STRING"]
            lst.s.extend(v.encode() for v in values)
    for vendor, meta in sorted(md.get("packages", {}).items()):
        a[f"{PRIVATE}packages"].func.attr[vendor].s = meta["version"].encode()
    ops = a[f"{PRIVATE}ops"].list
    ops.val_type = 9
    for ref, op in md["ops"].items():
        na = ops.na.add(name=ref)
        na.attr["package"].s = op["package"].encode()
        na.attr["op"].s = op["op"].encode()
        _json_attr(na.attr["definition"], op["definition"])
        if op.get("key_rule_source") is not None:
            na.attr["key_rule_source"].s = op["key_rule_source"].encode()
        na.attr["binaries"].func.name = "binaries"
        for key, item in sorted(op["binaries"].items()):
            na.attr["binaries"].func.attr[key].s = item.encode()
    kernels = a[f"{PRIVATE}kernels"].func
    kernels.name = "kernels"
    for item, desc in sorted(kernel_descs.items()):
        _json_attr(kernels.attr[item], desc)

    graph = model.graph.add(name=md["name"])
    producer: dict[str, str] = {}  # tensor name -> "op:index"
    descs: dict[str, Any] = {}  # tensor name -> its producer's output descriptor
    taken = {i["name"] for i in md["inputs"]} | {w["name"] for w in md["weights"]} | {n["name"] for n in md["nodes"]}
    for index, t in enumerate(md["inputs"]):
        op = graph.op.add(name=t["name"], type=DATA, id=len(graph.op))
        op.attr["index"].i = index
        op.output_desc.append(_desc(t["name"], t["dtype"], t["shape"]))
        graph.input.append(f"{t['name']}:0")
        producer[t["name"]] = f"{t['name']}:0"
        descs[t["name"]] = op.output_desc[0]
    for w in md["weights"]:
        op = graph.op.add(name=w["name"], type=CONST, id=len(graph.op))
        desc = _desc(w["name"], w["dtype"], w["shape"])
        op.output_desc.append(desc)
        value = op.attr["value"].t.desc
        value.CopyFrom(desc)
        value.data_offset, value.weight_size = w["data_offset"], w["weight_size"]
        producer[w["name"]] = f"{w['name']}:0"
        descs[w["name"]] = op.output_desc[0]
    for k, node in enumerate(md["nodes"]):
        op_def = md["ops"][node["op"]]
        spec = op_def["definition"]
        op = graph.op.add(name=node["name"], type=node["type"], id=len(graph.op))
        assert op.id == node_op_id(md, k)
        counts = []
        for param, t in zip(spec["inputs"], node["inputs"], strict=False):
            names = t if isinstance(t, list) else ([] if t is None else [t])
            counts.append(len(names) if isinstance(t, list) else (0 if t is None else 1))
            for n in names:
                op.input.append(producer[n])
                src = descs[n]
                op.input_desc.append(_desc(param["name"], _DTYPE_BY_PROTO[src.dtype], list(src.shape.dim),
                                           param.get("formats", ["ND"])[0]))
        shapes = node.get("output_shapes") or [None] * len(node["outputs"])
        for k, (param, name) in enumerate(zip(spec["outputs"], node["outputs"], strict=False)):
            op.output_desc.append(_desc(name, node["output_dtypes"][k], shapes[k], param.get("formats", ["ND"])[0]))
            producer[name] = f"{node['name']}:{k}"
            descs[name] = op.output_desc[k]
        types = {x["name"]: x["type"] for x in spec["attrs"]}
        for name, value in node["attrs"].items():
            if value is not None:
                _set_attr(op.attr[name], types[name], value)
        p = PRIVATE
        op.attr[f"{p}op"].s = node["op"].encode()
        op.attr[f"{p}preprocess"].b = node["preprocess"]
        op.attr[f"{p}input_counts"].list.i.extend(counts)
        if node.get("autofuse_so") is not None:
            op.attr[f"{p}autofuse_so"].s = node["autofuse_so"].encode()
        if node.get("tiling") is not None:
            op.attr[f"{p}tiling"].s = node["tiling"].encode()
        if node.get("selected") is not None:
            _json_attr(op.attr[f"{p}selected"], node["selected"])
        if node.get("kernelname") is not None:
            op.attr["_kernelname"].s = node["kernelname"].encode()
        if node.get("tiling_ids"):  # GE's binding of a node to its TILING_DATA records
            op.attr["_op_tiling_ids"].list.val_type = _LIST_VALUE_TYPE["VT_LIST_INT"]
            op.attr["_op_tiling_ids"].list.i.extend(node["tiling_ids"])
    name = NET_OUTPUT_NAME
    while name in taken:
        name += "_"
    out = graph.op.add(name=name, type=NET_OUTPUT, id=len(graph.op))
    for k, t in enumerate(md["outputs"]):
        out.input.append(producer[t])
        src = descs[t]
        out.input_desc.append(_desc(f"input{k}", _DTYPE_BY_PROTO[src.dtype], list(src.shape.dim), src.layout))
        graph.output.append(producer[t])
    return model.SerializeToString(deterministic=True)


def _str(attr) -> str:
    return attr.s.decode("utf-8")


def _json(attr, what: str) -> Any:
    try:
        return json.loads(attr.s.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise OmError(f"{what}: not UTF-8 JSON: {str(exc)[:200]}", "MODEL_DEF") from None


def decode(data: bytes | memoryview) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(model dict, kernel descriptors by TBE_KERNELS item name) of ModelDef bytes; OmError
    naming what is missing or malformed (the dict is checked against the schema afterwards)."""
    from google.protobuf.message import DecodeError

    try:
        model = ge_ir.ModelDef.FromString(bytes(data))
    except (DecodeError, RecursionError) as exc:
        raise OmError(f"not a ge.proto.ModelDef: {exc}", "MODEL_DEF") from None
    try:
        return _decode(model)
    except OmError:
        raise
    except (KeyError, IndexError, ValueError, TypeError, UnicodeDecodeError) as exc:
        raise OmError(f"ModelDef is not an opbuild model or is inconsistent: {type(exc).__name__}: {shown(str(exc))}",
                      "MODEL_DEF") from None


def _decode(model) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    a = model.attr
    version = a[f"{PRIVATE}format"].i if f"{PRIVATE}format" in a else 2
    if version not in FORMATS_READ[1:]:
        raise OmError(f"model attribute {PRIVATE}format is {version}: written by a newer opbuild "
                      f"(this one reads {list(FORMATS_READ)})", "MODEL_DEF")
    for key in ("soc_version", f"{PRIVATE}ops", f"{PRIVATE}kernels"):
        if key not in a:
            raise OmError(f"ModelDef has no attribute {key!r} (not written by opbuild om)", "MODEL_DEF")
    if len(model.graph) != 1:
        raise OmError(f"{len(model.graph)} graphs, expected 1", "MODEL_DEF")
    ops = {}
    for na in a[f"{PRIVATE}ops"].list.na:
        op = {"package": _str(na.attr["package"]), "op": _str(na.attr["op"]),
              "definition": _json(na.attr["definition"], f"op {na.name} definition"),
              "key_rule_source": _str(na.attr["key_rule_source"]) if "key_rule_source" in na.attr else None,
              "binaries": {k: _str(v) for k, v in na.attr["binaries"].func.attr.items()}}
        ops[na.name] = op
    kernels = {k: _json(v, f"kernel {k} descriptor") for k, v in a[f"{PRIVATE}kernels"].func.attr.items()}
    graph = model.graph[0]
    by_name = {}
    for op in graph.op:
        if op.name in by_name:
            raise OmError(f"op name {shown(op.name, 100)} appears twice in the graph", "MODEL_DEF")
        by_name[op.name] = op

    sources: dict[str, tuple[Any, int, list[int]]] = {}  # edge -> (producer's desc, dtype, dims), once per edge

    def source(edge: str) -> tuple[Any, int, list[int]]:
        found = sources.get(edge)
        if found is None:
            name, sep, index = edge.rpartition(":")
            producer = by_name.get(name)
            if (not sep or producer is None or not index.isascii() or not index.isdigit()
                    or int(index) >= len(producer.output_desc)):
                raise OmError(f"edge {shown(edge, 100)} names no output of an op", "MODEL_DEF")
            d = producer.output_desc[int(index)]
            found = sources[edge] = (d, d.dtype, list(d.shape.dim))
        return found

    def tensor(edge: str) -> str:
        return source(edge)[0].name

    def dims(desc) -> list[int] | None:
        d = list(desc.shape.dim)
        return None if d == UNKNOWN_RANK else d

    def check_edges(op) -> None:
        """Each input descriptor of `op` against its producer's output descriptor (GE writes
        them equal): a descriptor edited alone is found here, before anything is sized from it."""
        if not op.input_desc and op.type == NET_OUTPUT:
            return  # (format 2 wrote no NetOutput input_desc)
        if len(op.input_desc) != len(op.input):
            raise OmError(f"op {op.name}: {len(op.input_desc)} input descriptors for {len(op.input)} inputs", "MODEL_DEF")
        for k, (edge, desc) in enumerate(zip(op.input, op.input_desc, strict=False)):
            src, dtype, shape = source(edge)
            if dtype != desc.dtype or shape != list(desc.shape.dim):
                raise OmError(f"op {op.name}: input_desc {k} ({edge}) is {_desc_text(desc)}, but its producer's "
                              f"output descriptor {src.name!r} is {_desc_text(src)}", "MODEL_DEF")

    inputs, weights, nodes, outputs = [], [], [], []
    for op in graph.op:
        if op.type == DATA:
            d = op.output_desc[0]
            inputs.append((op.attr["index"].i, {"name": d.name, "dtype": _DTYPE_BY_PROTO[d.dtype], "shape": dims(d)}))
        elif op.type == CONST:
            d = op.attr["value"].t.desc
            out = op.output_desc[0]
            if out.dtype != d.dtype or list(out.shape.dim) != list(d.shape.dim):
                raise OmError(f"Const {op.name}: output descriptor {_desc_text(out)} disagrees with its value "
                              f"{_desc_text(d)}", "MODEL_DEF")
            weight = {"name": op.output_desc[0].name, "dtype": _DTYPE_BY_PROTO[d.dtype], "shape": dims(d)}
            if version >= 3:
                weight.update(data_offset=d.data_offset, weight_size=d.weight_size)
            weights.append(weight)
        elif op.type == NET_OUTPUT:
            check_edges(op)
            outputs = [tensor(e) for e in op.input]
        else:
            check_edges(op)
            nodes.append(_decode_node(op, ops, tensor, dims))
    soc = _str(a[f"{PRIVATE}soc"]) if version >= 3 else _str(a["soc_version"])
    md = {
        "format": FORMAT, "format_version": version, "name": model.name, "soc": soc,
        "soc_version": _str(a["soc_version"]),
        "dynamic": a["dynamic"].b, "deterministic": a["deterministic"].i, "impl_mode": a["impl_mode"].i,
        "so_in_om_flag": a["so_in_om_flag"].i,
        "so_in_om_info": {key: _str(a[name]) for key, name in (
            ("cpu_info", "host_env_cpu"), ("os_info", "host_env_os"), ("opp_version", "opp_version"),
            ("compiler_version", "compiler_version"))},
        "inputs": [t for _, t in sorted(inputs, key=lambda x: x[0])], "weights": weights, "outputs": outputs,
        "packages": {k: {"version": _str(v)} for k, v in a[f"{PRIVATE}packages"].func.attr.items()},
        "ops": ops, "nodes": nodes,
        "sha256": ({k: [x.decode("utf-8") for x in v.list.s] for k, v in a[f"{PRIVATE}sha256"].func.attr.items()}
                   if f"{PRIVATE}sha256" in a else None),
    }
    if version >= 3:
        md["model_info"] = {"om_info_list": list(a["om_info_list"].list.i),
                            **{k: a[k].i for k in MODEL_INFO_INTS}, **{k: _str(a[k]) for k in MODEL_INFO_STRS}}
    return md, kernels


def _desc_text(desc) -> str:
    """A descriptor as messages show it: `float32[16, 1024]` (a dtype number no dtype has: `dtype 99`)."""
    dtype = _DTYPE_BY_PROTO.get(desc.dtype, f"dtype {desc.dtype}")
    dims = list(desc.shape.dim)
    return f"{dtype}{dims}" if len(dims) <= 8 else f"{dtype}[{listed(dims)} dims]"


_NODE_ATTRS = {key: PRIVATE + key for key in ("op", "input_counts", "preprocess", "autofuse_so", "tiling", "selected")}


def _decode_node(op, ops, tensor, dims) -> dict[str, Any]:
    attr = op.attr
    get = attr.get  # (a lookup that inserts nothing; once per attribute)
    k = _NODE_ATTRS
    found = get(k["op"])
    ref = found.s.decode("utf-8") if found is not None else ""
    spec = ops[ref]["definition"] if ref in ops else {"inputs": [], "outputs": [], "attrs": []}
    found = get(k["input_counts"])
    counts = list(found.list.i) if found is not None else []
    edges = [tensor(e) for e in op.input]
    if sum(counts) != len(edges) or len(counts) != len(spec["inputs"]):
        raise OmError(f"node {op.name}: {len(edges)} inputs do not fit the counts {counts}", "MODEL_DEF")
    node_inputs: list[Any] = []
    pos = 0
    for param, n in zip(spec["inputs"], counts, strict=True):
        group = edges[pos:pos + n]
        pos += n
        if param.get("param_type") == "dynamic":
            node_inputs.append(group)
        else:
            node_inputs.append(group[0] if group else None)
    attrs = {}
    for x in spec["attrs"]:
        found = get(x["name"])
        if found is not None:
            attrs[x["name"]] = _get_attr(found, x["type"])
    out_descs = list(op.output_desc)
    shapes = [dims(d) for d in out_descs]
    preprocess, autofuse, tiling, selected = (get(k[n]) for n in ("preprocess", "autofuse_so", "tiling", "selected"))
    kernelname, tiling_ids = get("_kernelname"), get("_op_tiling_ids")
    return {
        "name": op.name, "op_id": op.id, "op": ref, "type": op.type, "inputs": node_inputs,
        "outputs": [d.name for d in out_descs], "attrs": attrs,
        "preprocess": preprocess.b if preprocess is not None else False,
        "autofuse_so": _str(autofuse) if autofuse is not None else None,
        "tiling": _str(tiling) if tiling is not None else None,
        "selected": _json(selected, f"node {op.name} selected") if selected is not None else None,
        "output_dtypes": [_DTYPE_BY_PROTO[d.dtype] for d in out_descs],
        "output_shapes": None if any(s is None for s in shapes) else shapes,
        "kernelname": _str(kernelname) if kernelname is not None else None,
        "tiling_ids": list(tiling_ids.list.i) if tiling_ids is not None else [],
    }
