"""Code generation: every artefact of an op package, rendered from a validated OpSpec.

C and text artefacts come from Jinja2 templates in templates/ (compiled once per process); JSON
artefacts are built as Python dicts and written with sorted keys, so output is byte-for-byte
deterministic. No timestamps, no absolute paths. Formats: docs/package-format.md.

    render_tiling_header(spec)                      <op_snake>_tiling.h
    tiling_struct_size(spec)                        sizeof the tiling struct (opParaSize)
    render_launch_shim(spec)                        <op_snake>_launch.c
    binary_macros(spec, binary)                     -D macros of one kernel binary
    render_kernel_json(spec, binary, soc, ...)      kernel/<soc>/<op_snake>/<Binary>.json
    render_op_kernel_config(spec, soc, suffix)      kernel/config/<soc>/<op_snake>.json
    render_binary_info_config(specs, soc, suffix)   kernel/config/<soc>/binary_info_config.json
    render_ops_info(specs, soc)                     config/<soc>/aic-<soc>-ops-info.json
    render_version_info(version)                    version.info
    render_vendors_config(vendors)                  vendors/config.ini
    write_if_changed(path, text)                    atomic write, only when different
    GENERATOR_FILES, generator_digest()             the generator's own inputs
"""

from opbuild.codegen.digest import GENERATOR_FILES, generator_digest
from opbuild.codegen.env import TEMPLATES_DIR, environment
from opbuild.codegen.files import write_if_changed
from opbuild.codegen.kernel_json import (
    CORE_TYPE_SHORT,
    impl_mode_string,
    kernel_json_path,
    render_kernel_json,
    render_op_kernel_config,
    support_info,
)
from opbuild.codegen.kernel_src import (
    ENTRY_NAME_SYMBOL,
    LAUNCH_SYMBOL,
    binary_macros,
    kernel_args,
    launch_shim_name,
    render_launch_shim,
)
from opbuild.codegen.package_json import (
    CORE_TYPE_INT,
    render_binary_info_config,
    render_ops_info,
    render_vendors_config,
    render_version_info,
)
from opbuild.codegen.tiling import TILING_C_TYPE, render_tiling_header, tiling_header_name, tiling_struct_size

__all__ = [
    "CORE_TYPE_INT", "CORE_TYPE_SHORT", "ENTRY_NAME_SYMBOL", "GENERATOR_FILES", "LAUNCH_SYMBOL", "TEMPLATES_DIR",
    "TILING_C_TYPE", "binary_macros", "environment", "generator_digest", "impl_mode_string", "kernel_args",
    "kernel_json_path", "launch_shim_name", "render_binary_info_config", "render_kernel_json",
    "render_launch_shim", "render_op_kernel_config", "render_ops_info", "render_tiling_header",
    "render_vendors_config", "render_version_info", "support_info", "tiling_header_name", "tiling_struct_size",
    "write_if_changed",
]
