"""msopgen (opbuild/ascendc/msopgen.py, ir_json.py, skeleton.py): `msopgen gen` on an AddCustom-like and
a ReduceCustom-like IR JSON (written here), `opbuild import msopgen`'s op.yaml, and the errors
(bad JSON with line/col, unknown dtype alias with "did you mean", -c not ai_core-<soc>, unknown SoC)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from opbuild.ascendc import msopgen
from opbuild.abi.vocabulary import DEFAULT_SOC
from opbuild.cli import main as opbuild_main

ADD_LIKE = [{
    "op": "AddLike",
    "input_desc": [
        {"name": "x", "param_type": "required", "format": ["ND"], "type": ["fp16"]},
        {"name": "y", "param_type": "required", "format": ["ND"], "type": ["half"]},
    ],
    "output_desc": [{"name": "z", "param_type": "required", "format": ["ND"], "type": ["float16"]}],
    "attr": [{"name": "alpha", "param_type": "optional", "type": "float", "default_value": "1"},
             {"name": "axes", "param_type": "optional", "type": "listInt", "default_value": [0, 1]},
             {"name": "mode", "param_type": "required", "type": "string"}],
}]

REDUCE_LIKE = [{
    "op": "ReduceLike",
    "input_desc": [{"name": "x", "param_type": "required", "format": ["ND", "ND", "ND"],
                    "type": ["float16", "float", "int32"]}],
    "output_desc": [{"name": "z", "param_type": "required", "format": ["ND", "ND", "ND"],
                     "type": ["fp16", "fp32", "int32"]}],
}]


def _write(tmp: Path, doc: object, name: str = "op.json") -> Path:
    path = tmp / name
    path.write_text(json.dumps(doc, indent=4) if not isinstance(doc, str) else doc)
    return path


def test_gen_add_like_writes_cann_project(tmp_path: Path, capsys) -> None:
    ir = _write(tmp_path, ADD_LIKE)
    out = tmp_path / "CustomOp"
    assert msopgen.main(["gen", "-i", str(ir), "-c", "ai_core-Ascend910B1", "-lan", "cpp", "-out", str(out)]) == 0
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert files == ["CMakePresets.json", "build.sh", "framework/tf_plugin/tensorflow_add_like_plugin.cc",
                     "op_host/add_like.cpp", "op_host/add_like_tiling.h", "op_kernel/add_like.cpp"]
    presets = json.loads((out / "CMakePresets.json").read_text())["configurePresets"][0]["cacheVariables"]
    assert presets["ASCEND_COMPUTE_UNIT"]["value"] == "ascend910b" and presets["vendor_name"]["value"] == "customize"
    assert (out / "build.sh").stat().st_mode & 0o111
    host = (out / "op_host" / "add_like.cpp").read_text()
    assert 'this->Input("y")\n            .ParamType(REQUIRED)\n            .DataType({ge::DT_FLOAT16})' in host
    assert 'this->Attr("alpha").AttrType(OPTIONAL).Float(1.0);' in host
    assert 'this->Attr("axes").AttrType(OPTIONAL).ListInt({0, 1});' in host
    assert 'this->Attr("mode").AttrType(REQUIRED).String();' in host
    assert '.AddConfig("ascend910b");' in host and "OP_ADD(AddLike);" in host
    assert "BEGIN_TILING_DATA_DEF(AddLikeTilingData)" in (out / "op_host" / "add_like_tiling.h").read_text()
    kernel = (out / "op_kernel" / "add_like.cpp").read_text()
    assert 'extern "C" __global__ __aicore__ void add_like(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR workspace, ' \
           'GM_ADDR tiling)' in kernel
    assert "msopgen: generated AddLike" in capsys.readouterr().out


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_generated_sources_are_valid_cpp_syntax(tmp_path: Path) -> None:
    """The skeleton parses as C++ against stand-in declarations of the Ascend C names it uses."""
    out = tmp_path / "P"
    msopgen.gen(_write(tmp_path, ADD_LIKE), "ai_core-Ascend910B1", out, ["tf"])
    stubs = tmp_path / "stubs"
    (stubs / "register").mkdir(parents=True)
    (stubs / "register" / "tilingdata_base.h").write_text(
        "#include <cstdint>\n#include <cstddef>\n"
        "#define BEGIN_TILING_DATA_DEF(n) struct n { void SaveToBuffer(void*, size_t) {} size_t GetDataSize() "
        "{ return 0; }\n#define TILING_DATA_FIELD_DEF(t, f) t f; void set_##f(t v) { f = v; }\n"
        "#define END_TILING_DATA_DEF }\n#define REGISTER_TILING_DATA_CLASS(a, b)\n")
    (stubs / "register" / "op_def_registry.h").write_text("""
#include <initializer_list>
namespace ge { enum graphStatus { GRAPH_SUCCESS }; enum DataType { DT_FLOAT16, DT_FLOAT, DT_INT32 };
  enum Format { FORMAT_ND, FORMAT_NCHW, FORMAT_NHWC }; }
namespace gert {
struct Shape { long GetShapeSize() const { return 0; } };
struct StorageShape { Shape s; const Shape &GetOriginShape() const { return s; } };
struct Raw { void *GetData() { return 0; } size_t GetCapacity() { return 0; } void SetDataSize(size_t) {} };
struct TilingContext { const StorageShape *GetInputShape(int) { return 0; } void SetBlockDim(int) {}
  Raw *GetRawTilingData() { return 0; } size_t *GetWorkspaceSizes(int) { return 0; } };
struct InferShapeContext { const Shape *GetInputShape(int) { return 0; } Shape *GetOutputShape(int) { return 0; } };
struct InferDataTypeContext { ge::DataType GetInputDataType(int) { return ge::DT_FLOAT; }
  void SetOutputDataType(int, ge::DataType) {} };
}
namespace ops {
enum P { REQUIRED, OPTIONAL, DYNAMIC };
struct Param { Param &ParamType(P) { return *this; } Param &DataType(std::initializer_list<ge::DataType>) { return *this; }
  Param &Format(std::initializer_list<ge::Format>) { return *this; } };
struct AttrB { AttrB &AttrType(P) { return *this; } AttrB &Float(double = 0) { return *this; }
  AttrB &ListInt(std::initializer_list<long> = {}) { return *this; } AttrB &String(const char * = "") { return *this; } };
struct Core { Core &SetTiling(ge::graphStatus (*)(gert::TilingContext *)) { return *this; }
  Core &AddConfig(const char *) { return *this; } };
struct OpDef { explicit OpDef(const char *) {} Param &Input(const char *) { return p; } Param &Output(const char *) { return p; }
  AttrB &Attr(const char *) { return a; } OpDef &SetInferShape(ge::graphStatus (*)(gert::InferShapeContext *)) { return *this; }
  OpDef &SetInferDataType(ge::graphStatus (*)(gert::InferDataTypeContext *)) { return *this; }
  Core &AICore() { return c; } Param p; AttrB a; Core c; };
}
#define OP_ADD(n) static n n##_instance(#n)
""")
    (stubs / "kernel_operator.h").write_text("#include <cstdint>\n#define GM_ADDR uint8_t *\n#define __global__\n"
                                             "#define __aicore__\n#define GET_TILING_DATA(v, t) (void)(t)\n")
    for src in ("op_host/add_like.cpp", "op_kernel/add_like.cpp"):
        proc = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", f"-I{stubs}", f"-I{out / 'op_host'}",
                               str(out / src)], capture_output=True, text=True)
        assert proc.returncode == 0, f"{src}:\n{proc.stderr}"


def test_gen_frameworks_and_reduce_like(tmp_path: Path) -> None:
    ir = _write(tmp_path, REDUCE_LIKE)
    out = tmp_path / "onnx"
    assert msopgen.gen(ir, "ai_core-Ascend310P3", out, ["onnx"]) == ["ReduceLike"]
    plugin = (out / "framework" / "onnx_plugin" / "reduce_like_plugin.cc").read_text()
    assert '.OriginOpType("ai.onnx::11::ReduceLike")' in plugin
    host = (out / "op_host" / "reduce_like.cpp").read_text()
    assert ".DataType({ge::DT_FLOAT16, ge::DT_FLOAT, ge::DT_INT32})" in host and '.AddConfig("ascend310p")' in host
    aclnn = tmp_path / "aclnn"
    msopgen.gen(ir, "ai_core-Ascend910B1", aclnn, ["aclnn"])
    assert not (aclnn / "framework").exists()


def test_import_msopgen_op_yaml(tmp_path: Path) -> None:
    ir = _write(tmp_path, REDUCE_LIKE)
    dest = tmp_path / "ops" / "reduce_like"
    assert opbuild_main(["import", "msopgen", str(ir), "-o", str(dest)]) == 0
    text = (dest / "op.yaml").read_text()
    spec = yaml.safe_load(text)
    assert spec["op"] == "ReduceLike"
    assert spec["inputs"] == [{"name": "x", "dtypes": ["float16", "float32", "int32"], "formats": ["ND"]}]
    assert spec["kernel"] == {"source": "op_kernel/reduce_like.cpp", "entry": "reduce_like", "api": "ascendc"}
    assert spec["host"] == {"source": "op_host/reduce_like.cpp"}
    assert "simplified_key" not in spec and "tiling" not in spec  # default mode: no keys
    assert spec["binaries"] == [
        {"name": "ReduceLike_FLOAT16", "when": {"x": "float16", "z": "float16"}},
        {"name": "ReduceLike_FLOAT32", "when": {"x": "float32", "z": "float32"}},
        {"name": "ReduceLike_INT32", "when": {"x": "int32", "z": "int32"}},
    ]
    assert spec["socs"] == [DEFAULT_SOC]
    assert (dest / "op_host" / "reduce_like.cpp").is_file() and (dest / "op_kernel" / "reduce_like.cpp").is_file()


def test_import_attrs_and_format_columns(tmp_path: Path) -> None:
    doc = [{**ADD_LIKE[0], "input_desc": [
        {"name": "x", "format": ["ND", "NCHW"], "type": ["fp16", "fp16"]},
        {"name": "y", "param_type": "optional", "format": ["ND"], "type": ["fp16"]}]}]
    dest = tmp_path / "add_like"
    msopgen.import_msopgen(_write(tmp_path, doc), dest)
    spec = yaml.safe_load((dest / "op.yaml").read_text())
    assert spec["attrs"] == [{"name": "alpha", "type": "float", "default": 1.0},
                             {"name": "axes", "type": "list_int", "default": [0, 1]},
                             {"name": "mode", "type": "str"}]
    assert spec["inputs"][1] == {"name": "y", "param_type": "optional", "dtypes": ["float16"], "formats": ["ND"]}
    assert [b["when"]["x"] for b in spec["binaries"]] == [{"dtype": "float16", "format": "ND"},
                                                          {"dtype": "float16", "format": "NCHW"}]
    assert [b["name"] for b in spec["binaries"]] == ["AddLike_FLOAT16_0", "AddLike_FLOAT16_1"]


@pytest.mark.parametrize("doc, expected", [
    ('[{"op": "AddLike",\n  "input_desc": [}]', ":2:18: not valid JSON"),
    ([{**REDUCE_LIKE[0], "input_desc": [{"name": "x", "type": ["flaot16"]}]}],
     "ReduceLike: input_desc[0] (x): type 'flaot16': unknown dtype; did you mean 'float16'?"),
    ([{**REDUCE_LIKE[0], "input_desc": [{"name": "x", "type": ["fp16", "fp32"]}]}],
     "input_desc[0] (x): type has 2 entries; give 1 or 3"),
    ([{**REDUCE_LIKE[0], "attr": [{"name": "k", "type": "float"}]}], ""),  # a required attr: fine
    ([{**REDUCE_LIKE[0], "attr": [{"name": "k", "type": "flaot", "param_type": "optional", "default_value": 1}]}],
     "attr[0] (k): type 'flaot': unknown attr type; did you mean 'float'?"),
    ([{**REDUCE_LIKE[0], "attr": [{"name": "k", "type": "int", "param_type": "optional", "default_value": "x"}]}],
     "attr[0] (k): default_value 'x' is not a int"),
    ([{**REDUCE_LIKE[0], "input_desc": [{"name": "x", "type": ["fp16"], "format": ["NC1HWC0"]}]}],
     "format 'NC1HWC0' is not supported"),
    ([{"op": "add_like", "input_desc": [], "output_desc": []}], "op 'add_like' must be CamelCase"),
    ([{**REDUCE_LIKE[0], "inputs": []}], "unknown key 'inputs'"),
])
def test_ir_errors(tmp_path: Path, capsys, doc: object, expected: str) -> None:
    ir = _write(tmp_path, doc, "bad.json")
    status = msopgen.main(["gen", "-i", str(ir), "-c", "ai_core-Ascend910B1", "-out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    if not expected:
        assert status == 0, err
        return
    assert status == 1 and f"{ir}" in err and expected in err, err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()  # nothing half-written


@pytest.mark.parametrize("unit, expected", [
    ("Ascend910B1", "expected ai_core-<SoC>"),
    ("aicpu-Ascend910B1", "expected ai_core-<SoC>"),
    ("ai_core-Ascend910A", "unknown SoC 'Ascend910A'; opbuild knows Ascend910B1 (ascend910b)"),
])
def test_compute_unit_errors(tmp_path: Path, capsys, unit: str, expected: str) -> None:
    ir = _write(tmp_path, ADD_LIKE)
    assert msopgen.main(["gen", "-i", str(ir), "-c", unit, "-out", str(tmp_path / "out")]) == 1
    assert expected in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_output_dir_not_empty_and_other_errors(tmp_path: Path, capsys) -> None:
    ir = _write(tmp_path, ADD_LIKE)
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep").write_text("x")
    assert msopgen.main(["gen", "-i", str(ir), "-c", "ai_core-Ascend910B1", "-out", str(out)]) == 1
    assert "exists and is not empty" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["keep"]
    assert msopgen.main(["gen", "-i", str(ir), "-c", "ai_core-Ascend910B1", "-lan", "py", "-out", "x"]) == 1
    assert "-lan 'py'" in capsys.readouterr().err
    assert msopgen.main(["gen", "-i", str(tmp_path / "none.json"), "-c", "ai_core-Ascend910B1", "-out", "x"]) == 1
    assert "cannot read" in capsys.readouterr().err
    assert opbuild_main(["import", "msopgen", str(ir), "-o", str(tmp_path / "ops" / "wrong")]) == 1
    assert "must be named add_like" in capsys.readouterr().err


def test_generated_op_yaml_validates_with_c_sources_in_place_of_ascend_c(tmp_path: Path, capsys) -> None:
    """Until `opbuild validate` knows the Ascend C fields: the generated spec with its kernel/host
    lines swapped for a C kernel and tiling pair (from `opbuild new`) passes every other check."""
    ir = [{"op": "ScaleLike",
           "input_desc": [{"name": "x", "param_type": "required", "format": ["ND", "ND"], "type": ["fp16", "float"]}],
           "output_desc": [{"name": "y", "param_type": "required", "format": ["ND", "ND"], "type": ["half", "fp32"]}],
           "attr": [{"name": "scale", "param_type": "optional", "type": "float", "default_value": "2.0"}]}]
    scaffold = tmp_path / "scaffold"
    assert opbuild_main(["new", "ScaleLike", "--ops-dir", str(scaffold)]) == 0
    dest = tmp_path / "ops" / "scale_like"
    assert opbuild_main(["import", "msopgen", str(_write(tmp_path, ir)), "-o", str(dest)]) == 0
    c_spec = (scaffold / "scale_like" / "op.yaml").read_text()
    c_lines = "".join(line for line in c_spec.splitlines(keepends=True)
                      if line.startswith(("kernel:", "tiling:", "tiling_data:", "  - {name: total_length",
                                          "  - {name: block_length", "  - {name: scale, type: float}")))
    text = (dest / "op.yaml").read_text()
    assert "kernel: {source: op_kernel/scale_like.cpp, entry: scale_like, api: ascendc}\n" in text
    text = text.replace("kernel: {source: op_kernel/scale_like.cpp, entry: scale_like, api: ascendc}\n", "")
    text = text.replace("host: {source: op_host/scale_like.cpp}\n", c_lines)
    (dest / "op.yaml").write_text(text)
    for name in ("kernel.c", "tiling.c"):
        shutil.copy(scaffold / "scale_like" / name, dest / name)
    capsys.readouterr()
    assert opbuild_main(["validate", str(dest)]) == 0, capsys.readouterr().err
