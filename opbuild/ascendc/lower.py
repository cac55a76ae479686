"""An Ascend C op's spec, checked against its sources and lowered to the form every later stage
already knows.

An Ascend C op (`kernel.api: ascendc`) names an op_host C++ source instead of a C tiling source
and tiling-data fields. Its `OpSpec` comes out of the spec checker with `tiling` = (host source,
the bridge's tiling function) and nothing else of the host; this module fills in the rest from
what the sources say, once, at validation (`opbuild validate` and the build run it alike):

* the OpDef read back from the host source (`HostDescription`, produced by the describe step of
  opbuild/ascendc/host.py) is compared with op.yaml: inputs, outputs (names, order, param types,
  every dtype/format column), attrs (names, types, required/optional, defaults) and SoCs; every
  difference is one problem at the op.yaml line naming the C++ line (`ascendc_problems`);
* the tiling class becomes `tiling_data` byte for byte in CANN's layout (each field at its
  natural alignment, the whole rounded up to 8 bytes), padding as `opbuild_pad<N>` byte arrays,
  so `codegen.tiling_struct_size` (the kernel JSON's opParaSize) is the class's size;
* the tiling keys are the kernel's `TILING_KEY_IS` values after preprocessing (kernel_keys.py);
* an output op.yaml gives no `shape` gets the OpDef's InferShape (the bridge's infer function),
  when the OpDef sets one.

The lowered spec is an ordinary `OpSpec` (serializable, cached like any other); `kernel_api` and
`tiling_class` tell the build and the codegen which sources to compile and how.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable

from opbuild.abi.ascendc_bridge import bridge_symbol
from opbuild.abi.vocabulary import SOC_NAMES, TILING_FIELD_TYPE, TILING_FIELD_TYPE_NAMES
from opbuild.spec.errors import JsonPath, Problem
from opbuild.spec.model import Attr, OpSpec, Param, ShapeRule, TilingField, is_tiling_field_type
from opbuild.spec.yaml_marks import Marks
from opbuild.suggest import did_you_mean

TILING_ALIGN = 8
"""CANN rounds a tiling class up to a multiple of 8 bytes (its opParaSize)."""

PAD_PREFIX = "opbuild_pad"
"""Name prefix of the byte arrays that stand for a tiling class's alignment padding."""

_C_TYPE_TO_FIELD: dict[str, str] = {
    **{f"{name}_t": name for name in TILING_FIELD_TYPE_NAMES if name.startswith(("int", "uint"))},
    "float": "float", "double": "double",
    "int": "int32", "unsigned int": "uint32", "unsigned": "uint32", "short": "int16", "unsigned short": "uint16",
    "char": "int8", "signed char": "int8", "unsigned char": "uint8", "bool": "uint8",
    "long": "int64", "unsigned long": "uint64", "long long": "int64", "unsigned long long": "uint64",
    "size_t": "uint64",
}
"""The C++ type of a tiling-class field -> the tiling-field type of the same size and kind
(LP64; `bool` is stored as one byte)."""


class _Where:
    """Where the host description says something was written: `file:line` for messages."""

    def __init__(self, host_shown: str) -> None:
        self.host_shown = host_shown

    def __call__(self, item: dict[str, Any]) -> str:
        line = item.get("line")
        return f"{self.host_shown}:{line}" if isinstance(line, int) and line > 0 else self.host_shown


def _expand(values: list[str], columns: int) -> list[str]:
    return values * columns if len(values) == 1 else list(values)


def _columns(items: Iterable[dict[str, Any]]) -> int:
    return max([max(len(i.get("dtypes") or [""]), len(i.get("formats") or [""])) for i in items] or [1])


class _Comparison:
    """The problems between op.yaml (spec + marks) and one OpDef of the host description."""

    def __init__(self, spec: OpSpec, marks: Marks, opdef: dict[str, Any], where: _Where) -> None:
        self.spec, self.marks, self.opdef, self.where = spec, marks, opdef, where
        self.problems: list[Problem] = []

    def err(self, path: JsonPath, message: str) -> None:
        self.problems.append(self.marks.problem(path, message))

    def run(self) -> list[Problem]:
        spec, opdef = self.spec, self.opdef
        params = list(opdef.get("inputs", [])) + list(opdef.get("outputs", []))
        host_columns = _columns(params)
        if spec.combination_count != host_columns:
            self.err(("inputs",), f"op.yaml declares {spec.combination_count} dtype/format combination(s), the "
                                  f"OpDef of {spec.op} {host_columns} ({self.where(opdef)})")
        else:
            self.params("inputs", spec.inputs, opdef.get("inputs", []), host_columns)
            self.params("outputs", spec.outputs, opdef.get("outputs", []), host_columns)
        self.attrs(spec.attrs, opdef.get("attrs", []))
        self.socs(opdef.get("socs", []))
        return self.problems

    def params(self, kind: str, mine: tuple[Param, ...], theirs: list[dict[str, Any]], columns: int) -> None:
        role = kind[:-1]
        if len(mine) != len(theirs):
            names = ", ".join(p["name"] for p in theirs) or "none"
            self.err((kind,), f"op.yaml declares {len(mine)} {kind}, the OpDef of {self.spec.op} {len(theirs)} "
                              f"({names}; {self.where(self.opdef)})")
        for i, (p, h) in enumerate(zip(mine, theirs, strict=False)):
            at = self.where(h)
            if p.name != h["name"]:
                self.err((kind, i, "name"), f"{role} {i} is {p.name!r} here but {h['name']!r} in the OpDef ({at})")
                continue
            if p.param_type != h.get("param_type", "required"):
                self.err((kind, i, "param_type"), f"{role} {p.name} is {p.param_type} here but "
                                                  f"{h.get('param_type')} in the OpDef ({at})")
            for what, column_of in (("dtypes", p.dtype_at), ("formats", p.format_at)):
                host_values = _expand(list(h.get(what) or []), columns)
                if not host_values:
                    continue
                ours = [column_of(c) for c in range(columns)]
                if ours != host_values:
                    self.err((kind, i, what), f"{role} {p.name} {what} (by combination) {ours} differ from the "
                                              f"OpDef's {host_values} ({at})")

    def attrs(self, mine: tuple[Attr, ...], theirs: list[dict[str, Any]]) -> None:
        if len(mine) != len(theirs):
            names = ", ".join(a["name"] for a in theirs) or "none"
            self.err(("attrs",), f"op.yaml declares {len(mine)} attrs, the OpDef of {self.spec.op} {len(theirs)} "
                                 f"({names}; {self.where(self.opdef)})")
        for i, (a, h) in enumerate(zip(mine, theirs, strict=False)):
            at = self.where(h)
            if a.name != h["name"]:
                self.err(("attrs", i, "name"), f"attr {i} is {a.name!r} here but {h['name']!r} in the OpDef ({at})")
                continue
            if a.type != h.get("type"):
                self.err(("attrs", i, "type"), f"attr {a.name} is {a.type} here but {h.get('type')} in the OpDef ({at})")
                continue
            host_required = h.get("param_type", "optional") == "required"
            if a.required != host_required:
                self.err(("attrs", i, "name"), f"attr {a.name} is {'required' if a.required else 'optional'} here but "
                                               f"{'required' if host_required else 'optional'} in the OpDef ({at})")
            elif not a.required and not _same_value(a.default, h.get("default")):
                self.err(("attrs", i, "default"), f"attr {a.name} defaults to {_show(a.default)} here but to "
                                                  f"{_show(h.get('default'))} in the OpDef ({at})")

    def socs(self, theirs: list[str]) -> None:
        if not theirs:
            return
        for i, soc in enumerate(self.spec.socs):
            if soc not in theirs:
                self.err(("socs", i), f"SoC {soc} is not configured by the OpDef of {self.spec.op} (AddConfig: "
                                      f"{', '.join(theirs)}; {self.where(self.opdef)})")


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or (isinstance(a, bool) and isinstance(b, bool) and a == b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b) or abs(float(a) - float(b)) <= 1e-6 * max(1.0, abs(float(a)))
    return a == b


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        value = list(value)
    return repr(value)


def find_opdef(description: dict[str, Any], op: str) -> dict[str, Any] | None:
    return next((o for o in description.get("ops", []) if o.get("op") == op), None)


def find_tiling(description: dict[str, Any], op: str) -> dict[str, Any] | None:
    return next((t for t in description.get("tiling", []) if t.get("op") == op), None)


def lowered_tiling_fields(tiling: dict[str, Any]) -> tuple[list[TilingField], list[str]]:
    """The class's fields as tiling_data (padding made explicit, CANN's size) and the problems
    (a field type with no tiling-field equivalent). A nested class (TILING_DATA_FIELD_DEF_STRUCT)
    is its bytes here, a uint8 array of its size at its offset: the kernel reads it as the nested
    struct of the kernel-side header (OpSpec.tiling_header), the host writes it with SaveToBuffer."""
    fields: list[TilingField] = []
    problems: list[str] = []
    offset = 0
    pads = 0
    for f in tiling.get("fields", []):
        if f.get("struct"):
            start, size = int(f["offset"]), int(f["size"])
            if start > offset:
                fields.append(TilingField(f"{PAD_PREFIX}{pads}", "uint8", start - offset))
                pads += 1
            fields.append(TilingField(str(f["name"]), "uint8", size))
            offset = start + size
            continue
        ctype = " ".join(str(f.get("type", "")).replace("std::", "").split())
        kind = _C_TYPE_TO_FIELD.get(ctype)
        if kind is None or not is_tiling_field_type(kind):
            problems.append(f"tiling field {f['name']} has type {ctype!r}, which has no tiling-data equivalent "
                            f"(integers, float, double, bool)")
            continue
        start = int(f["offset"])
        if start > offset:
            fields.append(TilingField(f"{PAD_PREFIX}{pads}", "uint8", start - offset))
            pads += 1
        count = int(f.get("count", 1) or 1)
        fields.append(TilingField(str(f["name"]), kind, count))
        offset = start + TILING_FIELD_TYPE[kind].size * count
    size = int(tiling.get("size", offset))
    if size > offset:
        fields.append(TilingField(f"{PAD_PREFIX}{pads}", "uint8", size - offset))
    return fields, problems


def ascendc_problems(spec: OpSpec, marks: Marks, description: dict[str, Any], host_shown: str,
                     kernel_keys: tuple[int, ...]) -> tuple[OpSpec | None, list[Problem]]:
    """Check `spec` against the host description and lower it (see the module docstring):
    (the lowered spec, []) or (None, every problem)."""
    from opbuild.codegen.tiling import tiling_struct_size

    where = _Where(host_shown)
    opdef = find_opdef(description, spec.op)
    if opdef is None:
        found = [o.get("op", "?") for o in description.get("ops", [])]
        listed = f"it registers {', '.join(found)}" if found else "it registers none (no OP_ADD)"
        return None, [marks.problem(("host", "source"), f"the host source {host_shown} registers no OpDef "
                                                        f"{spec.op} (OP_ADD({spec.op})); {listed}"
                                                        f"{did_you_mean(spec.op, found)}")]
    problems = _Comparison(spec, marks, opdef, where).run()
    if not opdef.get("has_tiling"):
        problems.append(marks.problem(("host", "source"), f"the OpDef of {spec.op} sets no tiling function "
                                                          f"(AICore().SetTiling(...)) ({where(opdef)})"))
    tiling = find_tiling(description, spec.op)
    fields: list[TilingField] = []
    tiling_class = ""
    if tiling is None:
        problems.append(marks.problem(("host", "source"), f"the host source registers no tiling data class for "
                                                          f"{spec.op} (REGISTER_TILING_DATA_CLASS({spec.op}, ...))"))
    else:
        tiling_class = str(tiling.get("class", ""))
        fields, field_problems = lowered_tiling_fields(tiling)
        problems += [marks.problem(("host", "source"), f"{m} ({where(tiling)})") for m in field_problems]
    if problems:
        return None, problems
    outputs = spec.outputs
    infer = None
    if opdef.get("has_infer_shape"):
        infer = bridge_symbol(spec.snake, "infer_shape")
        outputs = tuple(p if p.shape is not None else replace(p, shape=ShapeRule("function", (infer,)))
                        for p in spec.outputs)
    lowered = replace(spec, tiling_data=tuple(fields), tiling_class=tiling_class, tiling_keys=kernel_keys,
                      outputs=outputs, infer_shape=spec.infer_shape or (infer if outputs != spec.outputs else None))
    size = int(tiling.get("size", 0)) if tiling else 0
    if tiling is not None and tiling_struct_size(lowered) != max(size, 1):
        return None, [marks.problem(("host", "source"), f"the tiling class {tiling_class} of {spec.op} is {size} "
                                                        f"bytes but lowers to {tiling_struct_size(lowered)} "
                                                        f"(an opbuild bug: please report it)")]
    return lowered, []


def known_socs(configured: Iterable[str]) -> list[str]:
    """The SoCs of an OpDef's AddConfig list that opbuild can build for (in its order)."""
    return [s for s in configured if s in SOC_NAMES]
