"""Odd shapes and layouts: one element, prime sizes, empty tensors (nothing launched),
non-contiguous and misaligned inputs and outputs."""

from __future__ import annotations

import numpy as np
import pytest
from rtutil import run_two_phase

from opbuild.runtime.call import launch


@pytest.fixture
def launches():
    """Counts kernel launches on every path (launch.observe_launches: the C fast path hands its
    launches to the Python path while an observer is registered)."""
    count = {"n": 0}

    def counting(plan):
        count["n"] += 1

    unregister = launch.observe_launches(counting)
    yield count
    unregister()


@pytest.mark.parametrize("shape", [(), (1,), (1, 1, 1), (1009,), (7, 1009), (4099,), (2, 3, 5, 7, 11)])
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_add_odd_shapes(ops, shape, dtype, launches):
    rng = np.random.default_rng(len(shape))
    x = rng.standard_normal(shape).astype(dtype)
    y = rng.standard_normal(shape).astype(dtype)
    z = np.empty_like(x)
    run_two_phase(ops, "AddCustomTemplate", x, y, z)
    np.testing.assert_array_equal(z, x + y)
    assert launches["n"] == 1


def test_other_ops_on_odd_shapes(ops, builtin_ops):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1009,), dtype=np.float32)
    np.testing.assert_array_equal(ops.mul_custom(x, x[:1]), x * x[0])
    np.testing.assert_array_equal(ops.mul_custom(x.reshape(1009, 1), x[:3]), x.reshape(1009, 1) * x[:3])
    np.testing.assert_array_equal(builtin_ops.mul_custom(x, x[:1]), x * x[0])
    np.testing.assert_array_equal(builtin_ops.leaky_relu_custom(x[:1], negative_slope=0.5),
                                  np.where(x[:1] >= 0, x[:1], 0.5 * x[:1]))
    np.testing.assert_array_equal(ops.add_n_custom([x]), x)
    np.testing.assert_allclose(builtin_ops.reduce_sum_custom(x.reshape(1, 1009), axes=[1]), [x.astype(np.float64).sum()],
                               rtol=1e-5)
    np.testing.assert_array_equal(builtin_ops.reduce_sum_custom(np.full((), 3.5, np.float32)), np.float32(3.5))


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 5), (2, 0, 4)])
def test_empty_tensors_have_no_workspace_and_launch_nothing(ops, builtin_ops, shape, launches):
    x = np.ones(shape, np.float32)
    z = np.empty_like(x)
    size, ex = ops.aclnnAddCustomTemplateGetWorkspaceSize(x, x, z)
    assert size == 0 and ex.plan.empty and ex.binary_name == "AddCustomTemplate_FP32"
    ops.aclnnAddCustomTemplate(None, size, ex)
    assert ops.add_custom_template(x, x).shape == shape
    assert ops.mul_custom(x, np.ones(shape[-1:], np.float32)).shape == shape
    assert builtin_ops.mul_custom(x, np.ones(shape[-1:], np.float32)).shape == shape
    assert builtin_ops.leaky_relu_custom(x.astype(np.float16)).shape == shape
    assert ops.add_n_custom([x, x, x]).shape == shape
    assert launches["n"] == 0


@pytest.mark.parametrize("shape, axes", [((3, 0), [1]), ((0,), []), ((0, 4), [0]), ((2, 0, 3), [1])])
@pytest.mark.parametrize("deterministic", [False, True])
def test_sum_over_an_empty_axis_is_zero(builtin_ops, shape, axes, deterministic):
    """An empty input with a non-empty output still runs the kernel (numpy: zeros)."""
    ops = builtin_ops
    x = np.ones(shape, np.float32)
    y = np.full(np.sum(x, axis=tuple(axes) if axes else None).shape, np.nan, np.float32)
    run_two_phase(ops, "ReduceSumCustom", x, axes, False, y, deterministic=deterministic)
    np.testing.assert_array_equal(y, np.zeros_like(y))


def test_non_contiguous_inputs(ops, builtin_ops):
    rng = np.random.default_rng(1)
    base = rng.standard_normal((64, 130), dtype=np.float32)
    for x, y in [(base[:, ::2], base[:, 1::2]),       # strided
                 (base.T, base.T[::-1]),               # transposed, negative strides
                 (base[3:40, 7:99], base[10:47, 1:93]),  # offset views
                 (np.broadcast_to(base[0], (5, 130)), base[:5])]:  # stride 0
        z = np.empty(x.shape, np.float32)
        size, ex = ops.aclnnAddCustomTemplateGetWorkspaceSize(x, y, z)
        assert ex.args is None  # phase 2 prepares contiguous copies
        ops.aclnnAddCustomTemplate(None, size, ex)
        np.testing.assert_array_equal(z, x + y)
        np.testing.assert_array_equal(ops.add_custom_template(x, y), x + y)
    x16 = base.astype(np.float16)
    np.testing.assert_allclose(builtin_ops.reduce_sum_custom(x16.T, axes=[1], deterministic=True),
                               x16.T.astype(np.float64).sum(axis=1), rtol=2e-3, atol=2e-2)
    xs = [base[:, :129:3], base[:, 1:129:3], base[:, 2:129:3]]
    np.testing.assert_allclose(ops.add_n_custom(xs), xs[0] + xs[1] + xs[2], rtol=1e-6)


def test_non_contiguous_output(ops):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((16, 50), dtype=np.float32)
    parent = np.full((16, 100), -7.0, np.float32)
    z = parent[:, ::2]
    run_two_phase(ops, "AddCustomTemplate", x, x, z)
    np.testing.assert_array_equal(z, x + x)
    np.testing.assert_array_equal(parent[:, 1::2], -7.0)  # the gaps are untouched
    zt = np.empty((50, 16), np.float32).T
    run_two_phase(ops, "MulCustom", x, x, zt)
    np.testing.assert_array_equal(zt, x * x)


def test_misaligned_tensors_are_copied(ops):
    raw = np.zeros(4 * 1000 + 2, np.uint8)
    x = np.frombuffer(raw.data, np.float32, count=1000, offset=2)  # 2-byte aligned float32
    assert not x.flags.aligned
    raw[2:] = np.arange(4000, dtype=np.uint8)
    y = np.ones(1000, np.float32)
    z = np.empty(1000, np.float32)
    size, ex = ops.aclnnAddCustomTemplateGetWorkspaceSize(x, y, z)
    assert ex.args is None
    ops.aclnnAddCustomTemplate(None, size, ex)
    np.testing.assert_array_equal(z, x + y)
    # a 4-byte aligned view (not 16) takes the direct path through the generic phase 1
    z2 = np.empty(1001, np.float32)[1:]
    size, ex = ops.aclnnAddCustomTemplateGetWorkspaceSize(y, y, z2)
    assert ex.args is not None
    ops.aclnnAddCustomTemplate(None, size, ex)
    np.testing.assert_array_equal(z2, 2 * y)


def test_in_place_add(ops):
    x = np.arange(10000, dtype=np.float32)
    y = np.ones_like(x)
    want = x + y
    run_two_phase(ops, "AddCustomTemplate", x, y, x)
    np.testing.assert_array_equal(x, want)
