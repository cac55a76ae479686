"""`.om` runner speed against onnxruntime (issue 24; not a test).

The model: 10 x (Mul by an initializer weight, LeakyRelu(alpha=0.1)), 20 nodes, float32 (the
sample ops have fp32 binaries: MulCustom_FP32, LeakyReluCustom_FP32). Each weight has the input's
last dim (shape [C], broadcast over the rows, like a per-channel scale). The ONNX model is made
with onnx.helper (no network), converted to a static .om by opbuild's own ONNX path
(`onnx_model` + `build_om`, what `atc --framework=5` and `opbuild om build x.onnx` run), checked
against onnxruntime (rtol 1e-5, atol 1e-6) and timed against `InferenceSession.run`, the two
interleaved in the same loop; each time is the best of --repeat.

"runner overhead per node" = ours at [1,16] / 20 nodes: an upper bound, since it includes the
16-element kernels themselves and the simulator's launch of each (both well under a microsecond).

    scons ops -j2
    python bench/om_runner_bench.py [--opp out/opp] [--repeat 30] [--shapes 1x16,256x1024,4096x1024]

Goals (issue 24): runner overhead per node <= 1.5 us; ours / onnxruntime <= 3x.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

LAYERS = 10
ALPHA = 0.1
NODES = 2 * LAYERS


def make_onnx(shape: tuple[int, ...], seed: int = 0):
    """The ONNX model of the chain for a static input shape (opset 13)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    nodes, weights = [], []
    prev = "x"
    for i in range(LAYERS):
        w = (rng.uniform(0.5, 1.5, shape[-1]) * rng.choice([-1.0, 1.0], shape[-1])).astype(np.float32)
        weights.append(numpy_helper.from_array(w, f"w{i}"))
        nodes.append(helper.make_node("Mul", [prev, f"w{i}"], [f"m{i}"], name=f"mul{i}"))
        out = "y" if i == LAYERS - 1 else f"a{i}"
        nodes.append(helper.make_node("LeakyRelu", [f"m{i}"], [out], name=f"act{i}", alpha=ALPHA))
        prev = out
    graph = helper.make_graph(nodes, "mul_leaky_chain",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))], weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="om_runner_bench")


def best_interleaved(fns: list, repeat: int) -> list[float]:
    """Best time of each function, run in turn `repeat` times (the same load on each)."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best


def bench_shape(shape: tuple[int, ...], opp: Path, repeat: int, tmp: Path) -> tuple[float, float]:
    import onnx
    import onnxruntime as ort

    from opbuild.om.build import build_om
    from opbuild.om.loader import load_om
    from opbuild.om.onnx_model import onnx_model
    from opbuild.om.run import OmRunner

    path = tmp / f"chain_{'x'.join(map(str, shape))}.onnx"
    proto = make_onnx(shape)
    onnx.save(proto, str(path))
    om = build_om(onnx_model(path, opp, {"x": shape}), opp)
    model = load_om(om, trust=True)
    if model.model_def["dynamic"]:
        raise SystemExit(f"{shape}: the .om came out dynamic; the bench wants a static model")
    runner = OmRunner(model)
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    ours = runner.run({"x": x})["y"]
    ref = sess.run(["y"], {"x": x})[0]
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6, err_msg=f"{shape}: .om output differs from onnxruntime")
    feed = {"x": x}
    t_ours, t_ort = best_interleaved([lambda: runner.run(feed), lambda: sess.run(["y"], feed)], repeat)
    return t_ours, t_ort


def _fmt(t: float) -> str:
    return f"{t * 1e6:9.1f} us" if t < 1e-3 else f"{t * 1e3:9.2f} ms"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--opp", default="out/opp", help="the OPP tree of the sample ops (scons ops)")
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--shapes", default="1x16,256x1024,4096x1024")
    args = ap.parse_args()
    opp = Path(args.opp)
    if not (opp / "vendors").is_dir() and not (opp / "built-in").is_dir():
        print(f"om_runner_bench: no OPP tree at {opp}: run `scons ops -j2` first (or pass --opp)", file=sys.stderr)
        return 2
    shapes = [tuple(int(d) for d in s.split("x")) for s in args.shapes.split(",")]
    print(f"10 x (Mul by a [C] weight, LeakyRelu) = {NODES} nodes, float32, static .om vs onnxruntime "
          f"(best of {args.repeat}, interleaved; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f})")
    print(f"{'shape':>12} {'ours':>12} {'onnxruntime':>12} {'ratio':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        for shape in shapes:
            t_ours, t_ort = bench_shape(shape, opp, args.repeat, Path(tmp))
            print(f"{str(list(shape)):>12} {_fmt(t_ours):>12} {_fmt(t_ort):>12} {t_ours / t_ort:6.1f}x")
            if shape == (1, 16):
                print(f"{'':>12} runner overhead per node (ours / {NODES}, kernels included): "
                      f"{t_ours / NODES * 1e6:.2f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
