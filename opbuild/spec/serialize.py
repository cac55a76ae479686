"""OpSpec <-> plain JSON data, so a built package carries its ops' definitions.

The generated Python aclnn module of a package embeds `spec_to_dict(spec)` for each op; the
runtime rebuilds the OpSpec with `spec_from_dict` and never needs the source tree. Marks and
absolute paths are left out (builds stay reproducible); `spec_path` is re-rooted by the caller.
Written as JSON with `opbuild.nonfinite.dumps` (a non-finite float becomes "inf" / "-inf" /
"nan"); `spec_from_dict` turns those back into floats for float attributes (`_floats`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from opbuild.nonfinite import from_json

from opbuild.spec.model import (
    Attr,
    Binary,
    KeyRule,
    OpSpec,
    Param,
    ShapeRule,
    SourceRef,
    TensorChoice,
    TilingField,
)

FORMAT_VERSION = 1


def _param_to_dict(p: Param) -> dict[str, Any]:
    d: dict[str, Any] = {
        "name": p.name, "index": p.index, "dtypes": list(p.dtypes), "formats": list(p.formats),
        "param_type": p.param_type, "is_output": p.is_output,
    }
    if p.shape is not None:
        d["shape"] = {"kind": p.shape.kind, "operands": list(p.shape.operands),
                      "axes_attr": p.shape.axes_attr, "keep_dims_attr": p.shape.keep_dims_attr}
    return d


def _param_from_dict(d: dict[str, Any]) -> Param:
    shape = None
    if "shape" in d:
        s = d["shape"]
        shape = ShapeRule(s["kind"], tuple(s["operands"]), s.get("axes_attr"), s.get("keep_dims_attr"))
    return Param(d["name"], d["index"], tuple(d["dtypes"]), tuple(d["formats"]), d["param_type"], d["is_output"], shape)


def spec_to_dict(spec: OpSpec) -> dict[str, Any]:
    """Everything the runtime needs of an op, as JSON-compatible data."""
    return {
        "format_version": FORMAT_VERSION,
        "op": spec.op,
        "snake": spec.snake,
        "description": spec.description,
        "inputs": [_param_to_dict(p) for p in spec.inputs],
        "outputs": [_param_to_dict(p) for p in spec.outputs],
        "attrs": [{"name": a.name, "index": a.index, "type": a.type, "default": a.default} for a in spec.attrs],
        "tiling_data": [{"name": f.name, "type": f.type, "count": f.count} for f in spec.tiling_data],
        "kernel": {"source": spec.kernel.source, "symbol": spec.kernel.symbol},
        "tiling": {"source": spec.tiling.source, "symbol": spec.tiling.symbol},
        "key_rule": {"mode": spec.key_rule.mode, "callback": spec.key_rule.callback,
                     "c_symbol": spec.key_rule.c_symbol, "py_module": spec.key_rule.py_module,
                     "py_function": spec.key_rule.py_function},
        "binaries": [
            {
                "name": b.name,
                "when": [[t, c.dtype, c.format] for t, c in b.when],
                "attr_when": [[a, v] for a, v in b.attr_when],
                "key": b.key,
                "deterministic": b.deterministic,
                "impl_modes": list(b.impl_modes),
                "block_dim": b.block_dim,
            }
            for b in spec.binaries
        ],
        "socs": list(spec.socs),
        "packages": list(spec.packages),
        "domain": spec.domain,
        "core_type": spec.core_type,
        "infer_shape": spec.infer_shape,
        "extra": {k: getattr(spec, k) for k in _extra_fields()},
    }


def _extra_fields() -> list[str]:
    """Fields added to OpSpec after the core set (kept generic so both ends stay in step)."""
    core = {"op", "snake", "description", "inputs", "outputs", "attrs", "tiling_data", "kernel", "tiling",
            "key_rule", "binaries", "socs", "spec_path", "packages", "domain", "core_type", "infer_shape"}
    return sorted(f for f in OpSpec.__dataclass_fields__ if f not in core)


def spec_from_dict(d: dict[str, Any], spec_path: Path) -> OpSpec:
    """The OpSpec of `spec_to_dict` output; `spec_path` locates python key-rule modules."""
    if d.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"op definition format {d.get('format_version')!r} is not {FORMAT_VERSION}")

    def _value(v: Any) -> Any:
        return tuple(v) if isinstance(v, list) else v

    return _floats(OpSpec(
        op=d["op"],
        snake=d["snake"],
        description=d["description"],
        inputs=tuple(_param_from_dict(p) for p in d["inputs"]),
        outputs=tuple(_param_from_dict(p) for p in d["outputs"]),
        attrs=tuple(Attr(a["name"], a["index"], a["type"], _value(a["default"])) for a in d["attrs"]),
        tiling_data=tuple(TilingField(f["name"], f["type"], f["count"]) for f in d["tiling_data"]),
        kernel=SourceRef(d["kernel"]["source"], d["kernel"]["symbol"]),
        tiling=SourceRef(d["tiling"]["source"], d["tiling"]["symbol"]),
        key_rule=KeyRule(**d["key_rule"]),
        binaries=tuple(
            Binary(
                name=b["name"],
                when=tuple((t, TensorChoice(dt, fmt)) for t, dt, fmt in b["when"]),
                attr_when=tuple((a, _value(v)) for a, v in b["attr_when"]),
                key=b["key"],
                deterministic=b["deterministic"],
                impl_modes=tuple(b["impl_modes"]),
                block_dim=b["block_dim"],
            )
            for b in d["binaries"]
        ),
        socs=tuple(d["socs"]),
        spec_path=spec_path,
        packages=tuple(d["packages"]),
        domain=d["domain"],
        core_type=d["core_type"],
        infer_shape=d["infer_shape"],
        **{k: _value(v) for k, v in d.get("extra", {}).items()},
    ))


def _floats(spec: OpSpec) -> OpSpec:
    """`spec` with the non-finite floats of its float attributes as floats again (their defaults
    and the values binaries pin them to): JSON spells them "inf", "-inf", "nan" (opbuild.nonfinite)."""
    types = {a.name: a.type for a in spec.attrs}

    def value(attr_type: str, v: Any) -> Any:
        back = from_json(attr_type, list(v) if isinstance(v, tuple) else v)
        return tuple(back) if isinstance(back, list) else back

    attrs = tuple(dataclasses.replace(a, default=value(a.type, a.default)) for a in spec.attrs)
    binaries = tuple(dataclasses.replace(b, attr_when=tuple((n, value(types.get(n, ""), v)) for n, v in b.attr_when))
                     for b in spec.binaries)
    return dataclasses.replace(spec, attrs=attrs, binaries=binaries)
