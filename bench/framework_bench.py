"""Framework adapters (issue 15), not a test: ONNX -> .om conversion time of a generated
1,000-node model, and the host overhead of a torch.ops call against torch.add.

    scons ops && python bench/framework_bench.py [--opp out/opp] [--nodes 1000]

* conversion: a chain of `nodes` ONNX nodes (Mul by a [1, 16] initializer -> MulCustom,
  LeakyRelu -> LeakyReluCustom, alternating) on a float32 [N, 16] input. `map` = parse + map
  through the plugins (onnx_model), `build` = build_om (inference, and for the static model
  key selection and tiling of every node); static (--input-shape x:4,16) and dynamic (N left -1).
* torch: torch.ops.customize.add_custom_template on two 1-element float32 tensors vs torch.add
  on the same tensors, best of several rounds, in the same process: with its C++ CPU kernel
  (torch_kernel.cpp; the time of register_torch() includes building it when not cached) and,
  as the baseline, the same op registered with the Python kernel only; the numpy one-shot
  wrapper and a no-op Python-kernel op for reference. Goal: <= 2x torch.add.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np


def chain_model(nodes: int):
    from onnx import TensorProto, helper, numpy_helper

    graph_nodes, weights, t = [], [], "x"
    for i in range(nodes):
        out = f"t{i}"
        if i % 2 == 0:
            w = f"w{i}"
            weights.append(numpy_helper.from_array(np.full((1, 16), 1.0 + 1e-3 * i, np.float32), w))
            graph_nodes.append(helper.make_node("Mul", [t, w], [out], name=f"mul{i}"))
        else:
            graph_nodes.append(helper.make_node("LeakyRelu", [t], [out], name=f"act{i}", alpha=0.5))
        t = out
    graph = helper.make_graph(graph_nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16])],
                              [helper.make_tensor_value_info(t, TensorProto.FLOAT, ["N", 16])], weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def bench_conversion(opp: str, nodes: int) -> None:
    import onnx

    from opbuild.om.build import build_om
    from opbuild.om.onnx_model import onnx_model

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "chain.onnx"
        onnx.save(chain_model(nodes), str(path))
        for label, shapes in (("static", {"x": (4, 16)}), ("dynamic", None)):
            t0 = time.perf_counter()
            model = onnx_model(path, opp, shapes)
            t1 = time.perf_counter()
            data = build_om(model, opp)
            t2 = time.perf_counter()
            print(f"ONNX -> .om, {nodes} nodes, {label:7}: map {1e3 * (t1 - t0):7.1f} ms, build {1e3 * (t2 - t1):7.1f} ms, "
                  f"total {t2 - t0:6.2f} s ({1e6 * (t2 - t0) / nodes:6.0f} us/node), .om {len(data) / 1e6:.1f} MB")


def _per_call(fn, calls: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


def bench_torch(opp: str, calls: int, rounds: int) -> None:
    import torch

    import opbuild.runtime as rt
    from opbuild.runtime import torch_build
    from opbuild.runtime.torch_ops import register

    ops = rt.import_ops(f"{opp}/vendors/customize")
    t0 = time.perf_counter()
    ops.register_torch()  # the C++ kernel: built on first use (cached after), loaded
    t_register = time.perf_counter() - t0
    register(ops._OPS, "customize_py", cpp=False)  # the same ops with the Python kernel only
    op, op_py = torch.ops.customize.add_custom_template, torch.ops.customize_py.add_custom_template
    a, b = torch.ones(1), torch.full((1,), 2.0)
    na, nb = a.numpy(), b.numpy()
    assert torch.equal(op(a, b), torch.add(a, b)) and torch.equal(op_py(a, b), torch.add(a, b))
    for _ in range(1000):  # warm every path (runtime caches, dispatcher)
        op(a, b)
        op_py(a, b)
        torch.add(a, b)
    hits0 = torch_build.stats()[0]
    t_add = _per_call(lambda: torch.add(a, b), calls, rounds)
    t_op = _per_call(lambda: op(a, b), calls, rounds)
    served = torch_build.stats()[0] - hits0
    t_py = _per_call(lambda: op_py(a, b), calls, rounds)
    t_np = _per_call(lambda: ops.add_custom_template(na, nb), calls, rounds)
    # the floor: PyTorch's dispatch to a Python kernel that does nothing
    lib = torch.library.Library("opbuild_bench", "FRAGMENT")
    lib.define("noop(Tensor x, Tensor y) -> Tensor")
    lib.impl("noop", lambda x, y: x, "CPU")
    t_noop = _per_call(lambda: torch.ops.opbuild_bench.noop(a, b), calls, rounds)
    kernel = "C++" if torch_build.stats() != (0, 0) else "Python: the C++ kernel is not built, see the warning"
    print(f"register_torch() (C++ kernel {'built/loaded' if kernel == 'C++' else 'unavailable'})  "
          f"{1e3 * t_register:8.1f} ms")
    print(f"torch.add (1 element)                      {1e6 * t_add:6.2f} us/call")
    print(f"torch.ops.customize.add_custom_template    {1e6 * t_op:6.2f} us/call  ({t_op / t_add:.1f}x torch.add; "
          f"{kernel} kernel, {served} of {calls * rounds} calls its hit path)")
    print(f"  same op, Python kernel (the baseline)    {1e6 * t_py:6.2f} us/call  ({t_py / t_add:.1f}x torch.add)")
    print(f"  of which the runtime's numpy one-shot    {1e6 * t_np:6.2f} us/call")
    print(f"a no-op torch.library op (dispatch floor)   {1e6 * t_noop:6.2f} us/call  ({t_noop / t_add:.1f}x torch.add)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--opp", default="out/opp")
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    bench_conversion(args.opp, args.nodes)
    bench_torch(args.opp, args.calls, args.rounds)


if __name__ == "__main__":
    main()
