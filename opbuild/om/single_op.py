"""`opbuild om single-op`: one op with given input dtypes/shapes and attrs, as a one-node model (seed §5)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Sequence

import yaml

from opbuild.abi.vocabulary import DEFAULT_SOC
from opbuild.om.build import _Packages, build_om
from opbuild.om.errors import OmError
from opbuild.om.model import model_from_dict
from opbuild.spec.yaml_marks import safe_load

_TENSOR = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=([a-z0-9]+)\[([-0-9, ]*)\]$")


def parse_tensor(text: str) -> tuple[str, str, list[int]]:
    m = _TENSOR.match(text.strip())
    if not m:
        raise OmError(f"--input {text!r}: expected NAME=DTYPE[d0,d1,...], e.g. x=float16[16,1024]")
    dims = [int(d) for d in m.group(3).replace(" ", "").split(",") if d]
    return m.group(1), m.group(2), dims


def parse_attr(text: str) -> tuple[str, Any]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise OmError(f"--attr {text!r}: expected NAME=VALUE")
    try:
        return name, safe_load(value, f"--attr {name}")
    except yaml.YAMLError:
        return name, value
    except ValueError as exc:  # over the YAML bounds (an alias bomb)
        raise OmError(str(exc)) from None


def single_op_model(op: str, inputs: Sequence[str], attrs: Sequence[str], opp: Path, soc: str = DEFAULT_SOC,
                    package: str | None = None, name: str | None = None, custom_roots: Sequence[Path] = ()):
    """The one-node model of `om single-op`: inputs as NAME=DTYPE[dims] (a dynamic input's
    tensors repeat its name), attrs as NAME=VALUE; the op is searched in the vendor packages
    `custom_roots` first, then in the OPP tree `opp`."""
    given: dict[str, list[tuple[str, list[int]]]] = {}
    for text in inputs:
        n, dt, dims = parse_tensor(text)
        given.setdefault(n, []).append((dt, dims))
    return single_op_model_from(op, given, dict(parse_attr(a) for a in attrs), _Packages(Path(opp), soc, custom_roots),
                                package=package, name=name)


def op_spec(packages: _Packages, op: str, package: str | None = None):
    """(vendor, spec) of `op` in the packages, searched in runtime order (OmError when absent)."""
    vendor = packages.find(op, package)
    return vendor, packages.op_runtime(vendor, op).spec


def single_op_model_from(op: str, given: dict[str, list[tuple[str, list[int]]]], attrs: dict[str, Any],
                         packages: _Packages, package: str | None = None, name: str | None = None):
    """The one-node model of `op`: `given` maps each IR input name to its tensors (dtype, dims;
    -1 a dynamic dim; more than one only for a dynamic input), `attrs` the attribute values.

    This is what `om single-op` and `atc --singleop` build; the model's inputs are named after
    the IR inputs (a dynamic input's tensors `<name><k>`), its outputs after the IR outputs."""
    vendor, spec = op_spec(packages, op, package)
    unknown = set(given) - {p.name for p in spec.inputs}
    if unknown:
        raise OmError(f"{op} has no input(s) {sorted(unknown)} (inputs: {[p.name for p in spec.inputs]})")
    model_inputs: list[dict[str, Any]] = []
    node_inputs: list[str | list[str] | None] = []  # per IR input: a tensor, a dynamic input's tensors, or absent
    for p in spec.inputs:
        tensors = given.get(p.name, [])
        if not tensors:
            if p.param_type == "optional":
                node_inputs.append(None)
                continue
            raise OmError(f"{op}: input {p.name} is required and no tensor is given for it "
                          f"(inputs: {', '.join(q.name for q in spec.inputs)})")
        if len(tensors) > 1 and p.param_type != "dynamic":
            raise OmError(f"{op}: input {p.name} is {p.param_type}, it takes one tensor, not {len(tensors)}")
        names = [p.name if p.param_type != "dynamic" else f"{p.name}{k}" for k in range(len(tensors))]
        for n, (dt, dims) in zip(names, tensors, strict=True):
            model_inputs.append({"name": n, "dtype": dt, "shape": dims})
        node_inputs.append(names if p.param_type == "dynamic" else names[0])
    data = {
        "name": (name or spec.snake)[:31], "soc": packages.soc, "inputs": model_inputs,
        "nodes": [{"name": spec.snake, "op": op, "package": vendor, "inputs": node_inputs,
                   "outputs": [p.name for p in spec.outputs], "attrs": attrs}],
        "outputs": [p.name for p in spec.outputs],
    }
    return model_from_dict(data, Path("."), f"single-op {op}")


def build_single_op(op: str, inputs: Sequence[str], attrs: Sequence[str], opp: Path,
                    custom_roots: Sequence[Path] = (), **kw) -> bytes:
    """The .om of `om single-op` (see `single_op_model`)."""
    return build_om(single_op_model(op, inputs, attrs, opp, custom_roots=custom_roots, **kw), opp,
                    custom_roots=custom_roots)


def signature(model_def: dict[str, Any]) -> dict[str, Any]:
    """What a single-op model is for, read from a parsed .om (`loader.parse_om(data).model_def`):
    `{op, inputs: [{name, dtype, format, shape}], outputs: [{name, dtype, format, shape}], attrs}`
    (-1: a dynamic dim; an output's shape is None in a dynamic model). This is how a caller
    matching an op call to a single-op .om (aclopSetModelDir's directory) reads one; OmError
    when the model is not one node."""
    nodes = model_def["nodes"]
    if len(nodes) != 1:
        raise OmError(f"model {model_def['name']!r} has {len(nodes)} nodes, a single-op model has 1")
    node = nodes[0]
    definition = model_def["ops"][node["op"]]["definition"]
    shapes = {i["name"]: (i["dtype"], i["shape"]) for i in model_def["inputs"]}
    inputs = []
    for param, names in zip(definition["inputs"], node["inputs"], strict=False):
        for name in names if isinstance(names, list) else ([] if names is None else [names]):
            dtype, shape = shapes[name]
            inputs.append({"name": name, "dtype": dtype, "format": param.get("formats", ["ND"])[0], "shape": shape})
    out_shapes = node.get("output_shapes") or [None] * len(node["outputs"])
    outputs = [{"name": name, "dtype": dtype, "format": param.get("formats", ["ND"])[0], "shape": shape}
               for param, name, dtype, shape in zip(definition["outputs"], node["outputs"], node["output_dtypes"],
                                                    out_shapes, strict=False)]
    return {"op": node["type"], "inputs": inputs, "outputs": outputs, "attrs": dict(node["attrs"])}
