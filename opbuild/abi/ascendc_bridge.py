"""The C symbols of an Ascend C op's host bridge, named once.

An Ascend C op (`kernel.api: ascendc`) has no C tiling source: its op_host C++ source is
compiled with a generated bridge (`OPBUILD_ASCENDC_HOST_EXPORTS(<snake>, "<Op>")`, from
include/ascendc/opbuild_ascendc/host_bridge.h) that exports the op's tiling function, its shape
and dtype inference and a description of what the source registered, in opbuild's C ABI
(opbuild/tiling.h, opbuild/infer.h). The spec, the build, the runtime and the tests name those
symbols through these functions; tests/ascendc hold the header's macro to them.
"""

from __future__ import annotations

BRIDGE_PARTS = ("tiling", "infer_shape", "infer_dtype", "describe")
"""What the bridge exports per op, in the order the header defines them."""


def bridge_symbol(snake: str, part: str) -> str:
    """`<snake>_opbuild_<part>`: the exported symbol of one part of an op's host bridge."""
    if part not in BRIDGE_PARTS:
        raise ValueError(f"unknown host bridge part {part!r}; known: {', '.join(BRIDGE_PARTS)}")
    return f"{snake}_opbuild_{part}"
