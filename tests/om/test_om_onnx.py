"""`opbuild om build model.onnx`: ONNX graphs (made here with onnx.helper) mapped through the sample
packages' plugins, packed into .om files, run without the packages and compared with onnxruntime
(standard ops) or numpy (the custom domain); every error a user can make."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper as nh  # noqa: E402

from opbuild.om.build import build_om  # noqa: E402
from opbuild.om.errors import OmError  # noqa: E402
from opbuild.om.loader import load_om, parse_om  # noqa: E402
from opbuild.om.onnx_model import onnx_model, parse_input_shapes  # noqa: E402
from opbuild.om.run import OmRunner  # noqa: E402

CUSTOM_DOMAIN = "com.example.custom"


def _tensor(name: str, shape, elem=T.FLOAT):
    return h.make_tensor_value_info(name, elem, shape)


def save(tmp_path: Path, nodes, inputs, outputs, initializers=(), opset=13, custom=True, name="m.onnx") -> Path:
    imports = [h.make_opsetid("", opset)] + ([h.make_opsetid(CUSTOM_DOMAIN, 1)] if custom else [])
    model = h.make_model(h.make_graph(nodes, "g", inputs, outputs, list(initializers)), opset_imports=imports)
    model.ir_version = min(model.ir_version, 8)  # what onnxruntime reads
    path = tmp_path / name
    onnx.save(model, str(path))
    return path


def standard_model(tmp_path: Path, opset: int, batch="N", keepdims: int | None = 0) -> Path:
    """x*w (w an initializer) -> LeakyRelu(0.2) -> ReduceSum over axis 1 (an attribute before
    opset 13, a constant input from 13); and Sum(x, y, x)."""
    w = nh.from_array(np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 8), "w")
    inits = [w]
    reduce_kw = {} if keepdims is None else {"keepdims": keepdims}
    if opset < 13:
        reduce = h.make_node("ReduceSum", ["a"], ["r"], name="sum0", axes=[1], **reduce_kw)
    else:
        inits.append(nh.from_array(np.array([1], np.int64), "axes"))
        reduce = h.make_node("ReduceSum", ["a", "axes"], ["r"], name="sum0", **reduce_kw)
    nodes = [h.make_node("Mul", ["x", "w"], ["m"], name="mul0"),
             h.make_node("LeakyRelu", ["m"], ["a"], name="act0", alpha=0.2),
             reduce,
             h.make_node("Sum", ["x", "y", "x"], ["s"], name="addn0")]
    r_shape = [batch, 1] if keepdims in (None, 1) else [batch]
    return save(tmp_path, nodes, [_tensor("x", [batch, 8]), _tensor("y", [batch, 8])],
                [_tensor("r", r_shape), _tensor("s", [batch, 8])], inits, opset=opset, custom=False,
                name=f"std{opset}.onnx")


def convert(path: Path, opp: Path, shapes: str | None = None) -> bytes:
    return build_om(onnx_model(path, opp, parse_input_shapes(shapes)), opp)


def run(om: bytes, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return OmRunner(load_om(om, trust=True)).run(inputs)


def reference(path: Path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, inputs)))


def _inputs(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x": (rng.random((n, 8), np.float32) - 0.5), "y": rng.random((n, 8), np.float32)}


@pytest.mark.parametrize("opset, keepdims", [(11, 0), (13, None), (17, 1)])
def test_standard_ops_match_onnxruntime(opp, tmp_path, opset, keepdims):
    path = standard_model(tmp_path, opset, keepdims=keepdims)
    om = convert(path, opp, "x:3,8;y:3,8")
    inputs = _inputs(3)
    got, want = run(om, inputs), reference(path, inputs)
    assert set(got) == {"r", "s"}
    for name in want:
        assert got[name].shape == want[name].shape and got[name].dtype == want[name].dtype
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6)
    md = parse_om(om).model_def
    assert not md["dynamic"] and [w["name"] for w in md["weights"]] == ["w"]  # the axes went into the attr
    ops = {n["name"]: n["op"] for n in md["nodes"]}
    # MulCustom is in both packages: the custom package's plugin (and op) win, as in op selection
    assert ops == {"mul0": "vendors/customize:MulCustom", "act0": "built-in:LeakyReluCustom",
                   "sum0": "built-in:ReduceSumCustom", "addn0": "vendors/customize:AddNCustom"}


def test_dynamic_batch_runs_any_batch(opp, tmp_path):
    path = standard_model(tmp_path, 13)
    om = convert(path, opp)  # no --input-shape: the batch stays dynamic
    assert parse_om(om).model_def["dynamic"]
    for n in (1, 6):
        inputs = _inputs(n, seed=n)
        got, want = run(om, inputs), reference(path, inputs)
        for name in want:
            np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6)


def custom_model(tmp_path: Path) -> Path:
    """A custom-domain AddCustomTemplate node, then a standard Mul mapped to MulCustom (a Constant
    node's value as its second input)."""
    k = h.make_tensor("k", T.FLOAT, [1, 4], [0.5, -1.0, 2.0, 3.0])
    nodes = [h.make_node("AddCustomTemplate", ["x", "y"], ["s"], domain=CUSTOM_DOMAIN, name="add0"),
             h.make_node("Constant", [], ["k"], value=k),
             h.make_node("Mul", ["s", "k"], ["/blk/z:0"], name="mul0")]  # a name as exporters write them
    return save(tmp_path, nodes, [_tensor("x", ["batch", 4]), _tensor("y", ["batch", 4])],
                [_tensor("/blk/z:0", ["batch", 4])], name="custom.onnx")


def test_custom_domain_through_the_cli_without_packages(opp, tmp_path):
    work = tmp_path / "w"
    shutil.copytree(opp, work / "opp", symlinks=True)
    path = custom_model(work)
    rng = np.random.default_rng(3)
    x, y = rng.random((5, 4), np.float32), rng.random((5, 4), np.float32)
    np.save(work / "x.npy", x)
    np.save(work / "y.npy", y)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND")}
    cli = [sys.executable, "-m", "opbuild", "om"]
    r = subprocess.run(cli + ["build", path.name, "--opp", "opp", "-o", "model.om", "--input-shape", "x:5,4;y:5,4"],
                       cwd=work, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    shutil.rmtree(work / "opp")
    env["ASCEND_OPP_PATH"] = str(work / "nothing-installed")
    r = subprocess.run(cli + ["run", "model.om", "-i", "x=x.npy", "-i", "y=y.npy", "--output-dir", "out", "--trust"],
                       cwd=work, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (work / "out").iterdir()) == ["_blk_z_0.npy"]  # inside --output-dir
    np.testing.assert_allclose(np.load(work / "out" / "_blk_z_0.npy"), (x + y) * np.array([0.5, -1, 2, 3], np.float32),
                               rtol=1e-6)
    md = parse_om((work / "model.om").read_bytes()).model_def
    assert [n["op"] for n in md["nodes"]] == ["vendors/customize:AddCustomTemplate", "vendors/customize:MulCustom"]
    assert [w["name"] for w in md["weights"]] == ["k"]


# ~~~ errors ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~

def _one(tmp_path, node, in_types=(T.FLOAT, T.FLOAT), opset=13, inits=(), custom=True, inputs=("x", "y")):
    ins = [_tensor(n, [2, 4], t) for n, t in zip(inputs, in_types)]
    return save(tmp_path, [node], ins, [_tensor(node.output[0], [2, 4], in_types[0])], inits, opset=opset,
                custom=custom)


def _error(path: Path, opp: Path, shapes: str | None = None) -> str:
    with pytest.raises(OmError) as exc:
        convert(path, opp, shapes)
    return str(exc.value)


SEARCHED = "packages searched: vendors/customize"


def test_node_no_plugin_maps(opp, tmp_path):
    text = _error(_one(tmp_path, h.make_node("Relu", ["x"], ["z"], name="relu0"), in_types=(T.FLOAT,),
                       inputs=("x",)), opp)
    assert "node relu0 (ai.onnx::Relu, opset 13): no plugin maps ai.onnx::Relu" in text
    assert SEARCHED in text and "built-in (" in text


def test_opset_outside_every_plugin_range(opp, tmp_path):
    text = _error(_one(tmp_path, h.make_node("Mul", ["x", "y"], ["z"], name="mul0"), opset=6), opp)
    assert "node mul0 (ai.onnx::Mul, opset 6): opset 6 is outside the range" in text
    assert "MulCustom of vendors/customize for opsets [7, ∞)" in text and "MulCustom of built-in" in text
    assert SEARCHED in text


def test_unsupported_dtypes(opp, tmp_path):
    text = _error(_one(tmp_path, h.make_node("Mul", ["x", "y"], ["z"], name="mul0"), in_types=(T.DOUBLE, T.DOUBLE)),
                  opp)
    assert "node mul0 (ai.onnx::Mul, opset 13 -> MulCustom of vendors/customize; packages searched: " \
           "vendors/customize, built-in)" in text
    assert "no declared dtype combination has x=float64, y=float64" in text
    text = _error(_one(tmp_path, h.make_node("Mul", ["x", "y"], ["z"]), in_types=(T.COMPLEX64, T.COMPLEX64)), opp)
    assert "input 'x': ONNX dtype COMPLEX64 is not supported" in text


def test_attribute_no_plugin_maps(opp, tmp_path):
    node = h.make_node("AddCustomTemplate", ["x", "y"], ["z"], domain=CUSTOM_DOMAIN, name="add0", scale=2.0)
    text = _error(_one(tmp_path, node), opp)
    assert "node add0 (com.example.custom::AddCustomTemplate, opset 1 -> AddCustomTemplate of vendors/customize" in text
    assert "ONNX attribute 'scale' maps to no attr of AddCustomTemplate" in text and SEARCHED in text


def test_attr_input_must_be_constant(opp, tmp_path):
    path = save(tmp_path, [h.make_node("ReduceSum", ["x", "axes"], ["z"], name="sum0")],
                [_tensor("x", [2, 4]), _tensor("axes", [1], T.INT64)], [_tensor("z", [2, 1])], custom=False)
    assert "input 1 ('axes') gives attr 'axes' and must be a constant" in _error(path, opp)


@pytest.mark.parametrize("shapes, message", [
    ("q:1,2", "--input-shape names q, not an input of the model"),
    ("x:3,4,5", "does not fit the model's shape [2, 4]"),
    ("x:2;x:2", "names input 'x' twice"),
    ("x=2,4", "expected NAME:D1,D2"),
])
def test_input_shape_errors(opp, tmp_path, shapes, message):
    path = _one(tmp_path, h.make_node("Mul", ["x", "y"], ["z"], name="mul0"))
    assert message in _error(path, opp, shapes)


def test_unreadable_models(opp, tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage" * 10)
    assert "is not a valid ONNX model" in _error(bad, opp) or "fails the ONNX checker" in _error(bad, opp)
    node = h.make_node("AddCustomTemplate", ["x", "y"], ["z"], domain=CUSTOM_DOMAIN, name="add0")
    text = _error(_one(tmp_path, node, custom=False), opp)  # no opset import of the custom domain
    assert "com.example.custom" in text


def test_a_bad_plugin_file_names_the_package(tmp_path):
    opp = tmp_path / "opp"
    plugins = opp / "vendors" / "acme" / "framework" / "onnx" / "opbuild_onnx_plugins.json"
    plugins.parent.mkdir(parents=True)
    (opp / "vendors" / "config.ini").write_text("load_priority=acme\n")
    plugins.write_text(json.dumps({"format_version": 1, "ops": {"X": {"onnx": [{"op_type": 3}]}}}))
    path = _one(tmp_path, h.make_node("Mul", ["x", "y"], ["z"], name="mul0"))
    text = _error(path, opp)
    assert "vendors/acme: bad ONNX plugin file:" in text and str(plugins) in text


def test_output_file_names_stay_in_the_output_dir():
    from opbuild.om.cli import output_file_stem

    assert output_file_stem("z") == "z" and output_file_stem("a.b-c_1") == "a.b-c_1"
    assert output_file_stem("../../etc/x") == "_.._etc_x" and output_file_stem("..") == "_"
    assert output_file_stem("/blk/Add_output_0") == "_blk_Add_output_0"


def test_input_shape_syntax():
    assert parse_input_shapes("x:1,3;y:2;scalar:") == {"x": (1, 3), "y": (2,), "scalar": ()}
    assert parse_input_shapes("a:b:4") == {"a:b": (4,)}
    assert parse_input_shapes(None) == {}


def test_the_example_model(opp, tmp_path):
    """examples/models/sample_ops.onnx is what examples/onnx_model.py makes, and converts and runs."""
    examples = Path(__file__).resolve().parents[2] / "examples"
    sys.path.insert(0, str(examples))
    try:
        import onnx_model as example
    finally:
        sys.path.remove(str(examples))
    assert (examples / "models" / "sample_ops.onnx").read_bytes() == example.make_model().SerializeToString()
    om = convert(examples / "models" / "sample_ops.onnx", opp, "x:3,8;y:3,8")
    inputs = _inputs(3, seed=9)
    np.testing.assert_allclose(run(om, inputs)["z"], example.reference(inputs["x"], inputs["y"]), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shapes", ["x:2,5", None])
def test_non_zero_maps_to_the_ai_cpu_op(opp, tmp_path, shapes):
    """ONNX NonZero -> NonZeroCustom (an AI CPU node, data-dependent output) after an AI Core Mul,
    static and dynamic: the .om's result equals onnxruntime's."""
    w = nh.from_array(np.array([[1, 0, 2, 0, 3]], np.float32), "w")
    nodes = [h.make_node("Mul", ["x", "w"], ["m"], name="mul0"), h.make_node("NonZero", ["m"], ["nz"], name="nz0")]
    path = save(tmp_path, nodes, [_tensor("x", ["N", 5])], [_tensor("nz", [2, "K"], T.INT64)], [w], custom=False,
                name="nonzero.onnx")
    om = convert(path, opp, shapes)
    assert {n["name"]: n["op"] for n in parse_om(om).model_def["nodes"]}["nz0"] == "vendors/customize:NonZeroCustom"
    x = {"x": np.array([[1, 1, 0, 1, 1], [0, 2, 2, 2, 0]], np.float32)}
    got, want = run(om, x), reference(path, x)
    assert got["nz"].dtype == np.int64
    np.testing.assert_array_equal(got["nz"], want["nz"])


# ~~~ what a converter should take (issue 26) ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~

def _reduce_model(tmp_path: Path, extra_nodes=(), axes_input="axes", inits=(), graph_inputs=(), **attrs) -> Path:
    nodes = list(extra_nodes) + [h.make_node("ReduceSum", ["x", axes_input], ["z"], name="sum0", **attrs)]
    rank = 3 if attrs.get("keepdims", 1) else 2
    z = h.make_tensor_value_info("z", T.FLOAT, [f"d{k}" for k in range(rank)])
    return save(tmp_path, nodes, [_tensor("x", [2, 3, 4])] + list(graph_inputs), [z], list(inits),
                opset=18, custom=False, name="reduce.onnx")


def _x234() -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(4).random((2, 3, 4), np.float32)}


def test_an_onnx_attribute_at_its_default_needs_no_attr(opp, tmp_path):
    """noop_with_empty_axes=0 spelled out (ONNX's default) is accepted though ReduceSumCustom has no such attr."""
    path = _reduce_model(tmp_path, inits=[nh.from_array(np.array([-1], np.int64), "axes")], noop_with_empty_axes=0,
                         keepdims=0)
    inputs = _x234()
    np.testing.assert_allclose(run(convert(path, opp), inputs)["z"], reference(path, inputs)["z"], rtol=1e-6)


def test_an_onnx_attribute_off_its_default_is_an_error_naming_it(opp, tmp_path):
    path = _reduce_model(tmp_path, inits=[nh.from_array(np.array([1], np.int64), "axes")], noop_with_empty_axes=1)
    assert ("node sum0 (ai.onnx::ReduceSum, opset 18 -> ReduceSumCustom of built-in; packages searched: "
            "vendors/customize, built-in): ONNX attribute 'noop_with_empty_axes' = 1 (ONNX's default 0 would be "
            "accepted) maps to no attr of ReduceSumCustom") in _error(path, opp)


def test_a_constant_chain_giving_an_attr_is_folded(opp, tmp_path):
    """axes = Unsqueeze(Cast(Constant int32 1 -> int64), [0]): nodes no plugin maps, all inputs constant,
    evaluated at conversion; the folded values become the attr, no weight is left over."""
    nodes = [h.make_node("Constant", [], ["one"], value=nh.from_array(np.array(1, np.int32))),
             h.make_node("Cast", ["one"], ["one64"], to=T.INT64),
             h.make_node("Unsqueeze", ["one64", "zero"], ["axes"])]
    path = _reduce_model(tmp_path, nodes, inits=[nh.from_array(np.array([0], np.int64), "zero")], keepdims=1)
    om = convert(path, opp)
    inputs = _x234()
    np.testing.assert_allclose(run(om, inputs)["z"], reference(path, inputs)["z"], rtol=1e-6)
    md = parse_om(om).model_def
    assert md["weights"] == [] and [n["attrs"]["axes"] for n in md["nodes"]] == [[1]]


def test_folding_refuses_a_blown_up_constant(opp, tmp_path):
    """ConstantOfShape([1 << 25]) would be 32 Mi elements: refused before it is evaluated."""
    nodes = [h.make_node("ConstantOfShape", ["shape"], ["big"], name="cos0",
                         value=nh.from_array(np.array([1], np.int64))),
             h.make_node("Mul", ["x", "big"], ["z"], name="mul0")]
    path = save(tmp_path, nodes, [_tensor("x", [1 << 25])], [_tensor("z", [1 << 25])],
                [nh.from_array(np.array([1 << 25], np.int64), "shape")], opset=18, custom=False)
    assert ("node cos0 (ai.onnx::ConstantOfShape, opset 18, all inputs constant): folding it would make 'big' of "
            "33554432 elements (more than 16777216); no plugin maps ConstantOfShape") in _error(path, opp)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND")}
    return subprocess.run([sys.executable, "-m", "opbuild", "om", *args], cwd=cwd, env=env, capture_output=True,
                          text=True)


def test_freeze_input_makes_a_graph_input_a_constant(opp, tmp_path):
    """ReduceSum's axes as a graph input (as ONNX's node tests give it): refused with a hint, then built
    with --freeze-input axes=axes.npy; the frozen input is no input of the .om any more."""
    path = _reduce_model(tmp_path, graph_inputs=[_tensor("axes", [1], T.INT64)], keepdims=0)
    np.save(tmp_path / "axes.npy", np.array([2], np.int64))
    r = _cli("build", path.name, "--opp", str(opp), "-o", "m.om", cwd=tmp_path)
    assert r.returncode == 1 and r.stderr.strip().endswith(
        "it is a graph input: fix its value with --freeze-input axes=FILE.npy"), r.stderr
    assert not (tmp_path / "m.om").exists()
    r = _cli("build", path.name, "--opp", str(opp), "-o", "m.om", "--freeze-input", "axes=axes.npy", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    md = parse_om((tmp_path / "m.om").read_bytes()).model_def
    assert [i["name"] for i in md["inputs"]] == ["x"]
    inputs = _x234()
    want = reference(path, {**inputs, "axes": np.array([2], np.int64)})["z"]
    np.testing.assert_allclose(run((tmp_path / "m.om").read_bytes(), inputs)["z"], want, rtol=1e-6)


@pytest.mark.parametrize("value, message", [
    (np.array([2], np.int32), "--freeze-input axes: the value is int32, the model declares int64"),
    (np.array([[2]], np.int64), "--freeze-input axes: the value's shape [1, 1] does not fit the model's [1]"),
])
def test_freeze_input_value_checked_against_the_declaration(opp, tmp_path, value, message):
    path = _reduce_model(tmp_path, graph_inputs=[_tensor("axes", [1], T.INT64)])
    np.save(tmp_path / "axes.npy", value)
    r = _cli("build", path.name, "--opp", str(opp), "-o", "m.om", "--freeze-input", "axes=axes.npy", cwd=tmp_path)
    assert r.returncode == 1 and r.stderr == f"opbuild om build: error: {message}\n"


def test_freeze_input_names_no_input(opp, tmp_path):
    path = _reduce_model(tmp_path, graph_inputs=[_tensor("axes", [1], T.INT64)])
    np.save(tmp_path / "q.npy", np.array([2], np.int64))
    r = _cli("build", path.name, "--opp", str(opp), "-o", "m.om", "--freeze-input", "q=q.npy", cwd=tmp_path)
    assert r.returncode == 1 and r.stderr == ("opbuild om build: error: --freeze-input q: not an input of the "
                                              "model (inputs: x, axes)\n")


def _bf16_model(tmp_path: Path) -> Path:
    return save(tmp_path, [h.make_node("LeakyRelu", ["x"], ["y"], name="act0", alpha=0.25)],
                [_tensor("x", [3, 4], T.BFLOAT16)], [_tensor("y", [3, 4], T.BFLOAT16)], opset=16, custom=False,
                name="bf16.onnx")


def test_om_run_reads_a_bfloat16_npy(opp, tmp_path):
    """numpy.save writes ml_dtypes' bfloat16 as raw 2-byte values (|V2): om run gives them the
    model's dtype back."""
    import ml_dtypes

    path = _bf16_model(tmp_path)
    assert _cli("build", path.name, "--opp", str(opp), "-o", "m.om", cwd=tmp_path).returncode == 0
    x = (np.arange(12, dtype=np.float32).reshape(3, 4) - 6).astype(ml_dtypes.bfloat16)
    np.save(tmp_path / "x.npy", x)
    assert np.load(tmp_path / "x.npy").dtype.str == "|V2"
    r = _cli("run", "m.om", "-i", "x=x.npy", "--output-dir", "out", "--trust", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    got = np.load(tmp_path / "out" / "y.npy").view(ml_dtypes.bfloat16)
    want = np.where(x.astype(np.float32) < 0, x.astype(np.float32) * 0.25, x.astype(np.float32))
    np.testing.assert_array_equal(got.astype(np.float32), want)


@pytest.mark.parametrize("value, stored", [
    (np.zeros(3, dtype=[("a", np.int32)]), "[('a', '<i4')]"),
    (np.zeros(3, np.complex64), "complex64"),
    (np.zeros(3, "V3"), "raw 3-byte values (|V3)"),
])
def test_om_run_refuses_an_npy_of_no_op_dtype_in_one_line(opp, tmp_path, value, stored):
    path = _bf16_model(tmp_path)
    assert _cli("build", path.name, "--opp", str(opp), "-o", "m.om", cwd=tmp_path).returncode == 0
    np.save(tmp_path / "x.npy", value)
    r = _cli("run", "m.om", "-i", "x=x.npy", "--output-dir", "out", "--trust", cwd=tmp_path)
    assert r.returncode == 1 and r.stderr == (f"opbuild om run: error: --input x: x.npy holds {stored}, no dtype an "
                                              f"op takes; the model wants bfloat16\n"), r.stderr
    assert not (tmp_path / "out").exists()


def test_single_op_and_build_find_packages_by_ascend_opp_path(opp, tmp_path):
    """Without --opp, `om single-op` and `om build` take the OPP tree of ASCEND_OPP_PATH (as atc and
    the runtime do), not out/opp of the working directory."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("ASCEND")}, "ASCEND_OPP_PATH": str(opp)}
    r = subprocess.run([sys.executable, "-m", "opbuild", "om", "single-op", "AddCustomTemplate", "-i",
                        "x=float16[8,64]", "-i", "y=float16[8,64]", "-o", "a.om"], cwd=tmp_path, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert parse_om((tmp_path / "a.om").read_bytes()).model_def["nodes"][0]["op"] == "vendors/customize:AddCustomTemplate"
    path = _bf16_model(tmp_path)
    r = subprocess.run([sys.executable, "-m", "opbuild", "om", "build", path.name, "-o", "b.om"], cwd=tmp_path,
                       env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    env["ASCEND_OPP_PATH"] = str(tmp_path / "none")
    r = subprocess.run([sys.executable, "-m", "opbuild", "om", "single-op", "AddCustomTemplate", "-i",
                        "x=float16[8,64]", "-i", "y=float16[8,64]", "-o", "c.om"], cwd=tmp_path, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 1 and "op AddCustomTemplate is in no package" in r.stderr and not (tmp_path / "c.om").exists()


@pytest.mark.parametrize("shapes", ["x:2,4;y:4;z:1", None])
def test_sum_with_broadcasting_matches_onnxruntime(opp, tmp_path, shapes):
    """ONNX Sum broadcasts its inputs (multidirectional): AddNCustom does too, static and dynamic."""
    path = save(tmp_path, [h.make_node("Sum", ["x", "y", "z"], ["s"], name="sum0")],
                [_tensor("x", ["N", 4]), _tensor("y", [4]), _tensor("z", [1])], [_tensor("s", ["N", 4])],
                opset=13, custom=False, name="sumb.onnx")
    om = convert(path, opp, shapes)
    rng = np.random.default_rng(2)
    inputs = {"x": rng.random((2, 4), np.float32), "y": rng.random(4, np.float32), "z": rng.random(1, np.float32)}
    got, want = run(om, inputs), reference(path, inputs)
    assert got["s"].shape == (2, 4)
    np.testing.assert_allclose(got["s"], want["s"], rtol=1e-6)
