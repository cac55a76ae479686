"""describe() of Ascend C op_host sources: the OpDef's IR, attributes with defaults, SoCs and
source lines, the tiling-data classes in CANN's layout, the kernel-side tiling header made from
them, and the errors of sources that do not build or register no / several / another OpDef."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from .conftest import OPS, SOURCES, sources
from opbuild.ascendc import host
from opbuild.ascendc.errors import AscendcHostError
from opbuild.runtime_paths import native_include_dir

pytestmark = pytest.mark.slow  # compiles op_host sources with g++


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_vec_add_ir(descriptions):
    op = descriptions["VecAddCustom"].op
    src = SOURCES / "vec_add.cpp"
    assert op.op == "VecAddCustom"
    assert (op.file, op.line) == (str(src), line_of(src, "OP_ADD(VecAddCustom)"))
    assert [(p.name, p.param_type, p.dtypes, p.formats) for p in op.inputs] == [
        ("a", "required", ("float16", "float32"), ("ND", "ND")),
        ("b", "required", ("float16", "float32"), ("ND", "ND")),
    ]
    assert [(p.name, p.dtypes) for p in op.outputs] == [("c", ("float16", "float32"))]
    # the line of the Input(...) call, also when the chain continues on the next lines
    assert [p.line for p in op.inputs] == [line_of(src, 'Input("a")'), line_of(src, 'Input("b")')]
    assert op.outputs[0].line == line_of(src, 'Output("c")')
    assert op.socs == ("ascend910b", "ascend310p")
    assert op.attrs == ()
    assert (op.has_tiling, op.has_infer_shape, op.has_infer_dtype) == (True, True, True)


def test_lists_soc_configs_and_no_tiling_class(descriptions):
    desc = descriptions["PlainStructCustom"]
    op = desc.op
    assert [(p.name, p.dtypes, p.dtype_list, p.formats, p.format_list) for p in op.inputs] == [
        ("x", ("float32", "int32"), False, ("ND",), True), ("y", ("float32",), True, ("ND", "ND"), False)]
    assert op.outputs[0].formats == ("ND", "NCHW")
    assert [(a.name, a.param_type, a.type, a.default) for a in op.attrs] == [("case_id", "optional", "int", 1)]
    assert op.socs == ("ascend910b", "ascend310p")
    [cfg] = op.soc_configs
    assert (cfg.soc, [(p.name, p.dtypes) for p in cfg.inputs], cfg.outputs) == ("ascend310p", [("x", ("float32",))], ())
    assert cfg.flags == {"dynamicShapeSupport": True, "precisionReduce": False}
    assert (op.has_tiling, op.has_infer_shape, op.has_infer_dtype) == (True, False, False)
    assert desc.tiling == () and desc.classes_of("PlainStructCustom") == {}
    assert "registers no tiling-data class" in host.kernel_tiling_header(desc)
    assert "OPBUILD_ASCENDC_TILING_TYPE" not in host.kernel_tiling_header(desc)


def test_dynamic_and_optional_params(descriptions):
    assert [p.param_type for p in descriptions["SumListCustom"].op.inputs] == ["dynamic"]
    assert [p.param_type for p in descriptions["ReduceSumCustom"].op.inputs] == ["required", "optional"]


def test_attrs_with_defaults(descriptions):
    op = descriptions["ReduceSumCustom"].op
    src = SOURCES / "reduce_sum.cpp"
    assert [(a.name, a.param_type, a.type, a.default) for a in op.attrs] == [
        ("rounds", "required", "int", None),
        ("scale", "optional", "float", 1.5),
        ("fast", "optional", "bool", True),  # no AttrType(...): optional
        ("mode", "optional", "str", "mean"),
        ("axes", "optional", "list_int", [0, -1]),
        ("weights", "optional", "list_float", [0.5, 2.0]),
        ("flags", "optional", "list_bool", [True, False]),
    ]
    assert [a.line for a in op.attrs] == [line_of(src, f'Attr("{a.name}")') for a in op.attrs]
    leaky = descriptions["LeakyCustom"].op.attrs
    assert [(a.name, a.type, a.default) for a in leaky] == [("slope", "float", 0.25)]


def test_tiling_classes_in_cann_layout(descriptions):
    leaky = descriptions["LeakyCustom"]
    td = leaky.classes["TilingData"]
    assert td.size == 16  # 3 x 4 bytes, rounded up to 8
    assert [(f.name, f.type, f.offset, f.size) for f in td.fields] == [
        ("totalLength", "uint32_t", 0, 4), ("tileNum", "uint32_t", 4, 4), ("slope", "float", 8, 4)]
    assert descriptions["VecAddCustom"].classes["TilingData"].size == 8
    arr = descriptions["SumListCustom"].classes["SumListTiling"]
    assert [(f.name, f.offset, f.size, f.count) for f in arr.fields] == [
        ("length", 0, 4, None), ("listSize", 4, 4, None), ("firstDims", 8, 16, 4)]
    red = descriptions["ReduceSumCustom"]
    assert {b.name: b.class_name for b in red.tiling} == {
        "ReduceSumCustomShapeInfo": "ReduceShapeInfo", "ReduceSumCustom": "TilingData",
        "ReduceSumCustom_3": "TilingDataBig"}
    assert [(f.name, f.offset, f.struct) for f in red.classes["TilingData"].fields] == [
        ("totalLength", 0, None), ("shape", 8, "ReduceShapeInfo"), ("mode", 24, None)]
    assert red.classes["TilingData"].size == 32
    assert [(f.name, f.offset) for f in red.classes["ReduceShapeInfo"].fields] == [("rank", 0), ("elements", 8)]
    assert set(red.classes_of("ReduceSumCustom")) == {"", "3"}


def test_kernel_tiling_header_matches_the_host_layout(descriptions, tmp_path):
    """Each generated header compiles, and offsetof/sizeof of every field equal describe()'s."""
    program = ["#include <cstddef>", "#include <cstdint>", "#include <cstdio>"]
    checks = []
    for op, desc in descriptions.items():
        text = host.kernel_tiling_header(desc)
        header = tmp_path / f"{op}.h"
        header.write_text(text)
        program.append(f"namespace {op}_ns {{")
        program.append(f'#include "{header}"')
        program.append("}")
        program.append("#undef OPBUILD_ASCENDC_TILING_TYPE")  # each header defines it for its op
        for name, c in desc.classes.items():
            if name not in text:
                continue
            checks.append(f'std::printf("{op} {name} %zu\\n", sizeof({op}_ns::{name}));')
            for f in c.fields:
                checks.append(f'std::printf("{op} {name}.{f.name} %zu %zu\\n", offsetof({op}_ns::{name}, {f.name}), '
                              f'sizeof({op}_ns::{name}::{f.name}));')
    program += ["int main() {", *checks, "}"]
    (tmp_path / "check.cpp").write_text("\n".join(program))
    subprocess.run(["g++", "-std=c++17", "-Wall", "-Werror", "-o", str(tmp_path / "check"), str(tmp_path / "check.cpp")],
                   check=True)
    out = subprocess.run([str(tmp_path / "check")], capture_output=True, text=True, check=True).stdout.splitlines()
    expected = []
    for op, desc in descriptions.items():
        text = host.kernel_tiling_header(desc)
        for name, c in desc.classes.items():
            if name in text:
                expected.append(f"{op} {name} {c.size}")
                expected += [f"{op} {name}.{f.name} {f.offset} {f.size}" for f in c.fields]
    assert out == expected
    red = host.kernel_tiling_header(descriptions["ReduceSumCustom"])
    assert "#define OPBUILD_ASCENDC_TILING_TYPE TilingData\n" in red
    assert "#define OPBUILD_ASCENDC_TILING_TYPE_KEY_3 TilingDataBig\n" in red
    assert red.index("struct ReduceShapeInfo {") < red.index("struct TilingData {")  # nested classes first


def test_describe_builds_and_checks(tmp_path):
    desc = host.describe(sources("LeakyCustom"), "leaky_custom", "LeakyCustom")
    assert desc.op.op == "LeakyCustom"
    assert desc.sources == (str(SOURCES / "leaky.cpp"),)


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


OPDEF = """
namespace ops {{
class {name} : public OpDef {{
public:
    explicit {name}(const char *n) : OpDef(n) {{
        this->Input("x").DataType({{ge::DT_FLOAT}}).Format({{ge::FORMAT_ND}});
        this->Output("y").DataType({{ge::DT_FLOAT}}).Format({{ge::FORMAT_ND}});
        {extra}
    }}
}};
OP_ADD({name});
}}
"""


def test_compile_error_names_the_file(tmp_path):
    src = write(tmp_path, "broken.cpp", '#include "register/op_def_registry.h"\nint f() { return undeclared_name; }\n')
    with pytest.raises(AscendcHostError) as e:
        host.describe([src], "broken", "Broken")
    assert str(e.value).startswith(f"{src}: compiling failed (exit 1):\n")
    assert "undeclared_name" in str(e.value)


def test_missing_source(tmp_path):
    with pytest.raises(AscendcHostError, match="nothere.cpp: no such op_host source"):
        host.describe([tmp_path / "nothere.cpp"], "x", "X")


def test_no_opdef(tmp_path):
    src = write(tmp_path, "empty.cpp", '#include "register/op_def_registry.h"\n')
    with pytest.raises(AscendcHostError) as e:
        host.describe([src], "empty_custom", "EmptyCustom")
    assert str(e.value) == f"{src}: no OpDef registered (an `OP_ADD(EmptyCustom);` after the op's class)"


def test_two_opdefs_and_another_type(tmp_path):
    text = ('#include "register/op_def_registry.h"\n' + OPDEF.format(name="OneCustom", extra="")
            + OPDEF.format(name="TwoCustom", extra=""))
    src = write(tmp_path, "two.cpp", text)
    with pytest.raises(AscendcHostError) as e:
        host.describe([src], "one_custom", "OneCustom")
    lines = [i for i, line in enumerate(text.splitlines(), 1) if line.startswith("OP_ADD")]
    assert str(e.value) == (f"{src}: 2 OpDefs registered (OneCustom ({src}:{lines[0]}), TwoCustom ({src}:{lines[1]})); "
                            "an op's host sources register exactly one")
    other = write(tmp_path, "other.cpp", '#include "register/op_def_registry.h"\n' + OPDEF.format(name="OneCustom", extra=""))
    with pytest.raises(AscendcHostError, match=r"OP_ADD\(OneCustom\) registers OneCustom, expected WantedCustom"):
        host.describe([other], "wanted_custom", "WantedCustom")


def test_opdef_constructor_throwing(tmp_path):
    text = ('#include "register/op_def_registry.h"\n#include <stdexcept>\n'
            + OPDEF.format(name="ThrowCustom", extra='throw std::runtime_error("bad dtype table");'))
    src = write(tmp_path, "throw.cpp", text)
    with pytest.raises(AscendcHostError) as e:
        host.describe([src], "throw_custom", "ThrowCustom")
    line = next(i for i, l in enumerate(text.splitlines(), 1) if l.startswith("OP_ADD"))
    assert str(e.value) == f"{src}:{line}: OP_ADD(ThrowCustom): bad dtype table"


def test_opdef_constructor_crashing(tmp_path):
    """describe loads the library in a child process: a crash at load time is an error, not the end
    of the build."""
    text = '#include "register/op_def_registry.h"\n' + OPDEF.format(name="CrashCustom", extra="__builtin_trap();")
    src = write(tmp_path, "crash.cpp", text)
    with pytest.raises(AscendcHostError) as e:
        host.describe([src], "crash_custom", "CrashCustom")
    assert str(e.value) == (f"{src}: loading the host library (its OP_ADD constructors and static initializers) "
                            "was killed by SIGILL")


def test_blob_commands_are_the_builds(tmp_path):
    """host.py runs the build's own commands (builder/toolchain.py), with the flags the module
    docstring explains."""
    from opbuild.builder.toolchain import ASCENDC_HOST_FLAGS, HostToolchain

    b = host.blob_commands([SOURCES / "leaky.cpp"], "leaky_custom", "LeakyCustom", tmp_path)
    inc = native_include_dir()
    tc = HostToolchain()
    src, obj, compile_cmd = b.compiles[0]
    assert compile_cmd == tc.ascendc_host_object_command(str(src), str(obj), [str(inc / "ascendc"), str(inc)])
    assert {"-std=c++17", "-O2", "-fPIC", "-fvisibility=hidden", "-fvisibility-inlines-hidden",
            "-fno-gnu-unique"} <= set(compile_cmd) and set(ASCENDC_HOST_FLAGS) <= set(compile_cmd)
    assert [c[0] for c in b.compiles[-2:]] == [b.core, b.bridge]
    for _, _, command in b.compiles[-2:]:  # the bridge core and the exports: glue, compiled for size
        assert "-Os" in command and "-O2" not in command
    assert b.link[1:3] == ["-r", "--force-group-allocation"]
    assert b.link[5:] == [str(o) for _, o, _ in b.compiles]
    assert b.localize[1] == "--localize-hidden" and b.localize[-1] == str(b.blob)
    assert b.bridge_text == '#include "opbuild_ascendc/host_exports.h"\nOPBUILD_ASCENDC_HOST_EXPORTS(leaky_custom, "LeakyCustom")\n'
    assert b.generated == {b.core: host.CORE_SOURCE, b.bridge: b.bridge_text}


def test_only_the_bridge_exports_stay_global(host_library):
    out = subprocess.run(["nm", "-D", "--defined-only", str(host_library)], capture_output=True, text=True,
                         check=True).stdout
    ours = sorted(line.split()[-1] for line in out.splitlines() if line.split()[1] == "T")
    expected = sorted(f"{snake}_opbuild_{s}" for snake, _ in OPS.values()
                      for s in host.EXPORT_SUFFIXES)
    assert ours == expected
