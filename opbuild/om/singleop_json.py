"""CANN's single-op description files (`atc --singleop`): read, check, name.

A file is a JSON list of op descriptions
`{"op", ["name",] "input_desc": [{"format", "shape", "type"[, "name"][, "shape_range"]}], "output_desc": [...],
"attr": [{"name", "type", "value"}]}`. `read_single_op_json` checks every entry before any op is
looked up, each error naming the file and the line of its entry; `inputs_by_param` and
`attr_values` match an entry to the op's IR, `check_outputs` its `output_desc` to what the
build inferred; `file_name` is CANN's default model name (docs/cli.md, "atc").
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from opbuild.abi.vocabulary import DTYPE, FORMAT
from opbuild.om.errors import OmError

JSON_DTYPES = {"float": "float32", "double": "float64", **{d: d for d in DTYPE}}
"""Single-op JSON `type` spellings -> opbuild dtype names (CANN writes `float` for float32)."""
JSON_ATTR_TYPES = {"bool": "bool", "int": "int", "float": "float", "string": "str", "str": "str",
                   "list_int": "list_int", "list_float": "list_float", "list_bool": "list_bool"}
"""Single-op JSON attr `type` -> the spec attr type."""
# ---- --singleop -----------------------------------------------------------------------------------

def _skip_ws(text: str, pos: int) -> int:
    """The position of the first non-whitespace character (JSON's whitespace) at or after `pos`."""
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _json_entries(path: Path) -> list[tuple[int, Any]]:
    """(line, value) of each element of the JSON array in `path`; OmError `path:line: ...`."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise OmError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        raise OmError(f"{path}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") from None
    except RecursionError:
        raise OmError(f"{path}: nested too deeply") from None
    dec = json.JSONDecoder()
    pos = _skip_ws(text, 0)
    if text[pos:pos + 1] != "[":
        raise OmError(f"{path}:1: expected a JSON list of op descriptions ([{{\"op\": ...}}, ...])")
    pos = _skip_ws(text, pos + 1)
    out = []
    while text[pos:pos + 1] != "]":
        value, end = dec.raw_decode(text, pos)
        out.append((text.count("\n", 0, pos) + 1, value))
        pos = _skip_ws(text, end)
        if text[pos:pos + 1] == ",":
            pos = _skip_ws(text, pos + 1)
    if not out:
        raise OmError(f"{path}:1: the list has no op descriptions")
    return out


@dataclass
class TensorDesc:
    dtype: str
    format: str
    shape: list[int]
    name: str | None


def _tensor(d: Any, where: str) -> TensorDesc:
    if not isinstance(d, dict):
        raise OmError(f"{where}: expected an object {{\"format\", \"shape\", \"type\"}}")
    unknown = sorted(set(d) - {"name", "param_type", "format", "shape", "type", "shape_range", "dynamic_input",
                               "origin_format", "origin_shape"})
    if unknown:
        raise OmError(f"{where}: unknown field(s) {unknown}")
    missing = [k for k in ("format", "shape", "type") if k not in d]
    if missing:
        raise OmError(f"{where}: missing {', '.join(missing)}")
    dt = JSON_DTYPES.get(d["type"]) if isinstance(d["type"], str) else None
    if dt is None:
        raise OmError(f"{where}.type: {d['type']!r} is not a type opbuild's ops take ({', '.join(JSON_DTYPES)})")
    if d["format"] not in FORMAT:
        raise OmError(f"{where}.format: {d['format']!r} is not one of {', '.join(FORMAT)}")
    shape = d["shape"]
    if not isinstance(shape, list) or any(type(x) is not int or x < -1 for x in shape) or len(shape) > 8:
        raise OmError(f"{where}.shape: {shape!r} is not a list of at most 8 dims, each >= 0 or -1 (dynamic; "
                      f"-2, unknown rank, is not supported)")
    rng = d.get("shape_range")
    if rng is not None and (not isinstance(rng, list) or len(rng) != len(shape) or any(
            not isinstance(r, list) or len(r) != 2 or any(type(v) is not int for v in r) for r in rng)):
        raise OmError(f"{where}.shape_range: expected one [min, max] per dim (max -1: unbounded)")
    name = d.get("dynamic_input") or d.get("name")
    return TensorDesc(dt, d["format"], shape, name if isinstance(name, str) else None)


def file_name(index: int, op: str, inputs: Sequence[TensorDesc], outputs: Sequence[TensorDesc]) -> str:
    """CANN's default single-op model name: `<index>_<op type>`, then per input and per output
    `_<ge::DataType>_<ge::Format>` and `_<dim>` for each dim (-1 as -1); e.g.
    0_AddCustom_1_2_8_2048_1_2_8_2048_1_2_8_2048 (float16 = 1, ND = 2)."""
    parts = [str(index), op]
    for t in (*inputs, *outputs):
        parts += [str(DTYPE[t.dtype].ge), str(FORMAT[t.format].ge), *(str(d) for d in t.shape)]
    return "_".join(parts)


def inputs_by_param(spec, descs: list[TensorDesc], where: str) -> dict[str, list[tuple[str, list[int]]]]:
    """The JSON input descs as the op's IR inputs: by name when every desc names an IR input (a
    dynamic input's tensors `x`, `x0`, `x1`..., or `dynamic_input: x`), else in IR order."""
    params = {p.name: p for p in spec.inputs}

    def param_of(name: str | None) -> str | None:
        if name in params:
            return name
        m = re.fullmatch(r"(.*?)(\d+)", name or "")
        return m.group(1) if m and m.group(1) in params and params[m.group(1)].param_type == "dynamic" else None

    if descs and all(param_of(d.name) for d in descs):
        pairs = [(name, k, d) for k, d in enumerate(descs) if (name := param_of(d.name)) is not None]
    elif len(descs) > len(spec.inputs):
        raise OmError(f"{where}: {len(descs)} entries, {spec.op} has {len(spec.inputs)} inputs "
                      f"({', '.join(params)}); name a dynamic input's tensors {spec.inputs[0].name}0, "
                      f"{spec.inputs[0].name}1, ...")
    else:
        # (fewer entries than inputs: the trailing ones are not given)
        pairs = [(p.name, k, d) for k, (p, d) in enumerate(zip(spec.inputs, descs, strict=False))]
    given: dict[str, list[tuple[str, list[int]]]] = {}
    for name, k, d in pairs:
        formats = params[name].formats
        if d.format not in formats:
            raise OmError(f"{where}[{k}].format: {d.format}, but {spec.op}'s input {name} takes {', '.join(formats)}")
        given.setdefault(name, []).append((d.dtype, d.shape))
    return given


def attr_values(entry: dict[str, Any], spec, where: str) -> dict[str, Any]:
    attrs = entry.get("attr", [])
    if not isinstance(attrs, list):
        raise OmError(f"{where}attr: expected a list of {{\"name\", \"type\", \"value\"}}")
    out: dict[str, Any] = {}
    for k, a in enumerate(attrs):
        w = f"{where}attr[{k}]"
        if not isinstance(a, dict) or not {"name", "type", "value"} <= set(a):
            raise OmError(f"{w}: expected {{\"name\", \"type\", \"value\"}}")
        t = JSON_ATTR_TYPES.get(a["type"]) if isinstance(a["type"], str) else None
        if t is None:
            raise OmError(f"{w}.type: {a['type']!r} is not one of {', '.join(JSON_ATTR_TYPES)}")
        known = {x.name: x.type for x in spec.attrs}
        if a["name"] not in known:
            raise OmError(f"{w}.name: {spec.op} has no attribute {a['name']!r} (has {sorted(known)})")
        if known[a["name"]] != t:
            raise OmError(f"{w}.type: {a['type']}, but {spec.op}'s {a['name']} is {known[a['name']]}")
        out[a["name"]] = a["value"]
    return out


@dataclass
class OpEntry:
    """One checked entry of a single-op JSON file."""

    where: str  # "<file>:<line>: entry <i> (<op>)"
    index: int
    op: str
    name: str | None
    inputs: list[TensorDesc]
    outputs: list[TensorDesc]
    raw: dict[str, Any]


def read_single_op_json(json_path: Path) -> list[OpEntry]:
    """Every entry of a single-op JSON file, checked (fields, types, formats, shapes, name)
    before any op is looked up; OmError `<file>:<line>: entry <i> (<op>)...`."""
    entries = []
    for index, (line, entry) in enumerate(_json_entries(json_path)):
        where = f"{json_path}:{line}: entry {index}"
        if not isinstance(entry, dict) or not isinstance(entry.get("op"), str) or not entry["op"]:
            raise OmError(f"{where}: expected an object with \"op\" (the op type)")
        where += f" ({entry['op']})"
        unknown = sorted(set(entry) - {"op", "name", "input_desc", "output_desc", "attr", "compile_flag"})
        if unknown:
            raise OmError(f"{where}: unknown field(s) {unknown}")
        descs = {}
        for key in ("input_desc", "output_desc"):
            value = entry.get(key, [])
            if not isinstance(value, list):
                raise OmError(f"{where}.{key}: expected a list")
            descs[key] = [_tensor(d, f"{where}.{key}[{k}]") for k, d in enumerate(value)]
        name = entry.get("name")
        if name is not None and (not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", name)
                                 or name.startswith(".")):
            raise OmError(f"{where}.name: {name!r} is not a file name (letters, digits, _ - .)")
        entries.append(OpEntry(where, index, entry["op"], name, descs["input_desc"], descs["output_desc"], entry))
    return entries


def check_outputs(md: dict[str, Any], descs: list[TensorDesc], where: str) -> None:
    node = md["nodes"][0]
    dtypes = node["output_dtypes"]
    if len(descs) != len(dtypes):
        raise OmError(f"{where}: {len(descs)} entries, {node['type']} has {len(dtypes)} output(s)")
    shapes = node.get("output_shapes") or [None] * len(dtypes)
    for k, (d, dt, shape) in enumerate(zip(descs, dtypes, shapes, strict=False)):  # (shapes: as the model has them)
        if d.dtype != dt:
            raise OmError(f"{where}[{k}].type: {d.dtype}, but {node['type']} gives {dt} for these inputs")
        if shape is not None and -1 not in d.shape and list(d.shape) != list(shape):
            raise OmError(f"{where}[{k}].shape: {d.shape}, but {node['type']} gives {shape} for these inputs")
