"""Kernel descriptor JSON (`kernel/<soc>/<op_snake>/<Binary>.json`) and the per-op kernel config
(`kernel/config/<soc>/<op_snake>.json`), in the real formats (docs/package-format.md §3)."""

from __future__ import annotations

import hashlib
from typing import Any

from opbuild.abi.ge_types import DTYPE_KERNEL_JSON_NAME
from opbuild.abi.kernel_launch import kernel_list
from opbuild.abi.package_layout import KERNEL_ROOT, kernel_json
from opbuild.abi.vocabulary import CORE_TYPE, CORE_TYPE_NAMES, impl_mode_string, support_impl_mode  # noqa: F401 - re-exported
from opbuild.codegen.naming import canonical, dumps
from opbuild.codegen.tiling import tiling_struct_size
from opbuild.keys.rules import binary_columns, binary_full_keys, binary_tensor_format
from opbuild.nonfinite import to_json
from opbuild.spec.model import Binary, OpSpec, Param

CORE_TYPES = CORE_TYPE_NAMES
CORE_TYPE_SHORT = {c.name: c.kernel_json for c in CORE_TYPE.values()}
"""Kernel JSON `core_type` of each `coreType`."""
MAGIC = {c.name: c.magic for c in CORE_TYPE.values()}
TASK_RATION = {c.name: c.task_ration for c in CORE_TYPE.values()}
"""Cube:vector task ratio of each core type (MIX: the 910B pairing of 1 AIC with 2 AIV)."""

WORKSPACE = {"num": 1, "size": [-1], "type": [0]}
DYNAMIC_PARAM_MODE = "folded_with_desc"
"""`dynamicParamMode` of an op with a dynamic (list) parameter; left out otherwise."""
OPTIONAL_INPUT_MODE = "gen_placeholder"
"""`optionalInputMode` of an op with an optional input; left out otherwise."""
FORMAT_MATCH_MODE = "FormatAgnostic"
"""supportInfo `format_match_mode` of every tensor: a binary serves any declared format."""
FORMAT_MODE = {"FormatDefault": "nd_agnostic", "FormatAgnostic": "static_nd_agnostic", "FormatFixed": "normal"}
"""binary_info_config.json `formatMode` of a supportInfo `format_match_mode` (asc-devkit's
ascendc_ops_config.py, correct_format_mode)."""


def has_optional_input(spec: OpSpec) -> bool:
    return any(p.param_type == "optional" for p in spec.inputs)


def has_dynamic_param(spec: OpSpec) -> bool:
    return any(p.param_type == "dynamic" for p in spec.tensors)


def kernel_json_path(soc: str, spec: OpSpec, bin_file_name: str) -> str:
    """`<soc>/<op_snake>/<bin>.json`, relative to op_impl/ai_core/tbe/kernel/."""
    return kernel_json(soc, spec.snake, bin_file_name).relative_to(KERNEL_ROOT).as_posix()


def _tensor_info(spec: OpSpec, p: Param, index: int, binary: Binary) -> Any:
    """One supportInfo tensor: the dtype the binary pins, else (an optional input its `when`
    leaves out) the dtype of the first declared column it serves, as asc_opc lists optional
    inputs with a dtype (opbase's QuantBatchMatmulV3 mock); None only if there is none."""
    choice = dict(binary.when).get(p.name)
    dtype = choice.dtype if choice is not None else None
    if dtype is None:
        columns = binary_columns(spec, binary)
        dtype = columns[0][p.name].dtype if columns else None
    if dtype is None:
        return None
    desc = {
        "name": p.name,
        "index": index,
        "dtype": DTYPE_KERNEL_JSON_NAME[dtype],
        "format": binary_tensor_format(p, binary),
        "paramType": p.param_type,
        "shape": [-2],
        "format_match_mode": FORMAT_MATCH_MODE,
    }
    return [desc] if p.param_type == "dynamic" else desc


def _attr_info(spec: OpSpec, binary: Binary) -> list[dict[str, Any]]:
    """supportInfo `attrs`: the value a binary is compiled for (its `attr_when`), null when it
    serves every value (opbase's QuantBatchMatmulV3 mock)."""
    pinned = dict(binary.attr_when)
    return [{"name": a.name, "dtype": a.type, "value": to_json(pinned[a.name]) if a.name in pinned else None}
            for a in spec.attrs]


def support_info(spec: OpSpec, binary: Binary) -> dict[str, Any]:
    """The kernel JSON's `supportInfo` (staticKey = sha256 of the canonical JSON of the rest).

    Fields asc_opc leaves out are left out: implMode for a default-only binary, attrs for an op
    without attributes, dynamicParamMode / optionalInputMode for an op without dynamic
    parameters / optional inputs.
    """
    info: dict[str, Any] = {"int64Mode": False}
    impl_mode = support_impl_mode(binary.impl_modes)
    if impl_mode is not None:
        info["implMode"] = impl_mode
    info["simplifiedKeyMode"] = spec.key_rule.simplified_key_mode
    info["simplifiedKey"] = binary_full_keys(spec, binary)
    if has_dynamic_param(spec):
        info["dynamicParamMode"] = DYNAMIC_PARAM_MODE
    info["inputs"] = [_tensor_info(spec, p, i, binary) for i, p in enumerate(spec.inputs)]
    info["outputs"] = [_tensor_info(spec, p, i, binary) for i, p in enumerate(spec.outputs)]
    if spec.attrs:
        info["attrs"] = _attr_info(spec, binary)
    info["opMode"] = "dynamic"
    if has_optional_input(spec):
        info["optionalInputMode"] = OPTIONAL_INPUT_MODE
    info["deterministic"] = binary.deterministic
    info["op_debug_config"] = ""
    info["staticKey"] = hashlib.sha256(canonical(info).encode("utf-8")).hexdigest()
    return info


def _intercore_sync(spec: OpSpec) -> int:
    """1 when the kernel uses SyncAll (`kernel.intercore_sync: true` in the spec)."""
    return 1 if spec.intercore_sync else 0


def render_kernel_json(
    spec: OpSpec,
    binary: Binary,
    soc: str,
    *,
    bin_file_name: str,
    bin_suffix: str,
    sha256: str,
    core_type_name: str | None = None,
) -> str:
    """The descriptor JSON next to one kernel binary (keys: docs/package-format.md §3.1)."""
    core = core_type_name or spec.core_type
    if core not in CORE_TYPES:
        raise ValueError(f"{spec.op}: unknown core type {core!r} (expected one of {', '.join(CORE_TYPES)})")
    data: dict[str, Any] = {
        "binFileName": bin_file_name,
        "binFileSuffix": bin_suffix,
        "blockDim": binary.block_dim,
        "coreType": core,
        "core_type": CORE_TYPE_SHORT[core],
        "intercoreSync": _intercore_sync(spec),
        "kernelName": bin_file_name,
        "magic": MAGIC[core],
        "memoryStamping": [],
        "opParaSize": tiling_struct_size(spec),
        "parameters": [None] * len(spec.tensors),
        "sha256": sha256,
        "workspace": dict(WORKSPACE),
        "kernelList": kernel_list(bin_file_name, spec.tiling_keys),
        "taskRation": TASK_RATION[core],
    }
    if has_optional_input(spec):
        data["optionalInputMode"] = OPTIONAL_INPUT_MODE
    data.update({
        "compileInfo": {},
        "deterministic": binary.deterministic,
        "supportSuperKernel": 0,
    })
    if has_dynamic_param(spec):
        data["dynamicParamMode"] = DYNAMIC_PARAM_MODE
    data.update({
        "debugOptions": "",
        "debugBufSize": 0,
        "filePath": kernel_json_path(soc, spec, bin_file_name),
        "supportInfo": support_info(spec, binary),
    })
    return dumps(data)


def render_op_kernel_config(spec: OpSpec, soc: str, bin_suffix: str) -> str:
    """`kernel/config/<soc>/<op_snake>.json`: {"binList": [...]} (docs/package-format.md §3.2).

    `bin_suffix` does not appear in the file (binInfo names only the descriptor JSON); it is
    accepted so all package renderers take the same arguments.
    """
    del bin_suffix
    return dumps({"binList": [op_config_entry(support_info(spec, b), kernel_json_path(soc, spec, b.name))
                              for b in spec.binaries]})


def op_config_entry(info: dict[str, Any], json_file_path: str) -> dict[str, Any]:
    """One binList entry from a kernel JSON's supportInfo, field by field as asc-devkit's
    ascendc_ops_config.py (gen_ops_config) copies it: optional fields only when present,
    attrs only when non-empty."""
    entry: dict[str, Any] = {}
    for field in ("implMode", "int64Mode", "simplifiedKeyMode", "simplifiedKey", "dynamicParamMode"):
        if info.get(field) is not None:
            entry[field] = info[field]
    entry["staticKey"] = info.get("staticKey")
    entry["inputs"] = info.get("inputs")
    entry["outputs"] = info.get("outputs")
    if info.get("attrs"):
        entry["attrs"] = info["attrs"]
    for field in ("opMode", "optionalInputMode", "deterministic"):
        if info.get(field) is not None:
            entry[field] = info[field]
    entry["binInfo"] = {"jsonFilePath": json_file_path}
    return entry
