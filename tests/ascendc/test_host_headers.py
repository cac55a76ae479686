"""The Ascend C host headers hold opbuild's numbers: ge::DataType / ge::Format values, the bridge's
dtype and format names, PlatformAscendC's core counts and UB size, and the tiling-data layout
rule (natural alignment, size rounded up to 8). One small C++ program prints them all."""

from __future__ import annotations

import subprocess

import pytest

from opbuild.abi import vocabulary
from opbuild.runtime_paths import native_include_dir

# aclFormat enumerators whose name is not ACL_FORMAT_<GE name without FORMAT_>
_ACL_FORMAT_GE_NAME = {"ACL_FRACTAL_Z_3D": "FORMAT_FRACTAL_Z_3D"}


def _ge_formats() -> dict[str, int]:
    out = {}
    for name, value in vocabulary.ACL_FORMATS.items():
        if value < 0:
            continue
        out[_ACL_FORMAT_GE_NAME.get(name, name.replace("ACL_FORMAT_", "FORMAT_"))] = value
    return out


DTYPES = {t.ge_name: t.acl for t in vocabulary.CANN_DATA_TYPES if t.acl is not None}
FORMATS = _ge_formats()


@pytest.fixture(scope="module")
def printed(tmp_path_factory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("ascendc_headers")
    lines = ['#include "opbuild_ascendc/host_bridge.h"', '#include "tiling/platform/platform_ascendc.h"',
             '#include "tiling/tiling_api.h"', "#include <cstdio>",
             "namespace optiling {", "BEGIN_TILING_DATA_DEF(Three)", "TILING_DATA_FIELD_DEF(uint32_t, a);",
             "TILING_DATA_FIELD_DEF(uint32_t, b);", "TILING_DATA_FIELD_DEF(uint32_t, c);", "END_TILING_DATA_DEF;",
             "BEGIN_TILING_DATA_DEF(Mixed)", "TILING_DATA_FIELD_DEF(uint8_t, flag);",
             "TILING_DATA_FIELD_DEF(int64_t, big);", "TILING_DATA_FIELD_DEF(uint16_t, small);", "END_TILING_DATA_DEF;",
             "}", "int main() {"]
    for name in DTYPES:
        lines.append(f'std::printf("dtype {name} %d\\n", (int)ge::{name});')
    for name in FORMATS:
        lines.append(f'std::printf("format {name} %d\\n", (int)ge::{name});')
    lines.append('for (int i = 0; i < 64; ++i) std::printf("dtype_name %d %s\\n", i, '
                 'opbuild_ascendc::bridge::dtype_name(i).c_str());')
    lines.append('for (int i = 0; i < 64; ++i) std::printf("format_name %d %s\\n", i, '
                 'opbuild_ascendc::bridge::format_name(i).c_str());')
    for soc in vocabulary.SOCS:
        lines += [f'{{ fe::PlatFormInfos info("{soc.name}", {soc.core_num}, {soc.ub_size});',
                  "platform_ascendc::PlatformAscendC p(&info); uint64_t ub = 0;",
                  "p.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ub);",
                  f'std::printf("soc {soc.name} %u %u %u %llu\\n", p.GetCoreNum(), p.GetCoreNumAic(), '
                  "p.GetCoreNumAiv(), (unsigned long long)ub); }"]
    lines += ['std::printf("status %u %u\\n", ge::GRAPH_SUCCESS, ge::GRAPH_FAILED);',
              'std::printf("graph %u %u\\n", OPBUILD_GRAPH_SUCCESS, OPBUILD_GRAPH_FAILED);',
              'std::printf("layout Three %zu\\n", optiling::Three().GetDataSize());',
              'const auto &m = opbuild_ascendc::class_info<optiling::Mixed>();',
              'std::printf("layout Mixed %zu", m.size);',
              'for (const auto &f : m.fields) std::printf(" %s@%zu", f.name, f.offset);',
              'std::printf("\\n"); }']
    src = tmp / "print.cpp"
    src.write_text("\n".join(lines) + "\n")
    inc = native_include_dir()
    subprocess.run(["g++", "-std=c++17", "-Wall", "-Werror", f"-I{inc / 'ascendc'}", f"-I{inc}", "-o",
                    str(tmp / "print"), str(src)], check=True)
    out = subprocess.run([str(tmp / "print")], capture_output=True, text=True, check=True).stdout
    result: dict[str, str] = {}
    for line in out.splitlines():
        kind, key, value = line.split(" ", 2)
        result[f"{kind} {key}"] = value
    return result


def test_ge_data_types_are_ges(printed):
    assert {n: int(printed[f"dtype {n}"]) for n in DTYPES} == DTYPES
    assert {d.ge_name: int(printed[f"dtype {d.ge_name}"]) for d in vocabulary.DTYPES} == {
        d.ge_name: d.ge for d in vocabulary.DTYPES}


def test_ge_formats_are_ges(printed):
    assert {n: int(printed[f"format {n}"]) for n in FORMATS} == FORMATS
    assert {f.name: int(printed[f"format FORMAT_{f.name}"]) for f in vocabulary.FORMATS} == {
        f.name: f.ge for f in vocabulary.FORMATS}


def test_bridge_names_are_the_spec_names(printed):
    for i in range(64):
        dtype = vocabulary.DTYPE_BY_GE.get(i)
        assert printed[f"dtype_name {i}"] == (dtype.name if dtype else f"ge:{i}")
        fmt = vocabulary.FORMAT_BY_GE.get(i)
        assert printed[f"format_name {i}"] == (fmt.name if fmt else f"ge:{i}")


def test_platform_numbers_are_the_vocabularys(printed):
    for soc in vocabulary.SOCS:
        assert printed[f"soc {soc.name}"] == (f"{soc.core_num} {soc.cube_core_num} {soc.vector_core_num} "
                                              f"{soc.ub_size}")


def test_graph_status_values(printed):
    assert printed["status 0"] == str(0xFFFFFFFF)
    assert printed["graph 0"] == str(0xFFFFFFFF)


def test_tiling_layout_rule(printed):
    assert printed["layout Three"] == "16"  # 3 x uint32_t, rounded up to 8 bytes
    assert printed["layout Mixed"] == "24 flag@0 big@8 small@16"
