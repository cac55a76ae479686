"""An ONNX model of the sample ops, built with onnx.helper, compiled to an .om through the packages'
adapter plugins, run without the packages and checked against numpy.

    scons ops
    python examples/onnx_model.py                      # writes examples/models/sample_ops.onnx, then checks it
    opbuild om build examples/models/sample_ops.onnx --opp out/opp -o sample_ops.om --input-shape "x:2,8;y:2,8"
    opbuild om run sample_ops.om --trust -i x=x.npy -i y=y.npy --output-dir out/

The graph: z = ReduceSum(LeakyRelu((x + y) * scale, alpha=0.2), axes=[1], keepdims=1)
* `AddCustomTemplate` of the custom domain `com.example.custom` -> AddCustomTemplate (its plugin);
* standard `Mul` (opset 13) -> MulCustom: the custom package's plugin wins over the built-in one;
* `LeakyRelu` -> LeakyReluCustom (alpha renamed to negative_slope);
* `ReduceSum` (opset 13: axes are a constant input) -> ReduceSumCustom (axes become the attr).
`scale` is an initializer (a weight of the .om); the batch dim is symbolic (`N`): fixed with
--input-shape, or left dynamic (the .om then carries every binary and the tiling library).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

MODEL = Path(__file__).resolve().parent / "models" / "sample_ops.onnx"
SCALE = np.linspace(-2.0, 2.0, 8, dtype=np.float32).reshape(1, 8)


def make_model():
    """The ONNX model (opset 13 of ai.onnx, version 1 of com.example.custom)."""
    from onnx import TensorProto, helper, numpy_helper

    nodes = [
        helper.make_node("AddCustomTemplate", ["x", "y"], ["s"], domain="com.example.custom", name="add0"),
        helper.make_node("Mul", ["s", "scale"], ["m"], name="mul0"),
        helper.make_node("LeakyRelu", ["m"], ["a"], name="act0", alpha=0.2),
        helper.make_node("ReduceSum", ["a", "axes"], ["z"], name="sum0", keepdims=1),
    ]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", 8]) for n in ("x", "y")]
    outputs = [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["N", 1])]
    weights = [numpy_helper.from_array(SCALE, "scale"), numpy_helper.from_array(np.array([1], np.int64), "axes")]
    graph = helper.make_graph(nodes, "sample_ops", inputs, outputs, weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                   helper.make_opsetid("com.example.custom", 1)],
                             producer_name="opbuild-examples")


def reference(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    m = (x + y) * SCALE
    return np.where(m > 0, m, np.float32(0.2) * m).sum(axis=1, keepdims=True)


def main(opp: str) -> int:
    import onnx

    from opbuild.om.build import build_om
    from opbuild.om.loader import load_om
    from opbuild.om.onnx_model import onnx_model
    from opbuild.om.run import OmRunner

    MODEL.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(make_model(), str(MODEL))
    rng = np.random.default_rng(0)
    ok = True
    for shapes in ({"x": (2, 8), "y": (2, 8)}, None):  # static, then dynamic batch
        om = build_om(onnx_model(MODEL, opp, shapes), opp)
        runner = OmRunner(load_om(om, trust=True))
        for n in ((2,) if shapes else (1, 5)):
            x, y = rng.standard_normal((n, 8)).astype(np.float32), rng.standard_normal((n, 8)).astype(np.float32)
            z = runner.run({"x": x, "y": y})["z"]
            good = np.allclose(z, reference(x, y), rtol=1e-5, atol=1e-5)
            ok &= good
            print(f"{'ok  ' if good else 'FAIL'} {'static' if shapes else 'dynamic'} batch {n}: z {list(z.shape)} "
                  f"({len(om)} bytes of .om)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "out/opp"))
