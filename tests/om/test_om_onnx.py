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
