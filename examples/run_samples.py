"""Run every sample op of a built package through its generated Python aclnn wrappers.

    scons ops && python examples/run_samples.py [out/opp]

Each op runs through the one-shot wrapper and the two-phase API, and is compared with numpy.
Exits non-zero if any result is wrong.
"""

from __future__ import annotations

import sys

import ml_dtypes
import numpy as np

import opbuild.runtime as rt


def check(name: str, got: np.ndarray, want: np.ndarray, rtol: float = 0.0, atol: float = 0.0) -> bool:
    ok = got.shape == want.shape and np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol)
    print(f"{'ok  ' if ok else 'FAIL'} {name}: shape {list(got.shape)} {got.dtype}")
    return ok


def main(opp: str) -> int:
    # AddCustomTemplate, AddNCustom and MulCustom are custom ops (vendors/customize);
    # ReduceSumCustom (math) and LeakyReluCustom (nn) are built-in ops; MulCustom is both;
    # NonZeroCustom and SortCustom are custom AI CPU ops (libcust_aicpu_kernels.so).
    ops = rt.import_ops(f"{opp}/vendors/customize")
    builtin = rt.import_ops(f"{opp}/built-in")
    rng = np.random.default_rng(0)
    ok = True

    # AddCustomTemplate, two phases: the seeds' table 1.
    for dtype in (np.float16, np.float32):
        x = rng.standard_normal((8, 1024)).astype(dtype)
        y = rng.standard_normal((8, 1024)).astype(dtype)
        z = np.empty_like(x)
        size, executor = ops.aclnnAddCustomTemplateGetWorkspaceSize(x, y, z)
        workspace = rt.malloc(size) if size else None
        ops.aclnnAddCustomTemplate(workspace, size, executor, None)
        print(f"     AddCustomTemplate {np.dtype(dtype).name}: key {executor.simplified_key} -> {executor.binary_name}")
        ok &= check(f"AddCustomTemplate {np.dtype(dtype).name}", z, x + y)

    # MulCustom: default-mode keys, broadcasting, a mixed fp16 x fp32 binary.
    a = rng.standard_normal((4, 1, 33)).astype(np.float16)
    b = rng.standard_normal((5, 33)).astype(np.float32)
    ok &= check("MulCustom fp16 x fp32 broadcast", ops.mul_custom(a, b), a.astype(np.float32) * b, rtol=1e-6)
    ok &= check("MulCustom int32", ops.mul_custom(np.arange(12, dtype=np.int32).reshape(3, 4), np.int32(3) * np.ones(4, np.int32)),
                np.arange(12, dtype=np.int32).reshape(3, 4) * 3)

    # LeakyReluCustom: python GenSimplifiedKey; slope 0 selects the ReLU binary; bf16.
    x = rng.standard_normal(1000).astype(ml_dtypes.bfloat16)
    want = np.where(x.astype(np.float32) >= 0, x.astype(np.float32), 0.2 * x.astype(np.float32))
    ok &= check("LeakyReluCustom bf16 slope 0.2", builtin.leaky_relu_custom(x, negative_slope=0.2), want, rtol=1e-2, atol=1e-2)
    xf = rng.standard_normal(1000).astype(np.float32)
    ok &= check("LeakyReluCustom fp32 slope 0 (ReLU)", builtin.leaky_relu_custom(xf, negative_slope=0.0), np.maximum(xf, 0))

    # AddNCustom: a tensor list; C GenSimplifiedKey.
    xs = [rng.standard_normal((3, 7)).astype(np.float32) for _ in range(4)]
    ok &= check("AddNCustom fp32 x4", ops.add_n_custom(xs), sum(xs), rtol=1e-6, atol=1e-6)

    # ReduceSumCustom: workspace partial sums; deterministic and not.
    x = rng.standard_normal((6, 50, 7)).astype(np.float32)
    for det in (False, True):
        got = builtin.reduce_sum_custom(x, axes=[0, 2], keep_dims=True, deterministic=det)
        ok &= check(f"ReduceSumCustom axes [0,2] keep_dims d={int(det)}", got, x.sum(axis=(0, 2), keepdims=True), rtol=1e-5, atol=1e-5)

    # AI CPU ops (engine: aicpu): NonZeroCustom has a data-dependent output shape.
    x = rng.integers(-2, 3, (5, 7)).astype(np.float32)
    ok &= check("NonZeroCustom fp32 (one shot: real shape)", ops.non_zero_custom(x), np.array(np.nonzero(x)))
    out = rt.Tensor(np.empty((x.ndim, x.size), np.int64))  # allocated at the bound [rank, size]
    size, executor = ops.aclnnNonZeroCustomGetWorkspaceSize(x, out)
    ops.aclnnNonZeroCustom(None, size, executor, None)
    print(f"     NonZeroCustom two phases: bound [{x.ndim}, {x.size}], real shape {list(executor.view_shape(0))}")
    ok &= check("NonZeroCustom int32 (two phases: the out Tensor's view shape)", out.array,
                np.array(np.nonzero(x.astype(np.int32))))
    v = rng.standard_normal((3, 100)).astype(np.float16)
    values, indices = ops.sort_custom(v, descending=True)
    order = np.argsort(-v.astype(np.float32), axis=-1, kind="stable")
    ok &= check("SortCustom fp16 descending: values", values, np.take_along_axis(v, order, -1))
    ok &= check("SortCustom fp16 descending: indices", indices, order)

    print("all sample ops correct" if ok else "SOME RESULTS WRONG")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "out/opp"))
