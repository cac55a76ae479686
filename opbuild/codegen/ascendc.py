"""The generated sources of an Ascend C op (`kernel.api: ascendc`; opbuild/ascendc).

* `<op_snake>_host_bridge.cpp`: the bridge macro of include/ascendc/opbuild_ascendc/host_bridge.h,
  which, linked with the op's host source, exports its tiling function, shape and dtype
  inference and description in opbuild's C ABI (abi/ascendc_bridge.py names them);
* `<op_snake>_ascendc_tiling.h`: the kernel-side structs of the host's tiling classes (made from
  the host description when the op is checked: OpSpec.tiling_header), force-included in the
  kernel compile;
* `<op_snake>_launch.cpp`: the launch shim, which runs each block through
  `opbuild::ascendc::run_block` (include/ascendc/opbuild_ascendc/launch.h).
"""

from __future__ import annotations

from opbuild.abi.ascendc_bridge import BRIDGE_PARTS, bridge_source, bridge_symbol
from opbuild.abi.kernel_launch import tiling_data_size, tiling_key_offset
from opbuild.codegen.env import render
from opbuild.codegen.kernel_src import kernel_args
from opbuild.codegen.naming import c_string, spec_display_path
from opbuild.codegen.tiling import tiling_struct_size
from opbuild.spec.model import OpSpec


def host_bridge_name(spec: OpSpec) -> str:
    return f"{spec.snake}_host_bridge.cpp"


def ascendc_tiling_header_name(spec: OpSpec) -> str:
    return f"{spec.snake}_ascendc_tiling.h"


def ascendc_launch_shim_name(spec: OpSpec) -> str:
    return f"{spec.snake}_launch.cpp"


def render_host_bridge(spec: OpSpec) -> str:
    """The bridge unit: a comment naming what it is for, then the bridge text of
    opbuild/abi/ascendc_bridge.py (the two lines every bridge is, written once there)."""
    head = render("ascendc_host_bridge.cpp.j2", spec_path=spec_display_path(spec), op=spec.op,
                  host_source=spec.tiling_ref.source, exports=[bridge_symbol(spec.snake, part) for part in BRIDGE_PARTS])
    return head + bridge_source(spec.snake, spec.op)


def render_ascendc_tiling_header(spec: OpSpec) -> str:
    """The kernel-side tiling header: made when the op was checked against its host source
    (OpSpec.tiling_header, from the host description: nested classes and per-key classes too)."""
    if not spec.tiling_header:
        raise ValueError(f"op {spec.op}: an Ascend C spec that was not checked against its host source has no "
                         f"kernel-side tiling header")
    return spec.tiling_header


def render_ascendc_launch_shim(spec: OpSpec) -> str:
    op_para_size = tiling_struct_size(spec)
    return render("launch_shim_ascendc.cpp.j2", spec_path=spec_display_path(spec), op=spec.op,
                  op_literal=c_string(spec.op), entry=spec.kernel_ref.symbol, entry_literal=c_string(spec.kernel_ref.symbol),
                  args=kernel_args(spec), tiling_data_size=tiling_data_size(op_para_size),
                  tiling_key_offset=tiling_key_offset(op_para_size))
