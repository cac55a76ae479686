"""Kernel descriptor JSON (`kernel/<soc>/<op_snake>/<Binary>.json`) and the per-op kernel config
(`kernel/config/<soc>/<op_snake>.json`), in the real formats (docs/package-format.md §3)."""

from __future__ import annotations

import hashlib
from typing import Any

from opbuild.abi.ge_types import DTYPE_KERNEL_JSON_NAME
from opbuild.abi.vocabulary import CORE_TYPE, CORE_TYPE_NAMES, impl_mode_string
from opbuild.nonfinite import to_json
from opbuild.abi.package_layout import KERNEL_ROOT, kernel_json
from opbuild.codegen.naming import canonical, dumps
from opbuild.codegen.tiling import tiling_struct_size
from opbuild.keys.rules import binary_full_keys, binary_tensor_format
from opbuild.spec.model import Binary, OpSpec, Param

CORE_TYPES = CORE_TYPE_NAMES
CORE_TYPE_SHORT = {c.name: c.kernel_json for c in CORE_TYPE.values()}
"""Kernel JSON `core_type` of each `coreType`."""
MAGIC = {c.name: c.magic for c in CORE_TYPE.values()}
TASK_RATION = {c.name: c.task_ration for c in CORE_TYPE.values()}
"""Cube:vector task ratio of each core type (MIX: the 910B pairing of 1 AIC with 2 AIV)."""

WORKSPACE = {"num": 1, "size": [-1], "type": [0]}
DYNAMIC_PARAM_MODE = "folded_with_desc"
OPTIONAL_INPUT_MODE = "gen_placeholder"


def kernel_json_path(soc: str, spec: OpSpec, bin_file_name: str) -> str:
    """`<soc>/<op_snake>/<bin>.json`, relative to op_impl/ai_core/tbe/kernel/."""
    return kernel_json(soc, spec.snake, bin_file_name).relative_to(KERNEL_ROOT).as_posix()


def _tensor_info(p: Param, index: int, binary: Binary) -> Any:
    choice = dict(binary.when).get(p.name)
    if choice is None:
        return None
    desc = {
        "name": p.name,
        "index": index,
        "dtype": DTYPE_KERNEL_JSON_NAME[choice.dtype],
        "format": binary_tensor_format(p, binary),
        "paramType": p.param_type,
        "shape": [-2],
        "format_match_mode": "FormatAgnostic",
    }
    return [desc] if p.param_type == "dynamic" else desc


def _attr_info(spec: OpSpec, binary: Binary) -> list[dict[str, Any]]:
    pinned = dict(binary.attr_when)
    out = []
    for a in spec.attrs:
        value = pinned.get(a.name, a.default)
        out.append({"name": a.name, "dtype": a.type, "value": to_json(value)})
    return out


def support_info(spec: OpSpec, binary: Binary) -> dict[str, Any]:
    """The kernel JSON's `supportInfo` (staticKey = sha256 of the canonical JSON of the rest)."""
    info: dict[str, Any] = {
        "int64Mode": False,
        "implMode": impl_mode_string(binary.impl_modes),
        "simplifiedKeyMode": spec.key_rule.simplified_key_mode,
        "simplifiedKey": binary_full_keys(spec, binary),
        "inputs": [_tensor_info(p, i, binary) for i, p in enumerate(spec.inputs)],
        "outputs": [_tensor_info(p, i, binary) for i, p in enumerate(spec.outputs)],
        "attrs": _attr_info(spec, binary),
        "opMode": "dynamic",
        "deterministic": binary.deterministic,
        "op_debug_config": "",
    }
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
    entry = spec.kernel.symbol
    data = {
        "binFileName": bin_file_name,
        "binFileSuffix": bin_suffix,
        "blockDim": binary.block_dim,
        "coreType": core,
        "core_type": CORE_TYPE_SHORT[core],
        "intercoreSync": _intercore_sync(spec),
        "kernelName": entry,
        "magic": MAGIC[core],
        "memoryStamping": [],
        "opParaSize": tiling_struct_size(spec),
        "parameters": [None] * len(spec.tensors),
        "sha256": sha256,
        "workspace": dict(WORKSPACE),
        "kernelList": [{"kernelName": entry}],
        "taskRation": TASK_RATION[core],
        "compileInfo": {},
        "deterministic": binary.deterministic,
        "supportSuperKernel": 0,
        "dynamicParamMode": DYNAMIC_PARAM_MODE,
        "debugOptions": "",
        "debugBufSize": 0,
        "filePath": kernel_json_path(soc, spec, bin_file_name),
        "supportInfo": support_info(spec, binary),
    }
    return dumps(data)


def render_op_kernel_config(spec: OpSpec, soc: str, bin_suffix: str) -> str:
    """`kernel/config/<soc>/<op_snake>.json`: {"binList": [...]} (docs/package-format.md §3.2).

    `bin_suffix` does not appear in the file (binInfo names only the descriptor JSON); it is
    accepted so all package renderers take the same arguments.
    """
    del bin_suffix
    bin_list = []
    for binary in spec.binaries:
        info = support_info(spec, binary)
        bin_list.append({
            "implMode": info["implMode"],
            "int64Mode": info["int64Mode"],
            "simplifiedKeyMode": info["simplifiedKeyMode"],
            "simplifiedKey": info["simplifiedKey"],
            "dynamicParamMode": DYNAMIC_PARAM_MODE,
            "staticKey": info["staticKey"],
            "inputs": info["inputs"],
            "outputs": info["outputs"],
            "attrs": info["attrs"],
            "opMode": info["opMode"],
            "optionalInputMode": OPTIONAL_INPUT_MODE,
            "deterministic": info["deterministic"],
            "binInfo": {"jsonFilePath": kernel_json_path(soc, spec, binary.name)},
        })
    return dumps({"binList": bin_list})
