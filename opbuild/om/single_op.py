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
                    package: str | None = None, name: str | None = None):
    packages = _Packages(Path(opp), soc)
    vendor = packages.find(op, package)
    spec = packages.op_runtime(vendor, op).spec
    given = {}
    for text in inputs:
        n, dt, dims = parse_tensor(text)
        given.setdefault(n, []).append((dt, dims))
    unknown = set(given) - {p.name for p in spec.inputs}
    if unknown:
        raise OmError(f"{op} has no input(s) {sorted(unknown)} (inputs: {[p.name for p in spec.inputs]})")
    model_inputs, node_inputs = [], []
    for p in spec.inputs:
        tensors = given.get(p.name, [])
        if not tensors:
            if p.param_type == "optional":
                node_inputs.append(None)
                continue
            raise OmError(f"{op}: input {p.name} is required: give --input {p.name}=DTYPE[dims]")
        names = [p.name if len(tensors) == 1 and p.param_type != "dynamic" else f"{p.name}{k}" for k in range(len(tensors))]
        for n, (dt, dims) in zip(names, tensors):
            model_inputs.append({"name": n, "dtype": dt, "shape": dims})
        node_inputs.append(names if p.param_type == "dynamic" else names[0])
    data = {
        "name": (name or spec.snake)[:31], "soc": soc, "inputs": model_inputs,
        "nodes": [{"name": spec.snake, "op": op, "package": vendor, "inputs": node_inputs,
                   "outputs": [p.name for p in spec.outputs], "attrs": dict(parse_attr(a) for a in attrs)}],
        "outputs": [p.name for p in spec.outputs],
    }
    return model_from_dict(data, Path("."), f"single-op {op}")


def build_single_op(op: str, inputs: Sequence[str], attrs: Sequence[str], opp: Path, **kw) -> bytes:
    return build_om(single_op_model(op, inputs, attrs, opp, **kw), opp)
