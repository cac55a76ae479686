"""A static node's descriptors against what its tiling and kernel cover, before any launch.

A static `.om` node launches its selected kernel with the tiling computed at build time. That
tiling fixes how many elements the kernel reads and writes, whatever MODEL_DEF's descriptors
say: a descriptor smaller than the tiling (a shape or a narrower dtype) would make the runner
allocate an output buffer the kernel writes past (issue 25). So, for every static AI Core node:

* its input tensors' descriptors (model inputs, weights, earlier nodes' outputs) must be the
  shapes the tiling was computed for (`selected.input_shapes`) and the dtypes the selected
  kernel takes (its descriptor JSON's `supportInfo.inputs`);
* its output descriptors must be the outputs the tiling was computed for (`selected.output_dtypes`
  / `selected.output_shapes`, written by `om build` since issue 25) and the dtypes the kernel
  writes (`supportInfo.outputs`).

The runner sizes output buffers from `selected` (what the kernel may write), never from the
descriptors alone (run.NodeProvider.inferred_outputs). Files written before `selected` carried
the outputs are checked against the kernel's dtypes and, through the loader's edge check
(model_def.decode), against their consumers' descriptors only. Format-1 files carry no output
shapes: their buffers come from the op_proto library built from their definitions (legacy.py).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from opbuild.abi.vocabulary import DTYPES
from opbuild.om.errors import OmError, shown

_DTYPE_BY_KERNEL_JSON = {d.kernel_json: d.name for d in DTYPES}
"""supportInfo dtype spelling -> dtype name."""


def _text(dtype: Any, shape: Any) -> str:
    return f"{dtype}{list(shape) if isinstance(shape, (list, tuple)) else shape}"


def kernel_dtypes(meta: Any, field: str, count: int, where: str) -> list[Any]:
    """The dtype names a kernel descriptor's `supportInfo.<field>` (inputs or outputs) gives,
    one entry per IR parameter: a name, a list of names (a dynamic parameter) or None (not
    pinned). OmError when the descriptor does not have that structure."""
    info = meta.get("supportInfo") if isinstance(meta, dict) else None
    params = info.get(field) if isinstance(info, dict) else None
    if not isinstance(params, list) or len(params) != count:
        raise OmError(f"{where}: its kernel descriptor has no supportInfo.{field} of {count} entries", "MODEL_DEF")

    def one(d: Any) -> Any:
        if d is None:
            return None
        spelling = d.get("dtype") if isinstance(d, dict) else None  # (any JSON value: a list is unhashable)
        name = _DTYPE_BY_KERNEL_JSON.get(spelling) if isinstance(spelling, str) else None
        if name is None:
            raise OmError(f"{where}: its kernel descriptor's supportInfo.{field} entry {d!r:.100} names no dtype",
                          "MODEL_DEF")
        return name

    return [[one(x) for x in p] if isinstance(p, list) else one(p) for p in params]


def check_static_node(model_label: str, node: Mapping[str, Any], op_type: str, kernel_meta: Any,
                      input_descs: Sequence[Sequence[tuple[str, Any]]]) -> None:
    """OmError naming the model, node and op when a descriptor of the static node `node` does
    not match what its tiling and kernel cover. `input_descs`: per IR input, the (dtype, shape)
    descriptor of each of its tensors (empty: an absent optional input)."""
    where = f"{model_label}: node {node['name']} ({op_type})"
    sel = node["selected"]
    in_dtypes = kernel_dtypes(kernel_meta, "inputs", len(input_descs), where)
    want_shapes = sel.get("input_shapes")
    for i, group in enumerate(input_descs):
        pinned = in_dtypes[i]
        if isinstance(pinned, list):  # a dynamic input: one dtype for all its tensors
            pinned = pinned[0] if pinned else None
        for j, (dtype, shape) in enumerate(group):
            if pinned is not None and dtype != pinned:
                raise OmError(f"{where}: input {i}.{j} is {_text(dtype, shape)}, but the selected kernel "
                              f"{sel['binary']} takes {pinned}", "MODEL_DEF")
            if shape is not None and isinstance(want_shapes, list) and (i >= len(want_shapes) or j >= len(want_shapes[i])
                                                  or want_shapes[i][j] != shape):
                raise OmError(f"{where}: input {i}.{j} is {_text(dtype, shape)}, but its tiling was computed for "
                              f"input shapes {shown(want_shapes)}", "MODEL_DEF")
    dtypes, shapes = node["output_dtypes"], node.get("output_shapes")
    out_dtypes = kernel_dtypes(kernel_meta, "outputs", len(dtypes), where)
    rec_dtypes, rec_shapes = sel.get("output_dtypes"), sel.get("output_shapes")
    recorded = rec_dtypes is not None or rec_shapes is not None
    if recorded and (not isinstance(rec_dtypes, list) or not isinstance(rec_shapes, list)
                     or len(rec_dtypes) != len(dtypes) or len(rec_shapes) != len(dtypes)):
        raise OmError(f"{where}: selected.output_dtypes/output_shapes do not list its {len(dtypes)} outputs",
                      "MODEL_DEF")
    for k, dtype in enumerate(dtypes):
        shape = shapes[k] if shapes is not None else None
        name = node["outputs"][k]
        if out_dtypes[k] is not None and dtype != out_dtypes[k]:
            raise OmError(f"{where}: output {name} descriptor is {_text(dtype, shape)}, but the selected kernel "
                          f"{sel['binary']} writes {out_dtypes[k]}", "MODEL_DEF")
        if recorded and (rec_dtypes[k] != dtype or (shape is not None and rec_shapes[k] != shape)):
            raise OmError(f"{where}: output {name} descriptor is {_text(dtype, shape)}, but its tiling was computed "
                          f"for {_text(rec_dtypes[k], rec_shapes[k])} (what the kernel writes)", "MODEL_DEF")
