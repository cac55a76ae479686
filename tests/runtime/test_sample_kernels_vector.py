"""The vectorized paths of the MulCustom and LeakyReluCustom fp32 kernels (issue 24): bit for bit
the scalar rule, on special values, on lengths around the vector loops' multiple of 16, over
several blocks, and for each broadcast run (contiguous, x or y a scalar along the run)."""

from __future__ import annotations

import numpy as np
import pytest

F32 = np.float32


def _specials() -> np.ndarray:
    tiny = np.finfo(F32).smallest_subnormal
    return np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, -np.nan, tiny, -tiny,
                     np.finfo(F32).max, -np.finfo(F32).max, np.finfo(F32).tiny, -np.finfo(F32).tiny], F32)


def _leaky(x: np.ndarray, slope: float) -> np.ndarray:
    """The kernel's scalar rule: x if x >= 0 else slope * x (NaN: slope * NaN; -0 stays -0)."""
    return np.where(x >= 0, x, x * F32(slope)).astype(F32)


def _bits_equal(got: np.ndarray, want: np.ndarray) -> None:
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))


@pytest.mark.parametrize("n", [1, 15, 16, 17, 33, 4096 * 3 + 5])
@pytest.mark.parametrize("slope", [0.2, -1.5, 0.0])
def test_leaky_fp32_bit_exact(builtin_ops, n, slope):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(F32)
    s = _specials()
    x[rng.integers(0, n, size=min(n, s.size))] = s[: min(n, s.size)]
    got = builtin_ops.leaky_relu_custom(x, negative_slope=slope)
    if slope == 0.0:  # the ReLU binary: negatives become +0, NaN and -0 pass
        want = np.where(x < 0, F32(0.0), x).astype(F32)
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            want = _leaky(x, slope)
    _bits_equal(got, want)


@pytest.mark.parametrize(("xs", "ys"), [((37, 70), (37, 70)),      # one flat run
                                        ((9, 1000), (1000,)),      # row broadcast: runs of 1000
                                        ((300, 1), (300, 17)),     # x a scalar along each run
                                        ((300, 17), (300, 1)),     # y a scalar along each run
                                        ((5000, 3), (1, 3))])      # several blocks
def test_mul_fp32_runs_bit_exact(ops, xs, ys):
    rng = np.random.default_rng(len(xs) + xs[0])
    x = rng.standard_normal(xs).astype(F32)
    y = rng.standard_normal(ys).astype(F32)
    x.reshape(-1)[:14] = _specials()
    got = ops.mul_custom(x, y)
    with np.errstate(over="ignore", invalid="ignore"):
        want = x * y
    _bits_equal(got, want)


def test_mul_int32_wraps(ops):
    x = np.arange(-40, 40, dtype=np.int32) * np.int32(65536 + 7)
    y = np.full(80, 123457, np.int32)
    with np.errstate(over="ignore"):
        want = x * y
    np.testing.assert_array_equal(ops.mul_custom(x, y), want)
