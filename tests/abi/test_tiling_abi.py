"""The ctypes mirror of tiling.h and the GE enum tables agree with the C headers."""

from __future__ import annotations

import ctypes

import pytest

from opbuild.abi import ge_types
from opbuild.runtime.host import tiling_context as tc

STRUCTS = [("OpbuildTensorDesc", tc.TensorDesc), ("OpbuildAttrValue", tc.AttrValue), ("TilingContext", tc.TilingContext)]


def _probe_source() -> str:
    lines = ['#include <stdio.h>', '#include <stddef.h>', '#include "opbuild/tiling.h"', "int main(void) {"]
    for cname, py in STRUCTS:
        lines.append(f'    printf("{cname} __size__ %zu\\n", sizeof({cname}));')
        lines.append(f'    printf("{cname} __align__ %zu\\n", _Alignof({cname}));')
        for field, *_ in py._fields_:
            lines.append(
                f'    printf("{cname} {field} %zu %zu\\n", offsetof({cname}, {field}), sizeof((({cname} *)0)->{field}));'
            )
    consts = [*ge_types.DTYPE_C_ENUM.values(), *ge_types.FORMAT_C_ENUM.values(),
              "OPBUILD_TILING_ABI_VERSION", "OPBUILD_MAX_DIMS", "OPBUILD_ERROR_LEN", "OPBUILD_MAX_SIMPLIFIED_KEY_LEN",
              "OPBUILD_GRAPH_SUCCESS", "OPBUILD_GRAPH_FAILED", "OPBUILD_GRAPH_PARAM_INVALID",
              *(f"OPBUILD_ATTR_{k.upper()}" for k in tc.ATTR_TYPES)]
    for c in consts:
        lines.append(f'    printf("const {c} %llu\\n", (unsigned long long){c});')
    for name, ctype in sorted(ge_types.DTYPE_C_TYPE.items()):
        lines.append(f'    printf("ctype {name} %zu\\n", sizeof({ctype}));')
    lines += ["    return 0;", "}"]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def probe(cc) -> dict[tuple[str, str], tuple[int, ...]]:
    out = {}
    for line in cc.run(_probe_source(), "abi_probe").splitlines():
        kind, name, *values = line.split()
        out[(kind, name)] = tuple(int(v) for v in values)
    return out


@pytest.mark.parametrize("cname,py", STRUCTS, ids=[s[0] for s in STRUCTS])
def test_struct_layout_matches_header(probe, cname, py):
    assert probe[(cname, "__size__")] == (ctypes.sizeof(py),)
    assert probe[(cname, "__align__")] == (ctypes.alignment(py),)
    for field, ftype, *_ in py._fields_:
        assert probe[(cname, field)] == (getattr(py, field).offset, ctypes.sizeof(ftype)), f"{cname}.{field}"


def test_constants_match_header(probe):
    for name, ge in ge_types.DTYPE_TO_GE.items():
        assert probe[("const", ge_types.DTYPE_C_ENUM[name])] == (ge,), name
    for name, ge in ge_types.FORMAT_TO_GE.items():
        assert probe[("const", ge_types.FORMAT_C_ENUM[name])] == (ge,), name
    assert probe[("const", "OPBUILD_TILING_ABI_VERSION")] == (tc.TILING_ABI_VERSION,)
    assert probe[("const", "OPBUILD_MAX_DIMS")] == (tc.MAX_DIMS,)
    assert probe[("const", "OPBUILD_ERROR_LEN")] == (tc.ERROR_LEN,)
    assert probe[("const", "OPBUILD_MAX_SIMPLIFIED_KEY_LEN")] == (tc.MAX_SIMPLIFIED_KEY_LEN,)
    assert probe[("const", "OPBUILD_GRAPH_SUCCESS")] == (tc.GRAPH_SUCCESS,)
    assert probe[("const", "OPBUILD_GRAPH_FAILED")] == (tc.GRAPH_FAILED,)
    assert probe[("const", "OPBUILD_GRAPH_PARAM_INVALID")] == (tc.GRAPH_PARAM_INVALID,)
    for name, value in tc.ATTR_TYPES.items():
        assert probe[("const", f"OPBUILD_ATTR_{name.upper()}")] == (value,)


def test_kernel_c_types_have_the_dtype_size(probe):
    for name, size in ge_types.DTYPE_ITEMSIZE.items():
        assert probe[("ctype", name)] == (size,), name
        assert ge_types.numpy_dtype(name).itemsize == size
