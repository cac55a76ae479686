"""Code generation: every artefact of an op package, rendered from a validated OpSpec.

C and text artefacts come from Jinja2 templates in templates/ (compiled once per process); JSON
artefacts are built as Python dicts and written with sorted keys, so output is byte-for-byte
deterministic. No timestamps, no absolute paths. Formats: docs/package-format.md.

    render_tiling_header(spec)                      <op_snake>_tiling.h
    tiling_struct_size(spec)                        sizeof the tiling struct (opParaSize)
    render_launch_shim(spec)                        <op_snake>_launch.c
    render_host_bridge(spec) and the others of codegen/ascendc.py   an Ascend C op's bridge, kernel
                                                    tiling header and C++ launch shim
    binary_macros(spec, binary)                     -D macros of one kernel binary
    render_kernel_json(spec, binary, soc, ...)      kernel/<soc>/<op_snake>/<Binary>.json
    render_op_kernel_config(spec, soc, suffix)      kernel/config/<soc>/<op_snake>.json
    render_binary_info_config(specs, soc, suffix)   kernel/config/<soc>/binary_info_config.json
    render_ops_info(specs, soc)                     config/<soc>/aic-<soc>-ops-info.json
    render_aicpu_registry(specs)                    the registry of libcust_aicpu_kernels.so
    render_aicpu_op_info(specs)                     op_impl/cpu/config/cust_aicpu_kernel.json
    render_version_info(version)                    version.info
    render_vendors_config(vendors)                  vendors/config.ini
    write_if_changed(path, text)                    atomic write, only when different
    GENERATOR_FILES, generator_digest()             the generator's own inputs
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "GENERATOR_FILES": "digest", "generator_digest": "digest",
    "TEMPLATES_DIR": "env", "environment": "env",
    "write_if_changed": "files",
    "CORE_TYPE_SHORT": "kernel_json", "impl_mode_string": "kernel_json", "kernel_json_path": "kernel_json",
    "render_kernel_json": "kernel_json", "render_op_kernel_config": "kernel_json", "support_info": "kernel_json",
    "ENTRY_NAME_SYMBOL": "kernel_src", "LAUNCH_SYMBOL": "kernel_src", "binary_macros": "kernel_src",
    "kernel_args": "kernel_src", "launch_shim_name": "kernel_src", "render_launch_shim": "kernel_src",
    "CORE_TYPE_INT": "package_json", "render_binary_info_config": "package_json", "render_ops_info": "package_json",
    "render_vendors_config": "package_json", "render_version_info": "package_json",
    "TILING_C_TYPE": "tiling", "render_tiling_header": "tiling", "tiling_header_name": "tiling",
    "tiling_struct_size": "tiling",
    "render_aicpu_op_info": "aicpu", "render_aicpu_registry": "aicpu",
    "render_host_bridge": "ascendc", "render_ascendc_tiling_header": "ascendc",
    "render_ascendc_launch_shim": "ascendc", "host_bridge_name": "ascendc",
    "ascendc_tiling_header_name": "ascendc", "ascendc_launch_shim_name": "ascendc",
}
"""Name -> the submodule defining it. Loaded on first use (PEP 562): `opbuild validate` renders
the tiling header and the aclnn APIs without importing the kernel-JSON generators (numpy)."""


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = [
    "CORE_TYPE_INT", "CORE_TYPE_SHORT", "ENTRY_NAME_SYMBOL", "GENERATOR_FILES", "LAUNCH_SYMBOL", "TEMPLATES_DIR",
    "TILING_C_TYPE", "ascendc_launch_shim_name", "ascendc_tiling_header_name", "binary_macros", "host_bridge_name", "environment", "generator_digest", "impl_mode_string", "kernel_args",
    "kernel_json_path", "launch_shim_name", "render_binary_info_config", "render_kernel_json",
    "render_ascendc_launch_shim", "render_ascendc_tiling_header", "render_host_bridge",
    "render_launch_shim", "render_op_kernel_config", "render_ops_info", "render_tiling_header",
    "render_vendors_config", "render_version_info", "support_info", "tiling_header_name", "tiling_struct_size",
    "write_if_changed",
]
