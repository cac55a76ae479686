"""The ctypes mirror of opbuild/aicpu.h (runtime/call/aicpu.py) agrees with the C header."""

from __future__ import annotations

import ctypes

import pytest

from opbuild.runtime.call import aicpu

STRUCTS = [("AicpuTensor", aicpu.AicpuTensor), ("AicpuAttr", aicpu.AicpuAttr), ("AicpuContext", aicpu.AicpuContext)]


def _probe_source() -> str:
    lines = ['#include <stdio.h>', '#include <stddef.h>', '#include "opbuild/aicpu.h"', "int main(void) {"]
    for cname, py in STRUCTS:
        lines.append(f'    printf("{cname} __size__ %zu\\n", sizeof({cname}));')
        for field, *_ in py._fields_:
            lines.append(
                f'    printf("{cname} {field} %zu %zu\\n", offsetof({cname}, {field}), sizeof((({cname} *)0)->{field}));')
    for c in ("AICPU_MAX_DIMS", "AICPU_ERROR_LEN", *(f"AICPU_ATTR_{k.upper()}" for k in aicpu.ATTR_TYPES)):
        lines.append(f'    printf("const {c} %lld\\n", (long long){c});')
    lines += ["    return 0;", "}"]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def probe(cc) -> dict[tuple[str, str], tuple[int, ...]]:
    out = {}
    for line in cc.run(_probe_source(), "aicpu_abi_probe").splitlines():
        kind, name, *values = line.split()
        out[(kind, name)] = tuple(int(v) for v in values)
    return out


@pytest.mark.parametrize("cname,py", STRUCTS, ids=[s[0] for s in STRUCTS])
def test_struct_layout_matches_header(probe, cname, py):
    assert probe[(cname, "__size__")] == (ctypes.sizeof(py),)
    for field, ftype, *_ in py._fields_:
        assert probe[(cname, field)] == (getattr(py, field).offset, ctypes.sizeof(ftype)), f"{cname}.{field}"


def test_constants_match_header(probe):
    assert probe[("const", "AICPU_MAX_DIMS")] == (aicpu.MAX_DIMS,)
    assert probe[("const", "AICPU_ERROR_LEN")] == (aicpu.ERROR_LEN,)
    for name, value in aicpu.ATTR_TYPES.items():
        assert probe[("const", f"AICPU_ATTR_{name.upper()}")] == (value,), name
