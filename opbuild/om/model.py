"""The model format `opbuild om build` compiles (YAML, schemas/model.schema.json).

A model is a graph: named inputs (static shapes, or -1 for a dynamic dim), weights from .npy
files, nodes (op type, input/output tensor names, attrs, optional `preprocess`, optional
`bin_file_path`) in execution order, and the output tensor names.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from opbuild.abi.vocabulary import DEFAULT_IMPL_MODE, DEFAULT_SOC
from opbuild.om.errors import OmError
from opbuild.runtime_paths import schemas_dir
from opbuild.spec.yaml_marks import MAX_YAML_BYTES, safe_load, size_problem


@lru_cache(maxsize=1)
def _validator() -> Any:
    from jsonschema import Draft202012Validator

    schema = json.loads((schemas_dir() / "model.schema.json").read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


@dataclass
class Node:
    name: str
    op: str
    inputs: list[Any]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)
    package: str | None = None
    preprocess: bool = False
    bin_file_path: Path | None = None
    origin: str | None = None
    """Where the node came from when not from a model YAML (an ONNX node: its type, opset, the
    package whose plugin mapped it and the packages searched); every error about it says so."""

    @property
    def label(self) -> str:
        """The node as errors name it."""
        return f"{self.name} ({self.origin})" if self.origin else self.name


@dataclass
class Model:
    name: str
    soc: str
    deterministic: bool
    impl_mode: str
    inputs: list[tuple[str, str, tuple[int, ...]]]
    weights: dict[str, np.ndarray]
    nodes: list[Node]
    outputs: list[str]
    source: Path | None = None

    @property
    def dynamic(self) -> bool:
        return any(d == -1 for _, _, shape in self.inputs for d in shape)


def model_from_dict(data: Any, base_dir: Path, where: str = "<model>") -> Model:
    """Validate `data` (the parsed YAML) and build the Model; OmError listing every problem."""
    errors = sorted(_validator().iter_errors(data), key=lambda e: list(e.path))
    if errors:
        lines = [f"{where}: $.{'.'.join(str(p) for p in e.path)}: {e.message}" for e in errors]
        raise OmError("invalid model:\n  " + "\n  ".join(lines))
    problems: list[str] = []
    defined: set[str] = set()

    def define(name: str, what: str) -> None:
        if name in defined:
            problems.append(f"{what}: tensor {name!r} is defined twice")
        defined.add(name)

    inputs = []
    for i in data["inputs"]:
        define(i["name"], f"input {i['name']}")
        inputs.append((i["name"], i["dtype"], tuple(i["shape"])))
    weights: dict[str, np.ndarray] = {}
    for w in data.get("weights", []):
        define(w["name"], f"weight {w['name']}")
        path = base_dir / w["file"]
        try:
            weights[w["name"]] = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            problems.append(f"weight {w['name']}: cannot load {path}: {exc}")
    nodes = []
    names: set[str] = set()
    for n in data["nodes"]:
        if n["name"] in names:
            problems.append(f"node {n['name']}: node name used twice")
        names.add(n["name"])
        for t in n["inputs"]:
            for name in (t if isinstance(t, list) else [t]):
                if name is not None and name not in defined:
                    problems.append(f"node {n['name']}: input tensor {name!r} is not defined before it")
        for t in n["outputs"]:
            define(t, f"node {n['name']}")
        bin_path = base_dir / n["bin_file_path"] if n.get("bin_file_path") else None
        if bin_path is not None and not bin_path.is_file():
            problems.append(f"node {n['name']}: bin_file_path {bin_path} is not a file")
        nodes.append(Node(n["name"], n["op"], list(n["inputs"]), list(n["outputs"]), dict(n.get("attrs", {})),
                          n.get("package"), bool(n.get("preprocess", False)), bin_path))
    for o in data["outputs"]:
        if o not in defined:
            problems.append(f"output {o!r} is not a tensor of the model")
    if problems:
        raise OmError(f"invalid model {where}:\n  " + "\n  ".join(problems))
    return Model(data["name"], data.get("soc", DEFAULT_SOC), bool(data.get("deterministic", False)),
                 data.get("impl_mode", DEFAULT_IMPL_MODE), inputs, weights, nodes, list(data["outputs"]))


def load_model(path: str | Path) -> Model:
    path = Path(path)
    try:
        with open(path, "rb") as f:  # bounded like op.yaml (opbuild.spec.yaml_marks)
            raw = f.read(MAX_YAML_BYTES + 1)
        if len(raw) > MAX_YAML_BYTES:
            raise ValueError(str(size_problem(len(raw), str(path))))
        data = safe_load(raw.decode("utf-8"), str(path))
    except OSError as exc:
        raise OmError(f"cannot read model {path}: {exc.strerror}") from None
    except (ValueError, yaml.YAMLError) as exc:
        raise OmError(f"model {path} is not valid YAML: {exc}") from None
    model = model_from_dict(data, path.parent, str(path))
    model.source = path
    return model
