"""The C symbols of an Ascend C op's host bridge, named once.

An Ascend C op (`kernel.api: ascendc`) has no C tiling source: its op_host C++ source is
compiled with a generated bridge (`OPBUILD_ASCENDC_HOST_EXPORTS(<snake>, "<Op>")`, from
include/ascendc/opbuild_ascendc/host_bridge.h) that exports the op's tiling function, its shape
and dtype inference and a description of what the source registered, in opbuild's C ABI
(opbuild/tiling.h, opbuild/infer.h). The spec, the build, the runtime and the tests name those
symbols through these functions; tests/ascendc hold the header's macro to them. The bridge's
two generated sources (an op's exports, the shared core) are written here too: codegen, the
Ascend C front end and the build write the same text.
"""

from __future__ import annotations

BRIDGE_PARTS = ("tiling", "infer_shape", "infer_dtype", "describe")
"""What the bridge exports per op, in the order the header defines them."""


def bridge_symbol(snake: str, part: str) -> str:
    """`<snake>_opbuild_<part>`: the exported symbol of one part of an op's host bridge."""
    if part not in BRIDGE_PARTS:
        raise ValueError(f"unknown host bridge part {part!r}; known: {', '.join(BRIDGE_PARTS)}")
    return f"{snake}_opbuild_{part}"


def bridge_source(op_snake: str, op_type: str) -> str:
    """The text of the generated per-op bridge TU: the op's exports (opbuild_ascendc/host_exports.h);
    ValueError for names that are not C identifiers."""
    if not op_snake.isidentifier() or not op_type.isidentifier():
        raise ValueError(f"op {op_type!r} / {op_snake!r}: names must be C identifiers")
    return f'#include "opbuild_ascendc/host_exports.h"\nOPBUILD_ASCENDC_HOST_EXPORTS({op_snake}, "{op_type}")\n'


CORE_SOURCE = '#include "opbuild_ascendc/host_bridge.h"\nOPBUILD_ASCENDC_HOST_CORE()\n'
"""The text of the bridge core TU: the bridge's implementation, the same for every op (compiled
once per build, linked into each op's blob)."""
CORE_NAME = "ascendc_host_core"
"""The stem of the bridge core's source and object."""

ASCENDC_CORE_DIR = "build/ascendc"
"""Where (under the build's out directory) the Ascend C bridge core is generated and compiled:
one place for every vendor, so that its command is the same in every build of a project (and
the import's as-built compile matches it: ascendc/check.py)."""


def ascendc_core_source(out: str = "out") -> str:
    """The bridge core's source, relative to the project root, for the out directory `out`."""
    return f"{out}/{ASCENDC_CORE_DIR}/{CORE_NAME}.cpp"
