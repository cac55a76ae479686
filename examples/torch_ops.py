"""The sample ops as PyTorch operators, eager and under torch.compile.

    pip install 'opbuild[torch]'      # torch==2.13.0
    scons ops && python examples/torch_ops.py [out/opp]

`register_torch()` of a package's generated module defines its ops as
torch.ops.<vendor>.<op_snake>: torch.ops.customize.* for the custom package, torch.ops.built_in.*
for the built-in one. CPU tensors go to the runtime without a copy, outputs come back as torch
tensors; fake kernels from the specs' shape and dtype rules let torch.compile(fullgraph=True)
trace the whole function.
"""

from __future__ import annotations

import sys

import torch

import opbuild.runtime as rt


def model(x: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    custom, builtin = torch.ops.customize, torch.ops.built_in
    s = custom.add_custom_template(x, y)                           # same shapes
    m = custom.mul_custom(s, w)                                    # broadcasting like torch.mul
    a = builtin.leaky_relu_custom(m, negative_slope=0.2)
    return builtin.reduce_sum_custom(a, [1], True) + 1.0           # torch ops mix in freely


def reference(x: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.leaky_relu((x + y) * w, 0.2).sum(1, keepdim=True) + 1.0


def main(opp: str) -> int:
    rt.import_ops(f"{opp}/vendors/customize").register_torch()
    rt.import_ops(f"{opp}/built-in").register_torch()
    x, y, w = torch.randn(4, 64), torch.randn(4, 64), torch.randn(1, 64)
    ok = True
    explained = torch._dynamo.explain(model)(x, y, w)
    print(f"graphs: {explained.graph_count}, graph breaks: {explained.graph_break_count}")
    ok &= explained.graph_break_count == 0
    compiled = torch.compile(model, fullgraph=True)
    for name, fn in (("eager", model), ("torch.compile", compiled)):
        good = torch.allclose(fn(x, y, w), reference(x, y, w), rtol=1e-5, atol=1e-5)
        ok &= good
        print(f"{'ok  ' if good else 'FAIL'} {name}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "out/opp"))
