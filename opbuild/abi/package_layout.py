"""Where each file of an installed op package lives (the real OPP tree, docs/package-format.md §1).

Shared by the build, which lays the tree out, and the runtime, which reads it. All paths are
relative to a package root: `out/opp/vendors/<vendor>` for a custom package, or
`out/opp/built-in` for the built-in one.
"""

from __future__ import annotations

import platform
from pathlib import PurePosixPath

KERNEL_ROOT = PurePosixPath("op_impl/ai_core/tbe/kernel")
"""`binPath` and `jsonPath` in binary_info_config.json are relative to this directory."""

TILING_LIB_NAME = "libcust_opmaster_rt2.0.so"
OP_PROTO_LIB_NAME = "libcust_opsproto_rt2.0.so"
OPTILING_LINK_NAME = "liboptiling.so"
CUSTOM_OPAPI_LIB = "libcust_opapi.so"
DEFAULT_VENDOR = "customize"


def vendor_name_problem(name: str) -> str | None:
    """Why `name` cannot be a vendor directory (`vendors/<name>`), None when it can.

    The one rule for vendor names wherever one is read (vendors/config.ini `load_priority`,
    .om vendors) or made: a single path component that cannot climb out of `vendors/` and
    that survives the `load_priority=a,b` syntax.
    """
    if not name:
        return "is empty"
    if "/" in name or "\\" in name or "\0" in name:
        return "contains a path separator or NUL"
    if ".." in name or name == ".":
        return "contains '..' or is '.'"
    if any(c in name for c in ",=") or any(c.isspace() for c in name) or not name.isprintable():
        return "contains ',', '=', whitespace or non-printable characters"
    return None


def host_arch() -> str:
    """The `<arch>` directory name of the tiling library (x86_64, aarch64)."""
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)


BUILTIN_DIR = "built-in"
OPAPI_LIB = "libopapi.so"
DOMAINS = ("math", "nn", "cv", "transformer", "oam", "ras")
"""Built-in domain libraries, in op_fallback search order (libopapi_<domain>.so)."""


def opapi_lib_names() -> tuple[str, ...]:
    """Every op API library name a package's `op_api/lib/` may hold, in op_fallback's search
    order: a custom package's libcust_opapi.so; the built-in package's libopapi.so, then its
    libopapi_<domain>.so in DOMAINS order."""
    return (CUSTOM_OPAPI_LIB, OPAPI_LIB, *(domain_opapi_lib(d) for d in DOMAINS))


def subpackage_of(domain: str | None) -> str | None:
    """The built-in sub-package directory of a domain (`ops_math`), None for a flat layout."""
    return f"ops_{domain}" if domain else None


def domain_opapi_lib(domain: str) -> str:
    return f"libopapi_{domain}.so"


def insert_subpackage(relative: str, subpackage: str) -> str:
    """`ascend910b/mul_custom/X.so` -> `ascend910b/ops_math/mul_custom/X.so`: a binPath of a
    built-in sub-package config is relative to kernel/ with the sub-package left out."""
    head, sep, rest = relative.partition("/")
    return f"{head}/{subpackage}/{rest}" if sep else relative


def kernel_dir(soc: str, op_snake: str, subpackage: str | None = None) -> PurePosixPath:
    return KERNEL_ROOT / soc / subpackage / op_snake if subpackage else KERNEL_ROOT / soc / op_snake


def kernel_binary(soc: str, op_snake: str, binary: str, suffix: str, subpackage: str | None = None) -> PurePosixPath:
    return kernel_dir(soc, op_snake, subpackage) / f"{binary}{suffix}"


def kernel_json(soc: str, op_snake: str, binary: str, subpackage: str | None = None) -> PurePosixPath:
    return kernel_dir(soc, op_snake, subpackage) / f"{binary}.json"


def kernel_config_dir(soc: str, subpackage: str | None = None) -> PurePosixPath:
    return KERNEL_ROOT / "config" / soc / subpackage if subpackage else KERNEL_ROOT / "config" / soc


def binary_info_config(soc: str, subpackage: str | None = None) -> PurePosixPath:
    return kernel_config_dir(soc, subpackage) / "binary_info_config.json"


def op_kernel_config(soc: str, op_snake: str, subpackage: str | None = None) -> PurePosixPath:
    return kernel_config_dir(soc, subpackage) / f"{op_snake}.json"


def opapi_lib_dir() -> PurePosixPath:
    return PurePosixPath("op_api/lib")


def ops_info(soc: str) -> PurePosixPath:
    return PurePosixPath("op_impl/ai_core/tbe/config") / soc / f"aic-{soc}-ops-info.json"


def tiling_lib(arch: str | None = None) -> PurePosixPath:
    return PurePosixPath("op_impl/ai_core/tbe/op_tiling/lib/linux") / (arch or host_arch()) / TILING_LIB_NAME


def op_proto_header() -> PurePosixPath:
    """The package's operator prototypes (C declarations of each op's inference functions)."""
    return PurePosixPath("op_proto/inc/op_proto.h")


def op_proto_lib(arch: str | None = None) -> PurePosixPath:
    """The library of each op's shape and dtype inference (CANN's op_proto library)."""
    return PurePosixPath("op_proto/lib/linux") / (arch or host_arch()) / OP_PROTO_LIB_NAME


def optiling_link() -> PurePosixPath:
    return PurePosixPath("op_impl/ai_core/tbe/op_tiling") / OPTILING_LINK_NAME


def python_api_dir() -> PurePosixPath:
    return PurePosixPath("op_api/python")


def aclnn_header(op_snake: str) -> PurePosixPath:
    return PurePosixPath("op_api/include") / f"aclnn_{op_snake}.h"


VERSION_INFO = PurePosixPath("version.info")

AICPU_KERNELS_LIB = "libcust_aicpu_kernels.so"
"""The one library holding every AI CPU op of a package (CANN custom op projects' cpukernel/)."""
AICPU_OP_INFO = "cust_aicpu_kernel.json"
"""The AI CPU op info library of a package (CANN: built from cpukernel/op_info_cfg/aicpu_kernel/*.ini)."""


def aicpu_kernel_lib() -> PurePosixPath:
    """op_impl/cpu/aicpu_kernel/impl/libcust_aicpu_kernels.so"""
    return PurePosixPath("op_impl/cpu/aicpu_kernel/impl") / AICPU_KERNELS_LIB


def aicpu_op_info() -> PurePosixPath:
    """op_impl/cpu/config/cust_aicpu_kernel.json"""
    return PurePosixPath("op_impl/cpu/config") / AICPU_OP_INFO


ONNX_PLUGINS_NAME = "opbuild_onnx_plugins.json"


def onnx_plugins() -> PurePosixPath:
    """The package's ONNX adapter plugins (CANN: framework/onnx/libcust_onnx_parsers.so)."""
    return PurePosixPath("framework/onnx") / ONNX_PLUGINS_NAME
