"""msopgen's IR JSON (`msopgen gen -i X.json`, `opbuild import msopgen X.json`) read into `IrOp`s.

The file is a list of ops, each

    {"op": "AddCustom",
     "input_desc":  [{"name": "x", "param_type": "required", "format": ["ND"], "type": ["fp16"]}],
     "output_desc": [{"name": "z", "param_type": "required", "format": ["ND"], "type": ["float16"]}],
     "attr": [{"name": "alpha", "param_type": "optional", "type": "float", "default_value": "1.0"}]}

`type` lists take msopgen's aliases (fp16/half, float/fp32, bf16, double, DT_FLOAT16, ...; see
`DTYPE_ALIASES`) and become opbuild dtype names; `type` and `format` lists are columns (one entry,
or one per combination, as op.yaml's). Every problem is an `IrError` naming the file and the JSON
path (`X.json: AddCustom: input_desc[1] (y): type 'fp61': unknown dtype; did you mean 'fp16'?`), or
the line and column of a syntax error.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opbuild.abi.vocabulary import ATTR_TYPES, DTYPE_SPELLINGS, FORMAT_NAMES
from opbuild.suggest import did_you_mean

DTYPE_ALIASES: dict[str, str] = DTYPE_SPELLINGS
"""msopgen's `type` spellings (lowercase) -> opbuild dtype name: the vocabulary's table."""

ATTR_ALIASES: dict[str, str] = {
    **{a.name: a.name for a in ATTR_TYPES},
    **{a.ops_info.lower(): a.name for a in ATTR_TYPES},
    "string": "str", "listint": "list_int", "listfloat": "list_float", "listbool": "list_bool",
}
"""msopgen's attr `type` spellings (lowercase: int, float, bool, str/string, listInt, ...) -> op.yaml attr type."""

PARAM_TYPES = ("required", "optional", "dynamic")
_OP_NAME = re.compile(r"^[A-Z][A-Za-z0-9]*$")
_TENSOR_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class IrError(ValueError):
    """A problem of an IR JSON file (the message names file and place)."""


@dataclass(frozen=True)
class IrTensor:
    name: str
    param_type: str
    dtypes: tuple[str, ...]
    formats: tuple[str, ...]


@dataclass(frozen=True)
class IrAttr:
    name: str
    type: str
    required: bool
    default: Any = None


@dataclass(frozen=True)
class IrOp:
    op: str
    inputs: tuple[IrTensor, ...]
    outputs: tuple[IrTensor, ...]
    attrs: tuple[IrAttr, ...] = field(default=())

    @property
    def columns(self) -> int:
        """The number of dtype/format combinations (the longest list)."""
        return max(max(len(t.dtypes), len(t.formats)) for t in (*self.inputs, *self.outputs))

    def column(self, tensor: IrTensor, i: int) -> tuple[str, str]:
        """(dtype, format) of `tensor` in combination `i`."""
        return tensor.dtypes[i if len(tensor.dtypes) > 1 else 0], tensor.formats[i if len(tensor.formats) > 1 else 0]


def load(path: Path) -> list[IrOp]:
    """The ops of the IR JSON file at `path`."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise IrError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise IrError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise IrError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    return parse(doc, str(path))


def parse(doc: Any, file: str) -> list[IrOp]:
    """The ops of an IR JSON document (`file` names it in errors)."""
    if isinstance(doc, dict):
        doc = [doc]
    if not isinstance(doc, list) or not doc:
        raise IrError(f"{file}: expected a list of ops ([{{\"op\": ..., \"input_desc\": [...], ...}}])")
    ops = [_op(item, f"{file}: [{i}]") for i, item in enumerate(doc)]
    names = [o.op for o in ops]
    for name in names:
        if names.count(name) > 1:
            raise IrError(f"{file}: op {name} is described twice")
    return ops


def _need(obj: Any, key: str, kind: type, where: str) -> Any:
    if not isinstance(obj, dict):
        raise IrError(f"{where}: expected an object")
    if key not in obj:
        raise IrError(f"{where}: missing \"{key}\"")
    value = obj[key]
    if not isinstance(value, kind) or (kind is list and not value):
        names: dict[type, str] = {str: "a string", list: "a non-empty list"}
        what = names.get(kind, kind.__name__)
        raise IrError(f"{where}: \"{key}\" must be {what}")
    return value


def _op(item: Any, where: str) -> IrOp:
    name = _need(item, "op", str, where)
    if not _OP_NAME.match(name):
        raise IrError(f"{where}: op {name!r} must be CamelCase (a letter A-Z, then letters and digits)")
    where = f"{where.rsplit(': ', 1)[0]}: {name}"
    known = {"op", "input_desc", "output_desc", "attr"}
    for key in item:
        if key not in known:
            raise IrError(f"{where}: unknown key {key!r}{did_you_mean(key, known)}")
    inputs = tuple(_tensor(t, f"{where}: input_desc[{i}]", True)
                   for i, t in enumerate(_need(item, "input_desc", list, where)))
    outputs = tuple(_tensor(t, f"{where}: output_desc[{i}]", False)
                    for i, t in enumerate(_need(item, "output_desc", list, where)))
    attrs_raw = item.get("attr", [])
    if not isinstance(attrs_raw, list):
        raise IrError(f"{where}: \"attr\" must be a list")
    attrs = tuple(_attr(a, f"{where}: attr[{i}]") for i, a in enumerate(attrs_raw))
    seen: set[str] = set()
    for n in [t.name for t in (*inputs, *outputs)] + [a.name for a in attrs]:
        if n in seen:
            raise IrError(f"{where}: name {n!r} is used twice (inputs, outputs and attrs share one namespace)")
        seen.add(n)
    op = IrOp(name, inputs, outputs, attrs)
    columns = op.columns
    for kind, tensors in (("input_desc", inputs), ("output_desc", outputs)):
        for i, t in enumerate(tensors):
            for key, values in (("type", t.dtypes), ("format", t.formats)):
                if len(values) not in (1, columns):
                    raise IrError(f"{where}: {kind}[{i}] ({t.name}): {key} has {len(values)} entries; "
                                  f"give 1 or {columns} (one per combination, as the longest list)")
    return op


def _tensor(item: Any, where: str, is_input: bool) -> IrTensor:
    name = _need(item, "name", str, where)
    where = f"{where} ({name})"
    if not _TENSOR_NAME.match(name):
        raise IrError(f"{where}: name must be lowercase (a-z, then a-z, 0-9, _)")
    param = item.get("param_type", "required")
    allowed = PARAM_TYPES if is_input else ("required", "dynamic")
    if param not in allowed:
        raise IrError(f"{where}: param_type {param!r} is not one of {', '.join(allowed)}"
                      f"{did_you_mean(str(param), allowed)}")
    dtypes = []
    for raw in _need(item, "type", list, where):
        alias = DTYPE_ALIASES.get(str(raw).lower()) if isinstance(raw, str) else None
        if alias is None:
            raise IrError(f"{where}: type {raw!r}: unknown dtype{did_you_mean(str(raw), DTYPE_ALIASES)} "
                          f"(known: {', '.join(sorted(k for k in DTYPE_ALIASES if not k.startswith('dt_')))}, DT_*)")
        dtypes.append(alias)
    formats = []
    for raw in item.get("format", ["ND"]) or ["ND"]:
        fmt = str(raw).upper()
        if fmt not in FORMAT_NAMES:
            raise IrError(f"{where}: format {raw!r} is not supported (opbuild has {', '.join(FORMAT_NAMES)})"
                          f"{did_you_mean(fmt, FORMAT_NAMES)}")
        formats.append(fmt)
    return IrTensor(name, param, tuple(dtypes), tuple(formats))


def _attr(item: Any, where: str) -> IrAttr:
    name = _need(item, "name", str, where)
    where = f"{where} ({name})"
    if not _TENSOR_NAME.match(name):
        raise IrError(f"{where}: name must be lowercase (a-z, then a-z, 0-9, _)")
    raw_type = _need(item, "type", str, where)
    type_ = ATTR_ALIASES.get(raw_type.lower())
    if type_ is None:
        raise IrError(f"{where}: type {raw_type!r}: unknown attr type{did_you_mean(raw_type, ATTR_ALIASES)}")
    param = item.get("param_type", "optional" if "default_value" in item else "required")
    if param not in ("required", "optional"):
        raise IrError(f"{where}: param_type {param!r} is not one of required, optional")
    if param == "required":
        return IrAttr(name, type_, True)
    if "default_value" not in item:
        raise IrError(f"{where}: an optional attr needs \"default_value\"")
    return IrAttr(name, type_, False, _value(item["default_value"], type_, where))


def _value(raw: Any, type_: str, where: str) -> Any:
    """default_value (a JSON value, or msopgen's string spelling of one) as a value of `type_`."""
    spec = next(a for a in ATTR_TYPES if a.name == type_)
    if isinstance(raw, str) and type_ != "str":
        text = raw.strip()
        try:
            raw = json.loads(text.lower() if spec.element == "bool" else text)
        except json.JSONDecodeError:
            raise IrError(f"{where}: default_value {text!r} is not a {type_}") from None
    if spec.element == "float":  # a float takes an int (1 -> 1.0)
        raw = [float(x) if isinstance(x, int) and not isinstance(x, bool) else x for x in raw] \
            if spec.is_list and isinstance(raw, list) else \
            (float(raw) if isinstance(raw, int) and not isinstance(raw, bool) else raw)
    if not spec.check(raw):
        raise IrError(f"{where}: default_value {raw!r} is not a {type_}")
    return list(raw) if spec.is_list else raw
