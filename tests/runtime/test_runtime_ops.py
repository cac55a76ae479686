"""Every kernel binary of every sample op, in every package holding it (MulCustom is in both the
custom and the built-in package), end to end through the generated Python wrappers, compared
with numpy: two-phase (the binary the key selects is checked) and one-shot."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from typing import Any, Callable

import ml_dtypes
import numpy as np
import pkgbuild
import pytest
from rtutil import run_two_phase

import opbuild.runtime as rt
from opbuild.runtime.binaries.package import binary_index

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, I32 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.int32)


@dataclass
class Case:
    binary: str
    op: str            # op type
    snake: str
    inputs: Callable[[np.random.Generator], list[Any]]
    reference: Callable[..., np.ndarray]
    attrs: tuple = ()            # two-phase positional attribute values
    kwargs: dict = field(default_factory=dict)  # one-shot attribute keywords
    deterministic: bool | None = None
    rtol: float = 0.0
    atol: float = 0.0


def _rand(shape, dtype):
    def make(rng):
        if np.dtype(dtype) == I32:
            return rng.integers(-1000, 1000, size=shape, dtype=np.int32)
        return rng.standard_normal(shape).astype(np.float32).astype(dtype)
    return make


def _pair(shape_x, shape_y, dx, dy):
    return lambda rng: [_rand(shape_x, dx)(rng), _rand(shape_y, dy)(rng)]


def _leaky(x, slope, dtype):
    xf = x.astype(np.float32)
    return np.where(xf >= 0, xf, np.float32(slope) * xf).astype(dtype)


def _relu(x, dtype):
    return np.maximum(x.astype(np.float32), np.float32(0)).astype(dtype)


def _addn(xs, dtype):
    if dtype == I32:
        out = xs[0].copy()
        for x in xs[1:]:
            out = out + x  # int32 wraps like the kernel
        return out
    acc = xs[0].astype(np.float32)
    for x in xs[1:]:
        acc = acc + x.astype(np.float32)
    return acc.astype(dtype)


def _sum(x, axes, keep, dtype):
    return x.astype(np.float64).sum(axis=tuple(axes) if axes else None, keepdims=keep).astype(dtype)


CASES = [
    Case("AddCustomTemplate_FP16", "AddCustomTemplate", "add_custom_template", _pair((8, 1000), (8, 1000), F16, F16),
         lambda x, y: (x.astype(np.float32) + y.astype(np.float32)).astype(F16)),
    Case("AddCustomTemplate_FP32", "AddCustomTemplate", "add_custom_template", _pair((3, 5, 77), (3, 5, 77), F32, F32),
         lambda x, y: x + y),
    Case("MulCustom_FP16", "MulCustom", "mul_custom", _pair((4, 1, 33), (5, 33), F16, F16),
         lambda x, y: (x.astype(np.float32) * y.astype(np.float32)).astype(F16)),
    Case("MulCustom_FP32", "MulCustom", "mul_custom", _pair((6, 70), (70,), F32, F32), lambda x, y: x * y),
    Case("MulCustom_FP16_FP32", "MulCustom", "mul_custom", _pair((2, 3, 1), (1, 40), F16, F32),
         lambda x, y: x.astype(np.float32) * y),
    Case("MulCustom_INT32", "MulCustom", "mul_custom", _pair((9, 11), (9, 11), I32, I32), lambda x, y: x * y),
    Case("LeakyReluCustom_FP16", "LeakyReluCustom", "leaky_relu_custom", lambda rng: [_rand((1000,), F16)(rng)],
         lambda x: _leaky(x, 0.2, F16), attrs=(0.2,), kwargs={"negative_slope": 0.2}, rtol=1e-3, atol=1e-4),
    Case("LeakyReluCustom_FP32", "LeakyReluCustom", "leaky_relu_custom", lambda rng: [_rand((33, 31), F32)(rng)],
         lambda x: _leaky(x, 0.01, F32), attrs=(0.01,), kwargs={}),
    Case("LeakyReluCustom_BF16", "LeakyReluCustom", "leaky_relu_custom", lambda rng: [_rand((4097,), BF16)(rng)],
         lambda x: _leaky(x, 0.3, BF16), attrs=(0.3,), kwargs={"negative_slope": 0.3}, rtol=1e-2, atol=1e-3),
    Case("LeakyReluCustom_Relu_FP16", "LeakyReluCustom", "leaky_relu_custom", lambda rng: [_rand((513,), F16)(rng)],
         lambda x: _relu(x, F16), attrs=(0.0,), kwargs={"negative_slope": 0.0}, rtol=1e-3),
    Case("LeakyReluCustom_Relu_FP32", "LeakyReluCustom", "leaky_relu_custom", lambda rng: [_rand((2, 3, 4), F32)(rng)],
         lambda x: _relu(x, F32), attrs=(0.0,), kwargs={"negative_slope": 0.0}),
    Case("LeakyReluCustom_Relu_BF16", "LeakyReluCustom", "leaky_relu_custom", lambda rng: [_rand((100,), BF16)(rng)],
         lambda x: _relu(x, BF16), attrs=(0.0,), kwargs={"negative_slope": 0.0}, rtol=1e-2),
    Case("AddNCustom_FP16", "AddNCustom", "add_n_custom",
         lambda rng: [[_rand((3, 700), F16)(rng) for _ in range(3)]], lambda xs: _addn(xs, F16), rtol=1e-3, atol=1e-3),
    Case("AddNCustom_FP32", "AddNCustom", "add_n_custom",
         lambda rng: [[_rand((5000,), F32)(rng) for _ in range(5)]], lambda xs: _addn(xs, F32), rtol=1e-6, atol=1e-6),
    Case("AddNCustom_INT32", "AddNCustom", "add_n_custom",
         lambda rng: [[_rand((17, 3), I32)(rng) for _ in range(2)]], lambda xs: _addn(xs, I32)),
    Case("ReduceSumCustom_FP32", "ReduceSumCustom", "reduce_sum_custom", lambda rng: [_rand((6, 50, 7), F32)(rng)],
         lambda x: _sum(x, [0, 2], True, F32), attrs=((0, 2), True), kwargs={"axes": [0, 2], "keep_dims": True},
         deterministic=False, rtol=1e-5, atol=1e-5),
    Case("ReduceSumCustom_FP32_Det", "ReduceSumCustom", "reduce_sum_custom", lambda rng: [_rand((300, 40), F32)(rng)],
         lambda x: _sum(x, [], False, F32), attrs=((), False), kwargs={}, deterministic=True, rtol=1e-5, atol=1e-4),
    Case("ReduceSumCustom_FP16", "ReduceSumCustom", "reduce_sum_custom", lambda rng: [_rand((64, 33), F16)(rng)],
         lambda x: _sum(x, [1], False, F16), attrs=((1,), False), kwargs={"axes": [1]}, deterministic=False,
         rtol=2e-3, atol=2e-3),
    Case("ReduceSumCustom_FP16_Det", "ReduceSumCustom", "reduce_sum_custom", lambda rng: [_rand((10, 9, 8), F16)(rng)],
         lambda x: _sum(x, [-1, 0], False, F16), attrs=((-1, 0), False), kwargs={"axes": [-1, 0]}, deterministic=True,
         rtol=2e-3, atol=2e-3),
]


def _check(got: np.ndarray, want: np.ndarray, case: Case) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype
    if case.rtol == 0 and case.atol == 0:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=case.rtol, atol=case.atol)


PACKAGED_CASES = [pytest.param(kind, case, id=case.binary if kind == pkgbuild.package_of(case.op)
                               else f"{case.binary}@{kind}")
                  for case in CASES for kind in pkgbuild.SAMPLE_OP_PACKAGES[case.op]]
"""Every case in every package holding its op (the id names the package when it is not the
op's preferred one)."""


@pytest.mark.parametrize("kind", [pkgbuild.CUSTOM, pkgbuild.BUILTIN])
def test_cases_cover_every_binary_of_the_sample_ops(package_for, kind):
    ops_here = set(pkgbuild.ops_in(kind))
    index = binary_index(package_for(next(iter(ops_here)), kind), "ascend910b")
    assert set(index.keys_by_op) == ops_here  # each package has its ops, and only those
    assert {e.name for e in index.by_key.values()} == {c.binary for c in CASES if c.op in ops_here}


@pytest.mark.parametrize("kind, case", PACKAGED_CASES)
def test_binary_two_phase(ops_for, package_for, kind, case: Case):
    ops = ops_for(case.op, kind)
    rng = np.random.default_rng(sum(map(ord, case.binary)))
    inputs = case.inputs(rng)
    want = case.reference(*inputs)
    out = np.full(want.shape, 7, want.dtype)
    d = {} if case.deterministic is None else {"deterministic": case.deterministic}
    ex = run_two_phase(ops, case.op, *inputs, *case.attrs, out, **d)
    assert ex.binary_name == case.binary
    assert ex.simplified_key.startswith(f"{case.op}/d=")
    # the binary ran from the package the module belongs to: a built-in op's from its ops_<domain>
    root = package_for(case.op, kind)
    sub = f"ops_{pkgbuild.SAMPLE_OP_DOMAINS[case.op]}/" if kind == pkgbuild.BUILTIN else ""
    assert ex.plan.selection.package.resolve() == root.resolve()
    bin_path = root / f"op_impl/ai_core/tbe/kernel/ascend910b/{sub}{case.snake}/{case.binary}.so"
    assert ex.plan.selection.entry.bin_path.resolve() == bin_path.resolve()
    _check(out, want, case)


@pytest.mark.parametrize("kind, case", PACKAGED_CASES)
def test_binary_one_shot(ops_for, kind, case: Case):
    ops = ops_for(case.op, kind)
    rng = np.random.default_rng(1 + sum(map(ord, case.binary)))
    inputs = case.inputs(rng)
    d = {} if case.deterministic is None else {"deterministic": case.deterministic}
    got = getattr(ops, case.snake)(*inputs, **case.kwargs, **d)
    _check(got, case.reference(*inputs), case)
    again = getattr(ops, case.snake)(*inputs, **case.kwargs, **d)  # a cache hit gives the same
    _check(again, case.reference(*inputs), case)


def test_add_fp16_is_bit_exact_with_numpy(ops):
    """The kernel rounds the float sum once: numpy's float16 add, bit for bit (incl. inf, -0)."""
    bits = np.arange(0, 1 << 16, dtype=np.uint16).view(np.float16)
    finite = bits[np.isfinite(bits)]
    rng = np.random.default_rng(5)
    x = rng.permutation(finite)
    y = rng.permutation(finite)
    with np.errstate(over="ignore"):
        want = x + y
    got = ops.add_custom_template(x, y)
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


def test_add_fp32_large_streaming_path_is_exact(ops):
    """Above the kernel's streaming threshold (4M elements), misaligned block starts included."""
    n = (4 << 20) + 37
    rng = np.random.default_rng(3)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    z = np.empty(n + 1, np.float32)[1:]  # 4-byte aligned, not 16: the kernel peels to alignment
    run_two_phase(ops, "AddCustomTemplate", x, y, z)
    np.testing.assert_array_equal(z, x + y)


# ---- ReduceSum d=1: bit-identical across runs and thread counts -------------------------------

_DET_SCRIPT = textwrap.dedent("""
    import sys, numpy as np, opbuild.runtime as rt
    from opbuild.runtime import device
    ops = rt.import_ops(sys.argv[1])
    x = (np.arange(257 * 311, dtype=np.float32).reshape(257, 311) * np.float32(0.37)) % np.float32(7.3) - np.float32(3.1)
    outs = [ops.reduce_sum_custom(x, axes=axes, deterministic=True) for axes in ([], [0], [1])]
    print(device.threads(), b"".join(o.tobytes() for o in outs).hex())
""")


def _det_input() -> np.ndarray:
    return (np.arange(257 * 311, dtype=np.float32).reshape(257, 311) * np.float32(0.37)) % np.float32(7.3) - np.float32(3.1)


def _det_bytes(ops) -> str:
    x = _det_input()
    outs = [ops.reduce_sum_custom(x, axes=axes, deterministic=True) for axes in ([], [0], [1])]
    return b"".join(o.tobytes() for o in outs).hex()


def test_reduce_sum_deterministic_is_bit_identical_across_runs_and_threads(builtin_ops, builtin_package, sim_threads):
    ops = builtin_ops
    results = set()
    for n in (1, 2, 3, 8):
        sim_threads(n)
        for _ in range(3):
            rt.clear_op_cache()
            results.add(_det_bytes(ops))
    assert len(results) == 1
    x = _det_input()
    np.testing.assert_allclose(ops.reduce_sum_custom(x, deterministic=True), x.astype(np.float64).sum(), rtol=1e-5)
    # Fresh processes, thread pools sized by OPBUILD_SIM_THREADS.
    env = dict(os.environ)
    for n in ("1", "5"):
        env["OPBUILD_SIM_THREADS"] = n
        out = subprocess.run([sys.executable, "-c", _DET_SCRIPT, str(builtin_package)], env=env, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        threads, digest = out.stdout.split()
        assert threads == n
        results.add(digest)
    assert len(results) == 1


def test_reduce_sum_nondeterministic_binary_is_close(builtin_ops):
    ops = builtin_ops
    x = np.random.default_rng(0).standard_normal((4096, 64), dtype=np.float32)
    got = ops.reduce_sum_custom(x, axes=[0], deterministic=False)
    np.testing.assert_allclose(got, x.astype(np.float64).sum(axis=0), rtol=1e-4, atol=1e-3)
