"""Helpers of the .om tests: the sample model, its numpy reference, building an .om from it.

(A module of its own, not conftest: test directories share one `conftest` module name.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def model_dict(name: str, shape, *, preprocess: bool = False, autofuse: Path | None = None, ops: int = 3) -> dict:
    """x*y -> leaky_relu(0.2) -> reduce_sum(axes [1]) (the first `ops` nodes)."""
    mul = {"name": "mul0", "op": "MulCustom", "inputs": ["x", "y"], "outputs": ["t0"]}
    if autofuse is not None:
        mul["bin_file_path"] = str(autofuse)
    nodes = [mul,
             {"name": "act0", "op": "LeakyReluCustom", "inputs": ["t0"], "outputs": ["t1"],
              "attrs": {"negative_slope": 0.2}, "preprocess": preprocess},
             {"name": "sum0", "op": "ReduceSumCustom", "inputs": ["t1"], "outputs": ["t2"], "attrs": {"axes": [1]}}][:ops]
    return {"name": name, "inputs": [{"name": "x", "dtype": "float32", "shape": list(shape)},
                                     {"name": "y", "dtype": "float32", "shape": list(shape)}],
            "nodes": nodes, "outputs": [nodes[-1]["outputs"][0]]}


def reference(x: np.ndarray, y: np.ndarray, ops: int = 3) -> np.ndarray:
    t = x * y
    if ops == 1:
        return t
    t = np.where(t > 0, t, np.float32(0.2) * t)
    return t if ops == 2 else t.sum(axis=1)


def build(opp: Path, data: dict, **kw) -> bytes:
    from opbuild.om.build import build_om
    from opbuild.om.model import model_from_dict

    return build_om(model_from_dict(data, Path("/")), opp, **kw)


def edit_model_def(data: bytes, edit) -> bytes:
    """The .om `data` with its MODEL_DEF (a ge.proto.ModelDef) changed by `edit(model_def)`,
    rewritten and resealed: a well-formed file carrying the edit (the reproducers of issue 25)."""
    from opbuild.om import format as omf
    from opbuild.om import ge_ir

    om = omf.read_om(data)
    parts = []
    for p in om.partitions:
        payload = bytes(p.data)
        if p.type == omf.MODEL_DEF:
            model = ge_ir.ModelDef.FromString(payload)
            edit(model)
            payload = model.SerializeToString(deterministic=True)
        parts.append((p.type, payload))
    h = om.header
    return omf.write_om(parts, name=h.text("name"), ops=h.ops, need_check_os_cpu_info=bool(h.need_check_os_cpu_info),
                        is_unknow_model=bool(h.is_unknow_model))


def set_output_desc(data: bytes, node: str, shape=None, dtype: str | None = None, *, consumers: bool = True,
                    selected=None) -> bytes:
    """`node`'s first output descriptor set to `shape` / `dtype` (and, `consumers`, every input
    descriptor reading it: a consistent edit); `selected(dict) -> dict` rewrites its
    `_opbuild_selected` record."""
    import json

    from opbuild.om.model_def import _PROTO_DTYPE

    def change(d) -> None:
        if shape is not None:
            del d.shape.dim[:]
            d.shape.dim.extend(shape)
        if dtype is not None:
            d.dtype = _PROTO_DTYPE[dtype]

    def edit(model) -> None:
        for op in model.graph[0].op:
            if op.name == node:
                change(op.output_desc[0])
                if selected is not None:
                    attr = op.attr["_opbuild_selected"]
                    attr.s = json.dumps(selected(json.loads(attr.s))).encode()
            elif consumers:
                for edge, d in zip(op.input, op.input_desc):
                    if edge == f"{node}:0":
                        change(d)

    return edit_model_def(data, edit)


def edit_kernels(data: bytes, edit) -> bytes:
    """The .om `data` with every TBE_KERNELS binary replaced by `edit(name, bytes)`, resealed."""
    from opbuild.om import format as omf
    from opbuild.om import kernel_store

    om = omf.read_om(data)
    parts = []
    for p in om.partitions:
        payload = bytes(p.data)
        if p.type == omf.TBE_KERNELS:
            items = kernel_store.load(payload, 0, lambda name: None)
            payload = b"".join(kernel_store.build([(n, edit(n, bytes(v))) for n, v in items.items()]))
        parts.append((p.type, payload))
    h = om.header
    return omf.write_om(parts, name=h.text("name"), ops=h.ops, need_check_os_cpu_info=bool(h.need_check_os_cpu_info),
                        is_unknow_model=bool(h.is_unknow_model))


def replace_so_bins(data: bytes, payload_of, **write_kw) -> bytes:
    """The .om `data` with each SO_BINS binary replaced by `payload_of(bin)` (bytes, or None: kept)
    and MODEL_DEF's recorded sha256 of SO_BINS updated to match: a deliberate, consistent edit
    (what only trust protects against), rewritten and sealed. `write_kw`: format.write_om's."""
    import hashlib

    from opbuild.om import format as omf
    from opbuild.om import so_store
    from opbuild.om.loader import parse_om
    from opbuild.om.model_def import PRIVATE

    m = parse_om(data)
    bins = []
    for b in m.so_bins:
        new = payload_of(b)
        bins.append(so_store.OpSoBin(b.name, b.vendor, bytes(b.data) if new is None else new, b.type))

    def digests(model) -> None:
        if f"{PRIVATE}sha256" in model.attr:
            lst = model.attr[f"{PRIVATE}sha256"].func.attr["SO_BINS"].list
            del lst.s[:]
            lst.s.extend(sorted({hashlib.sha256(b.data).hexdigest().encode() for b in bins}))

    edited = omf.read_om(edit_model_def(data, digests))
    parts = [(p.type, so_store.build(bins) if p.type == omf.SO_BINS else bytes(p.data)) for p in edited.partitions]
    h = edited.header
    kw = {"name": h.text("name"), "ops": h.ops, "need_check_os_cpu_info": bool(h.need_check_os_cpu_info),
          "is_unknow_model": bool(h.is_unknow_model), **write_kw}
    return omf.write_om(parts, **kw)
