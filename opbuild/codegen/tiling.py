"""`<op_snake>_tiling.h`: the tiling-data struct shared by the tiling function and the kernel."""

from __future__ import annotations

from dataclasses import dataclass

from opbuild.abi.vocabulary import TILING_FIELD_TYPES
from opbuild.codegen.env import render
from opbuild.codegen.naming import spec_display_path, upper
from opbuild.spec.model import OpSpec, TilingField

TILING_C_TYPE: dict[str, str] = {t.name: t.c_type for t in TILING_FIELD_TYPES}
"""C type of each tiling-field type."""

TILING_SIZE: dict[str, int] = {t.name: t.size for t in TILING_FIELD_TYPES}
"""Size (= natural alignment on x86_64 / aarch64 LP64) of each tiling-field type."""

EMPTY_STRUCT_FIELD = TilingField("opbuild_reserved_", "uint8")
"""ISO C has no empty structs: an op without tiling data gets this one-byte member."""


@dataclass(frozen=True)
class _Field:
    ctype: str
    name: str
    count: int


def tiling_fields(spec: OpSpec) -> tuple[TilingField, ...]:
    """The struct members as written: the spec's fields, or the reserved byte when there are none."""
    return spec.tiling_data or (EMPTY_STRUCT_FIELD,)


def tiling_header_name(spec: OpSpec) -> str:
    return f"{spec.snake}_tiling.h"


def render_tiling_header(spec: OpSpec) -> str:
    """`<op_snake>_tiling.h`: the struct, OPBUILD_TILING_DATA_TYPE and the IR index macros."""
    prefix = upper(spec.snake)
    return render(
        "tiling_header.h.j2",
        spec_path=spec_display_path(spec),
        guard=f"OPBUILD_{prefix}_TILING_H",
        struct=spec.tiling_data_struct,
        fields=[_Field(TILING_C_TYPE[f.type], f.name, f.count) for f in tiling_fields(spec)],
        prefix=prefix,
        inputs=[(upper(p.name), i) for i, p in enumerate(spec.inputs)],
        outputs=[(upper(p.name), i) for i, p in enumerate(spec.outputs)],
        attrs=[(upper(a.name), i) for i, a in enumerate(spec.attrs)],
    )


def tiling_struct_size(spec: OpSpec) -> int:
    """sizeof the tiling struct under C natural alignment (LP64): the kernel JSON's `opParaSize`."""
    offset = 0
    align = 1
    for f in tiling_fields(spec):
        size = TILING_SIZE[f.type]
        align = max(align, size)
        offset = (offset + size - 1) // size * size + size * f.count
    return (offset + align - 1) // align * align
