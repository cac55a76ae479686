"""What an op_host source registered, as its bridge's describe() JSON reports it.

What: dataclasses for the OpDef (inputs, outputs, attributes with their defaults, SoCs, whether
tiling / InferShape / InferDataType are set, the source line of each Input/Output/Attr call) and
the tiling-data classes (fields with C type, offset, size, array count, nested class), and
`parse_description`, which checks the JSON's shape and builds them.

Why: the build (kernel-side tiling header, op spec) and the checks read these, not the JSON; the
JSON format is the bridge's (opbuild_ascendc/host_bridge.h) and is read only here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from opbuild.ascendc.errors import AscendcHostError

__all__ = ["AttrInfo", "HostDescription", "OpDefInfo", "ParamInfo", "SocConfig", "TilingBinding", "TilingClass",
           "TilingField", "parse_description"]


@dataclass(frozen=True)
class ParamInfo:
    """One Input(...) or Output(...): param_type is required, optional or dynamic; dtypes and
    formats are opbuild's spec names ("ge:<n>" for a GE value opbuild does not run), one per
    supported combination (dtype_list / format_list: declared with DataTypeList / FormatList, one
    entry combining with every combination of the others)."""

    name: str
    param_type: str
    dtypes: tuple[str, ...]
    formats: tuple[str, ...]
    dtype_list: bool
    format_list: bool
    value_depend: str | None
    scalar: bool
    follow: str | None
    file: str
    line: int


@dataclass(frozen=True)
class AttrInfo:
    """One Attr(...): type is a spec attribute type (int, float, bool, str, list_int, list_float,
    list_bool; None when no type method was called); default is the Python value or None."""

    name: str
    param_type: str
    type: str | None
    default: Any
    file: str
    line: int


@dataclass(frozen=True)
class SocConfig:
    """AICore().AddConfig(soc, config): the SoC's own inputs/outputs (empty: the OpDef's) and flags."""

    soc: str
    inputs: tuple[ParamInfo, ...]
    outputs: tuple[ParamInfo, ...]
    flags: dict[str, bool]


@dataclass(frozen=True)
class OpDefInfo:
    """One OP_ADD(...): file/line are the OP_ADD's."""

    op: str
    file: str
    line: int
    inputs: tuple[ParamInfo, ...]
    outputs: tuple[ParamInfo, ...]
    attrs: tuple[AttrInfo, ...]
    socs: tuple[str, ...]
    soc_configs: tuple[SocConfig, ...]
    has_tiling: bool
    has_infer_shape: bool
    has_infer_dtype: bool


@dataclass(frozen=True)
class TilingField:
    """A field of a tiling-data class: count is the item count of an array field (None for a
    scalar or struct field), struct the class name of a struct field."""

    name: str
    type: str
    offset: int
    size: int
    count: int | None
    struct: str | None


@dataclass(frozen=True)
class TilingClass:
    name: str
    size: int
    fields: tuple[TilingField, ...]


@dataclass(frozen=True)
class TilingBinding:
    """REGISTER_TILING_DATA_CLASS(name, class_name): name is the op type (its default class),
    `<OpType>_<tiling key>` (that key's class) or any other name (a class used as a field)."""

    name: str
    class_name: str


@dataclass(frozen=True)
class HostDescription:
    """Everything one op's host blob registered. `sources` are the files it was built from."""

    sources: tuple[str, ...]
    ops: tuple[OpDefInfo, ...]
    tiling: tuple[TilingBinding, ...]
    classes: dict[str, TilingClass] = field(default_factory=dict)

    @property
    def op(self) -> OpDefInfo:
        """The one OpDef (describe() checks there is exactly one)."""
        return self.ops[0]

    def classes_of(self, op_type: str) -> dict[str, TilingClass]:
        """The classes registered for op_type: "" for its default class, the key (as text) for
        `<op_type>_<key>` registrations."""
        found: dict[str, TilingClass] = {}
        for b in self.tiling:
            if b.name == op_type:
                found[""] = self.classes[b.class_name]
            elif b.name.startswith(op_type + "_") and b.name[len(op_type) + 1:].isdigit():
                found[b.name[len(op_type) + 1:]] = self.classes[b.class_name]
        return found


def _param(d: dict) -> ParamInfo:
    return ParamInfo(d["name"], d["param_type"], tuple(d["dtypes"]), tuple(d["formats"]), bool(d["dtype_list"]),
                     bool(d["format_list"]), d["value_depend"], bool(d["scalar"]), d["follow"], d["file"],
                     int(d["line"]))


def _fields(items: list) -> tuple[TilingField, ...]:
    return tuple(TilingField(f["name"], f["type"], int(f["offset"]), int(f["size"]), f["count"], f["struct"])
                 for f in items)


def parse_description(text: str, sources: tuple[str, ...]) -> HostDescription:
    """HostDescription from describe() JSON; AscendcHostError naming the sources when it is not
    valid JSON of the bridge's shape."""
    where = ", ".join(sources)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AscendcHostError(f"{where}: the host bridge's describe() is not valid JSON: {exc}") from None
    if "error" in data:
        raise AscendcHostError(f"{where}: describe() failed: {data['error']}")
    try:
        ops = tuple(
            OpDefInfo(o["op"], o["file"], int(o["line"]), tuple(map(_param, o["inputs"])),
                      tuple(map(_param, o["outputs"])),
                      tuple(AttrInfo(a["name"], a["param_type"], a["type"], a["default"], a["file"], int(a["line"]))
                            for a in o["attrs"]),
                      tuple(o["socs"]),
                      tuple(SocConfig(c["soc"], tuple(map(_param, c["inputs"])), tuple(map(_param, c["outputs"])),
                                      dict(c["flags"])) for c in o["soc_configs"]),
                      bool(o["has_tiling"]), bool(o["has_infer_shape"]), bool(o["has_infer_dtype"]))
            for o in data["ops"])
        tiling = tuple(TilingBinding(t["op"], t["class"]) for t in data["tiling"])
        classes = {name: TilingClass(name, int(c["size"]), _fields(c["fields"]))
                   for name, c in data["tiling_classes"].items()}
        errors = list(data["errors"])
    except (KeyError, TypeError, ValueError) as exc:
        raise AscendcHostError(f"{where}: describe() JSON lacks or mistypes {exc}") from None
    if errors:
        raise AscendcHostError("; ".join(errors))
    return HostDescription(tuple(sources), ops, tiling, classes)
