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
