"""What each kernel binary is compiled from besides the kernel source: the launch shim and the
per-binary macros (Ascend C style `DTYPE_X`, `ORIG_DTYPE_X`, ...)."""

from __future__ import annotations

from opbuild.abi.ge_types import DTYPE_C_ENUM, DTYPE_C_TYPE, FORMAT_C_ENUM
from opbuild.abi.kernel_launch import tiling_data_size, tiling_key_offset
from opbuild.codegen.env import render
from opbuild.codegen.naming import c_literal, c_string, spec_display_path, upper
from opbuild.codegen.tiling import tiling_struct_size
from opbuild.keys.rules import binary_tensor_format
from opbuild.spec.model import Binary, OpSpec

LAUNCH_SYMBOL = "opbuild_kernel_launch"
ENTRY_NAME_SYMBOL = "opbuild_kernel_entry_name"


def launch_shim_name(spec: OpSpec) -> str:
    return f"{spec.snake}_launch.c"


def kernel_args(spec: OpSpec) -> list[str]:
    """Kernel arguments in order: inputs, outputs (a dynamic input is one list), workspace, tiling."""
    return [p.name for p in spec.tensors] + ["workspace", "tiling"]


def render_launch_shim(spec: OpSpec) -> str:
    """`<op_snake>_launch.c`: defines the kernel's thread-locals and exports opbuild_kernel_launch."""
    op_para_size = tiling_struct_size(spec)  # the kernel JSON's opParaSize
    return render(
        "launch_shim.c.j2",
        spec_path=spec_display_path(spec),
        op=spec.op,
        op_literal=c_string(spec.op),
        entry=spec.kernel_ref.symbol,
        entry_literal=c_string(spec.kernel_ref.symbol),
        args=kernel_args(spec),
        tiling_data_size=tiling_data_size(op_para_size),
        tiling_key_offset=tiling_key_offset(op_para_size),
    )


def binary_macros(spec: OpSpec, binary: Binary) -> dict[str, str]:
    """The -D macros of one binary, sorted by name.

    Per input/output NAME: DTYPE_NAME (C element type), ORIG_DTYPE_NAME (an OPBUILD_DT_* macro: `#if` works),
    FORMAT_NAME (OPBUILD_FORMAT_*; the pinned format, else the tensor's first declared one). An
    optional input the binary's `when` leaves out gets OPBUILD_ABSENT_NAME=1 instead. Then
    OPBUILD_BINARY_NAME and OPBUILD_OP_TYPE (string literals), OPBUILD_DETERMINISTIC (1 only for
    `deterministic: true`) and OPBUILD_WHEN_ATTR (C literal) for each `attr_when` entry.
    """
    when = dict(binary.when)
    macros: dict[str, str] = {}
    for p in spec.tensors:
        name = upper(p.name)
        choice = when.get(p.name)
        if choice is None:
            macros[f"OPBUILD_ABSENT_{name}"] = "1"
            continue
        macros[f"DTYPE_{name}"] = DTYPE_C_TYPE[choice.dtype]
        macros[f"ORIG_DTYPE_{name}"] = DTYPE_C_ENUM[choice.dtype]
        macros[f"FORMAT_{name}"] = FORMAT_C_ENUM[binary_tensor_format(p, binary)]
    macros["OPBUILD_BINARY_NAME"] = c_string(binary.name)
    macros["OPBUILD_OP_TYPE"] = c_string(spec.op)
    macros["OPBUILD_DETERMINISTIC"] = "1" if binary.deterministic == "true" else "0"
    for attr, value in binary.attr_when:
        macros[f"OPBUILD_WHEN_{upper(attr)}"] = c_literal(value)
    return dict(sorted(macros.items()))
