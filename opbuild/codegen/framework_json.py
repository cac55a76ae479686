"""The package's adapter-plugin file `framework/onnx/opbuild_onnx_plugins.json`: written by the
build from the specs' `framework` sections, read back by `opbuild om build model.onnx`.

Why a file of its own: the converter must map ONNX nodes from an installed package alone (no
`ops/` tree), and only the package a node maps to needs its Python module imported. The file
holds, per op, the `framework` section exactly as op.yaml spells it (every default written out),
so the generated schema of op.yaml (opbuild/spec/fields.py) validates it when it is read.

    {"format_version": 1, "ops": {"MulCustom": {"onnx": [{"op_type": "Mul", "domain": "ai.onnx",
      "min_opset": 7, "attrs": {}, "defaults": {}, "inputs": ["x", "y"], "outputs": ["z"]}]}}}
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from opbuild import safefile
from opbuild.nonfinite import dumps, to_json
from opbuild.spec.model import Framework, OnnxOrigin, OpSpec

FORMAT_VERSION = 1
MAX_BYTES = 16 << 20
"""A plugin file is read whole; anything larger is not one the build wrote."""


class PluginFileError(ValueError):
    """The plugin file of a package is unreadable or malformed (the message names the file)."""


def _origin_to_json(origin: OnnxOrigin) -> dict[str, Any]:
    out: dict[str, Any] = {"op_type": origin.op_type, "domain": origin.domain, "min_opset": origin.min_opset,
                           "attrs": dict(origin.attrs), "defaults": {k: to_json(v) for k, v in origin.defaults},
                           "inputs": list(origin.inputs), "outputs": list(origin.outputs)}
    if origin.max_opset is not None:
        out["max_opset"] = origin.max_opset
    return out


def render_onnx_plugins(specs: list[OpSpec]) -> str:
    """The plugin file of a package holding `specs` (ops without a framework section left out).

    Two ops of the package must not map one ONNX op for a common opset (which one a node
    becomes would depend on the order of the file): `spec.project_checks.project_problems`
    says so, for `opbuild validate` and the build, before anything is written."""
    ops = {s.op: {"onnx": [_origin_to_json(o) for o in s.framework.onnx]} for s in specs if s.framework.onnx}
    return dumps({"format_version": FORMAT_VERSION, "ops": ops}, indent=2, sort_keys=True) + "\n"


@lru_cache(maxsize=1)
def _validator() -> Any:
    from jsonschema import Draft202012Validator

    from opbuild.spec.fields import DEFS, FRAMEWORK

    schema = {"type": "object", "additionalProperties": False, "required": ["format_version", "ops"],
              "properties": {"format_version": {"const": FORMAT_VERSION},
                             "ops": {"type": "object", "additionalProperties": FRAMEWORK.schema()}},
              "$defs": {name: t.schema() for name, t in DEFS.items()}}
    return Draft202012Validator(schema)


def read_onnx_plugins(path: Path) -> dict[str, Framework]:
    """op -> its Framework, from a package's plugin file ({} when the package has none).

    The file comes from an installed package, so it is untrusted: size-bounded, strict JSON,
    checked against the spec schema; PluginFileError names the file and the first problem."""
    try:
        raw = safefile.read_bytes(path, MAX_BYTES)  # a regular file only (a FIFO is not waited on)
    except FileNotFoundError:
        return {}
    except safefile.UnsafeFileError as exc:
        raise PluginFileError(str(exc)) from None
    try:
        data = safefile.loads_json(path, raw.decode("utf-8"))  # nesting bounded
    except UnicodeDecodeError as exc:
        raise PluginFileError(f"{path}: not valid JSON: {exc}") from None
    except safefile.UnsafeFileError as exc:
        raise PluginFileError(str(exc)) from None
    error = next(iter(sorted(_validator().iter_errors(data), key=lambda e: list(e.path))), None)
    if error is not None:
        where = "$" + "".join(f"[{p!r}]" if isinstance(p, str) else f"[{p}]" for p in error.path)
        raise PluginFileError(f"{path}: {where}: {error.message}")
    out = {}
    for op, section in data["ops"].items():
        origins = []
        for d in section.get("onnx", []):
            if "inputs" not in d or "outputs" not in d:
                raise PluginFileError(f"{path}: op {op}: an onnx entry lacks inputs or outputs")
            origins.append(OnnxOrigin(
                op_type=d["op_type"], inputs=tuple(d["inputs"]), outputs=tuple(d["outputs"]),
                domain=d.get("domain", "ai.onnx"), min_opset=d.get("min_opset", 1), max_opset=d.get("max_opset"),
                attrs=tuple(d.get("attrs", {}).items()), defaults=tuple(d.get("defaults", {}).items())))
        out[op] = Framework(onnx=tuple(origins))
    _check_no_overlap(path, out)
    return out


def _check_no_overlap(path: Path, plugins: dict[str, Framework]) -> None:
    """PluginFileError when two entries of the file map the same ONNX op for a common opset
    (OnnxOrigin.overlaps, the rule the build checks its own packages by): which op a node
    becomes would depend on the file's order. Across packages the search order decides."""
    entries = [(op, k, origin) for op, framework in plugins.items() for k, origin in enumerate(framework.onnx)]
    for i, (op, k, origin) in enumerate(entries):
        for other, j, earlier in entries[:i]:
            if earlier.overlaps(origin):
                raise PluginFileError(
                    f"{path}: ops.{op}.onnx[{k}] (opsets {origin.opset_range()}) and ops.{other}.onnx[{j}] (opsets "
                    f"{earlier.opset_range()}) both map {origin.domain}::{origin.op_type}: which op a node becomes "
                    f"would be ambiguous")
