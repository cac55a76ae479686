"""Per-SoC package files: `kernel/config/<soc>/binary_info_config.json` (docs/package-format.md §4)
and `config/<soc>/aic-<soc>-ops-info.json` (§3), plus the two one-line text files."""

from __future__ import annotations

from typing import Any, Iterable

from opbuild import nonfinite
from opbuild.abi.ge_types import DTYPE_OPS_INFO_NAME
from opbuild.abi.package_layout import KERNEL_ROOT, kernel_binary
from opbuild.abi.vocabulary import ATTR_TYPES, CORE_TYPES
from opbuild.codegen.kernel_json import FORMAT_MODE, kernel_json_path, support_info
from opbuild.codegen.naming import dumps
from opbuild.keys.rules import binary_full_keys
from opbuild.spec.model import Attr, OpSpec

CORE_TYPE_INT = {c.name: c.binary_info_config for c in CORE_TYPES}
"""binary_info_config.json `coreType` (nnopbase: kMix=0, kAicore, kVectorcore)."""

OPS_INFO_FLAGS: tuple[tuple[str, str], ...] = (
    ("dynamicCompileStatic", "true"), ("dynamicFormat", "true"), ("dynamicRankSupport", "true"),
    ("dynamicShapeSupport", "true"), ("needCheckSupport", "false"), ("precision_reduce", "true"),
)
"""The `<name>.flag` items every OpAICoreConfig starts with (metadef OpAICoreConfig(soc)), which
op_build writes into the ops-info library."""
PREBUILD_PATTERN = "Opaque"
"""`prebuildPattern.value` of an Ascend C op (set by the CANN ops' OpAICoreConfig)."""

OPS_INFO_ATTR_TYPE = {t.name: t.ops_info for t in ATTR_TYPES}
"""Attribute type spelling of the ops-info library (vocabulary.AttrType.ops_info)."""


def _for_soc(specs: Iterable[OpSpec], soc: str) -> list[OpSpec]:
    return [s for s in specs if soc in s.socs]


def _param_entry(tensor: dict[str, Any]) -> dict[str, Any]:
    """params.inputs/outputs entry of one supportInfo tensor (ascendc_ops_config.py,
    get_input_or_output_config): dtypeMode only for `DtypeByte` ("bit"), formatMode mapped."""
    entry = {k: tensor[k] for k in ("name", "index", "paramType") if tensor.get(k) is not None}
    if tensor.get("dtype_match_mode") == "DtypeByte":
        entry["dtypeMode"] = "bit"
    mode = tensor.get("format_match_mode")
    if mode is not None:
        entry["formatMode"] = FORMAT_MODE.get(mode, mode)
    return entry


def _params_entries(tensors: list[Any]) -> list[Any]:
    """A list parameter stays a one-element list; an absent (null) tensor is left out."""
    out: list[Any] = []
    for t in tensors:
        if isinstance(t, dict):
            out.append(_param_entry(t))
        elif isinstance(t, list) and t:
            out.append([_param_entry(t[0])])
    return out


def params_of(info: dict[str, Any]) -> dict[str, Any]:
    """binary_info_config.json `params` from the first binary's supportInfo (get_params_config):
    attrs as their names, and only when the supportInfo has attrs."""
    params: dict[str, Any] = {"inputs": _params_entries(info["inputs"]), "outputs": _params_entries(info["outputs"])}
    if info.get("attrs") is not None:
        params["attrs"] = [{k: a[k] for k in ("name", "mode") if a.get(k) is not None} for a in info["attrs"]]
    return params


def binary_info_entry(spec: OpSpec, soc: str, bin_suffix: str) -> dict[str, Any]:
    """One op's value in binary_info_config.json, derived from the binaries' supportInfo as
    ascendc_ops_config.py (add_simplified_config) derives it from the kernel JSONs."""
    first = support_info(spec, spec.binaries[0])
    entry: dict[str, Any] = {"dynamicRankSupport": True, "simplifiedKeyMode": first["simplifiedKeyMode"]}
    if first.get("optionalInputMode") is not None:
        entry["optionalInputMode"] = first["optionalInputMode"]
    entry["params"] = params_of(first)
    entry["binaryList"] = [
            {
                "coreType": CORE_TYPE_INT[spec.core_type],
                "simplifiedKey": binary_full_keys(spec, b),
                "binPath": kernel_binary(soc, spec.snake, b.name, bin_suffix).relative_to(KERNEL_ROOT).as_posix(),
                "jsonPath": kernel_json_path(soc, spec, b.name),
            }
            for b in spec.binaries
        ]
    return entry


def render_binary_info_config(specs: Iterable[OpSpec], soc: str, bin_suffix: str) -> str:
    """binary_info_config.json of one SoC: keyed by op type, every op that supports the SoC."""
    return dumps({s.op: binary_info_entry(s, soc, bin_suffix) for s in _for_soc(specs, soc)})


def _default_text(attr: Attr) -> str:
    def one(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        return str(v) if not isinstance(v, float) else nonfinite.text(v)

    value = attr.default
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(one(v) for v in value) + "]"
    return one(value)


def ops_info_entry(spec: OpSpec) -> dict[str, Any]:
    """One op's value in aic-<soc>-ops-info.json: one column per declared combination."""
    columns = range(spec.combination_count)
    entry: dict[str, Any] = {
        "opFile": {"value": spec.snake},
        "opInterface": {"value": spec.snake},
        **{name: {"flag": value} for name, value in OPS_INFO_FLAGS},
        "prebuildPattern": {"value": PREBUILD_PATTERN},
        "coreType": {"value": spec.core_type},
    }
    for kind, params in (("input", spec.inputs), ("output", spec.outputs)):
        for i, p in enumerate(params):
            entry[f"{kind}{i}"] = {
                "name": p.name,
                "dtype": ",".join(DTYPE_OPS_INFO_NAME[p.dtype_at(c)] for c in columns),
                "format": ",".join(p.format_at(c) for c in columns),
                "paramType": p.param_type,
                "shape": "all",
            }
    if spec.attrs:
        entry["attr"] = {"list": ",".join(a.name for a in spec.attrs)}
    for a in spec.attrs:
        info = {"type": OPS_INFO_ATTR_TYPE[a.type], "value": "all", "paramType": "required" if a.required else "optional"}
        if not a.required:
            info["defaultValue"] = _default_text(a)
        entry[f"attr_{a.name}"] = info
    return entry


def render_ops_info(specs: Iterable[OpSpec], soc: str) -> str:
    """aic-<soc>-ops-info.json: op type -> opFile, opInterface, inputN/outputN, attrs, flags."""
    return dumps({s.op: ops_info_entry(s) for s in _for_soc(specs, soc)})


def render_version_info(compiler_version: str) -> str:
    """version.info: `custom_opp_compiler_version=<X>`."""
    if not compiler_version or any(c in compiler_version for c in "\r\n"):
        raise ValueError(f"bad compiler version {compiler_version!r}: want one non-empty line")
    return f"custom_opp_compiler_version={compiler_version}\n"


def render_vendors_config(vendors: list[str]) -> str:
    """vendors/config.ini: `load_priority=v1,v2` (highest priority first)."""
    if not vendors:
        raise ValueError("vendors/config.ini needs at least one vendor")
    for v in vendors:
        if not v or any(c in v for c in ",=/\\") or any(c.isspace() for c in v):
            raise ValueError(f"bad vendor name {v!r}: no commas, '=', slashes or whitespace")
    return f"load_priority={','.join(vendors)}\n"
