"""`atc` (opbuild/om/atc.py): the real command (console script or `python -m opbuild.om.atc`) on the
sample ops, its outputs loaded and run with OmRunner against numpy, `--mode=1` JSON read back
with the ge.proto descriptor, `--mode=6` output, and every error a user can make."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from opbuild.abi.vocabulary import SOC
from opbuild.om import atc, singleop_json
from opbuild.om import format as omf
from opbuild.om.loader import load_om, parse_om
from opbuild.om.run import OmRunner
from opbuild.om.single_op import signature

CONSOLE_ATC = Path(sys.executable).with_name("atc")


def add_json(shape, *, op: str = "AddCustomTemplate", dtype: str = "float16", ranges: bool = False) -> list:
    """The samples' add_custom_{static,dynamic}_shape.json, for the in-house AddCustom lookalike."""
    def desc(name):
        d = {"name": name, "param_type": "required", "format": "ND", "shape": list(shape), "type": dtype}
        if ranges:
            d["shape_range"] = [[1, -1]] * len(shape)
        return d
    return [{"op": op, "input_desc": [desc("x"), desc("y")], "output_desc": [desc("z")]}]


def run_atc(args, env_extra=None, *, console: bool = False, cwd=None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("ASCEND_OPP_PATH", "ASCEND_CUSTOM_OPP_PATH")}
    env.update(env_extra or {})
    cmd = [str(CONSOLE_ATC)] if console else [sys.executable, "-m", "opbuild.om.atc"]
    return subprocess.run(cmd + list(args), env=env, capture_output=True, text=True, timeout=300, cwd=cwd)


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data, indent=4))
    return path


def run_om(path: Path, inputs: dict) -> dict:
    return OmRunner(load_om(path, trust=True)).run(inputs)


def _xy(shape, dtype=np.float16, seed=0):
    rng = np.random.default_rng(seed)
    return {"x": rng.random(shape).astype(dtype), "y": rng.random(shape).astype(dtype)}


# ---- with the sample packages ---------------------------------------------------------------------

def test_singleop_static_shape_as_the_sample_runs(opp, tmp_path):
    spec = write_json(tmp_path / "add_custom_static_shape.json", add_json([8, 2048]))
    r = run_atc([f"--singleop={spec}", f"--output={tmp_path / 'op_models'}", "--soc_version=Ascend910B1"],
                {"ASCEND_OPP_PATH": str(opp)}, console=True)
    assert r.returncode == 0, r.stderr
    assert "ATC run success" in r.stdout
    # CANN's name: index, op type, then per input and output dtype (float16 = 1), format (ND = 2), dims
    om = tmp_path / "op_models" / "0_AddCustomTemplate_1_2_8_2048_1_2_8_2048_1_2_8_2048.om"
    assert sorted(p.name for p in om.parent.iterdir()) == [om.name]
    inputs = _xy((8, 2048))
    np.testing.assert_array_equal(run_om(om, inputs)["z"], inputs["x"] + inputs["y"])
    md = parse_om(om.read_bytes()).model_def
    assert md["soc"] == "ascend910b" and md["soc_version"] == "Ascend910B1" and not md["dynamic"]
    node = md["nodes"][0]
    # what aclopSetModelDir readers need: op type and tensor descs (docs/om-format.md, "Single-op models")
    assert node["type"] == "AddCustomTemplate" and [i["shape"] for i in md["inputs"]] == [[8, 2048]] * 2
    assert node["kernelname"] == "customize:AddCustomTemplate_FP16"
    t = {"dtype": "float16", "format": "ND", "shape": [8, 2048]}
    assert signature(md) == {"op": "AddCustomTemplate", "inputs": [{"name": "x", **t}, {"name": "y", **t}],
                             "outputs": [{"name": "z", **t}], "attrs": {}}


def test_singleop_dynamic_shape_runs_any_shape(opp, tmp_path):
    spec = write_json(tmp_path / "dyn.json", add_json([-1, -1], ranges=True))
    r = run_atc([f"--singleop={spec}", f"--output={tmp_path}", "--soc_version=Ascend910B3"], {"ASCEND_OPP_PATH": str(opp)})
    assert r.returncode == 0, r.stderr
    om = tmp_path / "0_AddCustomTemplate_1_2_-1_-1_1_2_-1_-1_1_2_-1_-1.om"
    md = parse_om(om.read_bytes()).model_def
    assert md["dynamic"] and md["soc_version"] == "Ascend910B3" and md["soc"] == "ascend910b"
    for shape in ((2, 64), (3, 2048 + 17)):
        inputs = _xy(shape, seed=shape[1])
        np.testing.assert_array_equal(run_om(om, inputs)["z"], inputs["x"] + inputs["y"])


def test_singleop_several_entries_attrs_and_names(opp, tmp_path):
    entries = add_json([4, 64], dtype="float") + [
        {"op": "LeakyReluCustom", "name": "leaky_op",
         "input_desc": [{"format": "ND", "shape": [4, 64], "type": "float"}],
         "output_desc": [{"format": "ND", "shape": [4, 64], "type": "float"}],
         "attr": [{"name": "negative_slope", "type": "float", "value": 0.25}]},
        {"op": "AddNCustom",  # a dynamic input: its tensors x0, x1, x2
         "input_desc": [{"name": f"x{k}", "format": "ND", "shape": [4, 64], "type": "float"} for k in range(3)],
         "output_desc": [{"format": "ND", "shape": [4, 64], "type": "float"}]},
    ]
    spec = write_json(tmp_path / "ops.json", entries)
    r = run_atc([f"--singleop={spec}", f"--output={tmp_path / 'out'}", "--soc_version=Ascend910B1"],
                {"ASCEND_OPP_PATH": str(opp)})
    assert r.returncode == 0, r.stderr
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == ["0_AddCustomTemplate_0_2_4_64_0_2_4_64_0_2_4_64.om", "2_AddNCustom_0_2_4_64_0_2_4_64_0_2_4_64_0_2_4_64.om",
                     "leaky_op.om"]
    x = np.random.default_rng(3).random((4, 64), np.float32) - 0.5
    got = run_om(tmp_path / "out" / "leaky_op.om", {"x": x})["y"]
    np.testing.assert_allclose(got, np.where(x > 0, x, np.float32(0.25) * x), rtol=1e-6)
    xs = {f"x{k}": x + k for k in range(3)}
    got = run_om(tmp_path / "out" / names[1], xs)["y"]
    np.testing.assert_allclose(got, sum(xs.values()), rtol=1e-6)


def test_packages_from_ascend_custom_opp_path(opp, tmp_path):
    spec = write_json(tmp_path / "a.json", add_json([8, 64]))
    empty = tmp_path / "empty_opp"
    empty.mkdir()
    env = {"ASCEND_OPP_PATH": str(empty), "ASCEND_CUSTOM_OPP_PATH": str(opp / "vendors" / "customize")}
    r = run_atc([f"--singleop={spec}", f"--output={tmp_path / 'o'}", "--soc_version=Ascend910B1"], env)
    assert r.returncode == 0, r.stderr
    r = run_atc([f"--singleop={spec}", f"--output={tmp_path / 'o2'}", "--soc_version=Ascend910B1"],
                {"ASCEND_OPP_PATH": str(empty)})
    assert r.returncode == 1 and "AddCustomTemplate is in no package" in r.stderr
    assert not (tmp_path / "o2").exists()


def test_singleop_errors_name_file_and_line(opp, tmp_path):
    env = {"ASCEND_OPP_PATH": str(opp)}
    cases = [
        (add_json([8, 64], op="NoSuchOp"), "op NoSuchOp is in no package"),
        ([{**add_json([8, 64])[0], "output_desc": [{"format": "ND", "shape": [8, 64], "type": "float"}]}],
         "output_desc[0].type: float32, but AddCustomTemplate gives float16"),
        ([{**add_json([8, 64])[0], "attr": [{"name": "alpha", "type": "float", "value": 1}]}],
         "AddCustomTemplate has no attribute 'alpha'"),
        ([{**add_json([8, 64])[0], "input_desc": [dict(add_json([8, 64])[0]["input_desc"][0], format="NCHW"),
                                                  add_json([8, 64])[0]["input_desc"][1]]}],
         "input_desc[0].format: NCHW, but AddCustomTemplate's input x takes ND"),
        ([{**add_json([8, 64])[0], "input_desc": add_json([8, 64])[0]["input_desc"][:1]}],
         "AddCustomTemplate: input y is required and no tensor is given for it"),
        ([{**add_json([8, 64])[0], "output_desc": []}], "output_desc: 0 entries, AddCustomTemplate has 1 output(s)"),
    ]
    for k, (data, message) in enumerate(cases):
        good = add_json([2, 32])[0]
        spec = write_json(tmp_path / f"bad{k}.json", [good, *data])  # the bad entry is the second one
        out = tmp_path / f"out{k}"
        r = run_atc([f"--singleop={spec}", f"--output={out}", "--soc_version=Ascend910B1"], env)
        assert r.returncode == 1, r.stdout
        line = 1 + json.dumps([good, *data], indent=4).split("\n").index("    {", 2)
        assert f"{spec}:{line}: entry 1" in r.stderr and message in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
        assert not out.exists()  # nothing is written unless every entry built


def _onnx_model(tmp_path: Path) -> Path:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto as T
    from onnx import helper as h
    from onnx import numpy_helper as nh

    w = nh.from_array(np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 8), "w")
    nodes = [h.make_node("Mul", ["x", "w"], ["m"], name="mul0"),
             h.make_node("LeakyRelu", ["m"], ["a"], name="act0", alpha=0.2)]
    graph = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, ["N", 8])],
                         [h.make_tensor_value_info("a", T.FLOAT, ["N", 8])], [w])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    return path


def _onnx_reference(x: np.ndarray) -> np.ndarray:
    m = x * np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 8)
    return np.where(m > 0, m, np.float32(0.2) * m)


def test_onnx_model_and_the_info_modes(opp, tmp_path):
    from google.protobuf import json_format

    from opbuild.om import ge_ir, ge_tiling

    path = _onnx_model(tmp_path)
    env = {"ASCEND_OPP_PATH": str(opp)}
    args = [f"--model={path}", "--framework=5", f"--output={tmp_path / 'net'}", "--soc_version=Ascend910B1",
            "--input_shape=x:3,8"]
    r = run_atc(args, env)
    assert r.returncode == 0, r.stderr
    om = tmp_path / "net.om"
    x = np.random.default_rng(5).random((3, 8), np.float32) - 0.5
    np.testing.assert_allclose(run_om(om, {"x": x})["a"], _onnx_reference(x), rtol=1e-6)
    data = om.read_bytes()
    parsed = parse_om(data)
    # GE's layouts: TILING_DATA's header and records, bound to the nodes by OpDef.id; raw weights
    tiling = parsed.om.get(omf.TILING_DATA)
    by_id = ge_tiling.load(tiling.data).by_id
    nodes = parsed.model_def["nodes"]
    assert sorted(by_id) == sorted(ge_tiling.tiling_id(n["op_id"]) for n in nodes)
    assert all(n["tiling_ids"] == [ge_tiling.tiling_id(n["op_id"])] for n in nodes)
    assert bytes(tiling.data[:8]) == bytes.fromhex("fe6e77dd02000000")  # magic 0xDD776EFE, version 2
    w = parsed.model_def["weights"][0]
    weights = bytes(parsed.om.get(omf.WEIGHTS_DATA).data)
    assert weights[w["data_offset"]:w["data_offset"] + w["weight_size"]] == \
        np.linspace(-1, 1, 8, dtype=np.float32).tobytes()

    # --mode=1: the JSON parses with the ge.proto descriptor
    r = run_atc(["--mode=1", f"--om={om}", f"--json={tmp_path / 'net.json'}"])
    assert r.returncode == 0, r.stderr
    model = json_format.Parse((tmp_path / "net.json").read_text(), ge_ir.ModelDef())
    graph = model.graph[0]
    assert list(graph.input) == ["x:0"]
    net_output = [op for op in graph.op if op.type == "NetOutput"][0]
    assert len(net_output.input_desc) == len(net_output.input) == 1
    assert model.attr["soc_version"].s == b"Ascend910B1" and model.attr["framework_type"].s == b"5"
    assert {op.name: op.attr["_kernelname"].s.decode() for op in graph.op if "_kernelname" in op.attr} == \
        {n["name"]: n["kernelname"] for n in nodes}

    # --mode=6: the model info GE prints
    r = run_atc(["--mode=6", f"--om={om}"], console=True)
    assert r.returncode == 0, r.stderr
    sizes = {p.type: p.size for p in parsed.om.partitions}
    assert f"Original Atc command line: atc --model={path} --framework=5" in r.stdout
    assert "atc_version[opbuild-" in r.stdout and "soc_version[Ascend910B1], framework_type[5]." in r.stdout
    assert f"weight_size[{sizes[omf.WEIGHTS_DATA]} B], stream_num[1], event_num[0]" in r.stdout
    assert (f"om       info: modeldef_size[{sizes[omf.MODEL_DEF]} B], weight_data_size[{sizes[omf.WEIGHTS_DATA]} B], "
            f"tbe_kernels_size[{sizes[omf.TBE_KERNELS]} B], cust_aicpu_kernel_store_size[0 B], task_info_size[0 B], "
            f"so_store_size[0 B].") in r.stdout
    assert "memory_size[288 B]" in r.stdout  # x, m and a: 3 x 8 float32 (96 B) each


def test_mode6_of_a_file_without_the_attributes(tmp_path):
    old = Path(__file__).with_name("data") / "v2_static_mul_weight.om"
    r = run_atc(["--mode=6", f"--om={old}"])
    assert r.returncode == 0, r.stderr
    assert 'attr "om_info_list" is not found' in r.stdout and "memory_size[-1 B]" in r.stdout


# ---- no packages needed -----------------------------------------------------------------------------

def test_unsupported_flags_and_usage_errors(tmp_path):
    r = run_atc(["--precision_mode=force_fp16", "--singleop=x.json"])
    assert r.returncode == 2 and r.stderr.strip() == \
        "atc: error: --precision_mode is not supported by opbuild's atc (see atc --help)"
    for args, message in [
        (["--singleop=a.json", "--output=o"], "--singleop needs --soc_version"),
        (["--singleop=a.json", "--output=o", "--soc_version=Ascend999"], "unknown SoC; known: Ascend910B1"),
        (["--model=m.onnx", "--framework=3", "--output=o", "--soc_version=Ascend910B1"],
         "--framework=3 (TensorFlow): opbuild's atc converts ONNX models only"),
        (["--mode=3", "--om=x.om"], "--mode=3: opbuild's atc supports 0"),
        (["--mode=1", "--om=x.om"], "--mode=1 needs --json"),
        (["stray"], "unexpected argument 'stray'"),
        (["--output"], "--output needs a value"),
    ]:
        r = run_atc(args, cwd=tmp_path)
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)


def test_help_lists_the_options():
    r = run_atc(["--help"], console=True)
    assert r.returncode == 0
    for name in atc.OPTIONS:
        assert f"--{name}" in r.stdout
    assert "Ascend910B1" in r.stdout


@pytest.mark.parametrize("text, message", [
    ('[\n  {"op": "AddCustomTemplate",\n   "input_desc": [}\n]', ":3:19: not JSON"),
    ('{"op": "AddCustomTemplate"}', ":1: expected a JSON list"),
    ('[\n {"op": "X"},\n {"op": "Y", "input_desc": [{"format": "ND", "shape": [2], "type": "float17"}]}\n]',
     ":3: entry 1 (Y).input_desc[0].type: 'float17' is not a type"),
    ('[\n\n {"op": "Y", "input_desc": [{"format": "NZ", "shape": [2], "type": "float16"}]}]',
     ":3: entry 0 (Y).input_desc[0].format: 'NZ' is not one of"),
    ('[{"op": "Y", "input_desc": [{"format": "ND", "shape": [-2], "type": "float16"}]}]', "-2, unknown rank"),
    ('[{"op": "Y", "input_desc": [{"shape": [2], "type": "float16"}]}]', "input_desc[0]: missing format"),
    ('[{"input_desc": []}]', 'entry 0: expected an object with "op"'),
    ('[{"op": "Y", "precision": 1}]', "unknown field(s) ['precision']"),
])
def test_bad_json_names_file_and_line(tmp_path, text, message):
    (tmp_path / "opp").mkdir()
    spec = tmp_path / "op.json"
    spec.write_text(text)
    r = run_atc([f"--singleop={spec}", f"--output={tmp_path / 'o'}", "--soc_version=Ascend910B1"],
                {"ASCEND_OPP_PATH": str(tmp_path / "opp")})
    assert r.returncode == 1 and f"atc: error: {spec}" in r.stderr and message in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_soc_names_map_to_opbuild_socs():
    assert atc.soc_of("Ascend910B1") == (SOC["ascend910b"], "Ascend910B1")
    assert atc.soc_of("Ascend910B4")[0] is SOC["ascend910b"]
    assert atc.soc_of("ascend910b") == (SOC["ascend910b"], "Ascend910B1")
    assert atc.soc_of("Ascend910_9391")[0] is SOC["ascend910_93"]
    assert atc.soc_of("Ascend310P3")[0] is SOC["ascend310p"]
    for bad in ("Ascend910A", "Ascend310B1", "Ascend910B-1", ""):
        with pytest.raises(atc.AtcUsageError, match="unknown SoC"):
            atc.soc_of(bad)


def test_file_name_rule_is_canns_example():
    # CANN's documented example: Add, three int32 (3) ND (2) [3, 3] tensors
    t = singleop_json.TensorDesc("int32", "ND", [3, 3], None)
    assert singleop_json.file_name(0, "Add", [t, t], [t]) == "0_Add_3_2_3_3_3_2_3_3_3_2_3_3"


def test_option_forms():
    assert atc.parse_args(["--mode", "6", "--om=a.om", "-json=b"]) == {"mode": "6", "om": "a.om", "json": "b"}
    assert atc.parse_args(["--mode=1", "--mode=6"]) == {"mode": "6"}


# ---- opt-in: the samples' own single-op files ---------------------------------------------------------

SAMPLES = os.environ.get("OPBUILD_ASCENDC_SAMPLES")


@pytest.mark.skipif(not SAMPLES, reason="OPBUILD_ASCENDC_SAMPLES (a checkout of the samples' operator/ascendc) not set")
@pytest.mark.parametrize("kind", ["static", "dynamic"])
def test_the_samples_add_custom_json(opp, tmp_path, kind):
    """AclOfflineModel's scripts/add_custom_<kind>_shape.json, unchanged but for the op type (the
    sample's AddCustom is the in-house AddCustomTemplate here), as its run.sh passes it to atc."""
    src = Path(SAMPLES) / "0_introduction/1_add_frameworklaunch/AclOfflineModel/scripts" / f"add_custom_{kind}_shape.json"
    text = src.read_text().replace('"AddCustom"', '"AddCustomTemplate"')
    spec = tmp_path / src.name
    spec.write_text(text)
    r = run_atc([f"--singleop={spec}", "--output=op_models/", "--soc_version=Ascend910B1"],
                {"ASCEND_OPP_PATH": str(opp)}, console=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    (om,) = (tmp_path / "op_models").iterdir()
    dims = "8_2048" if kind == "static" else "-1_-1"
    assert om.name == "_".join(["0_AddCustomTemplate"] + [f"1_2_{dims}"] * 3) + ".om"
    inputs = _xy((8, 2048))
    np.testing.assert_array_equal(run_om(om, inputs)["z"], inputs["x"] + inputs["y"])


def test_info_modes_on_bad_files(tmp_path):
    r = run_atc(["--mode=6", f"--om={tmp_path / 'missing.om'}"])
    assert r.returncode == 1 and "cannot read" in r.stderr and "Traceback" not in r.stderr
    junk = tmp_path / "junk.om"
    junk.write_bytes(b"\0" * 300)
    r = run_atc(["--mode=1", f"--om={junk}", f"--json={tmp_path / 'j.json'}"])
    assert r.returncode == 1 and "magic" in r.stderr and not (tmp_path / "j.json").exists()
