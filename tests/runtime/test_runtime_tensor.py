"""Tensor (zero-copy numpy/DLPack views, bf16, formats) and streams (two-phase on a created stream)."""

from __future__ import annotations

import gc

import ml_dtypes
import numpy as np
import pytest

import opbuild.runtime as rt
from opbuild.runtime import AclnnError
from opbuild.runtime.call import executor

NUMPY_1 = np.lib.NumpyVersion(np.__version__) < "2.0.0"
"""numpy 1.x (pyproject.toml allows numpy>=1.26): its DLPack import is read-only."""


def test_tensor_is_a_zero_copy_view_of_numpy():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = rt.Tensor.from_numpy(a)
    assert t.numpy() is a and np.shares_memory(t.numpy(), a)
    assert t.data_ptr == a.ctypes.data
    assert (t.shape, t.dtype, t.format, t.strides, t.numel, t.nbytes) == ((3, 4), "float32", "ND", (4, 1), 12, 48)
    a[1, 2] = 99
    assert t.numpy()[1, 2] == 99
    tt = rt.Tensor.from_numpy(a.T)
    assert tt.strides == (1, 4) and not tt.is_contiguous()
    assert np.asarray(t) is a


def test_tensor_dlpack_round_trip():
    a = np.arange(10, dtype=np.float16)
    t = rt.Tensor.from_dlpack(a)  # from any DLPack producer
    assert np.shares_memory(t.numpy(), a)
    if NUMPY_1:  # numpy 1.x imports DLPack read-only (DLPack 0.x has no read-only flag) and exports no read-only array
        assert not t.numpy().flags.writeable
        with pytest.raises(BufferError):
            np.from_dlpack(t)
        t = rt.Tensor.from_numpy(a)
    back = np.from_dlpack(t)  # and to any DLPack consumer
    assert np.shares_memory(back, a) and back.dtype == np.float16
    a[3] = 42
    assert back[3] == 42
    assert t.__dlpack_device__() == a.__dlpack_device__()


def test_tensor_bf16(builtin_ops):
    a = np.linspace(-3, 3, 257).astype(ml_dtypes.bfloat16)
    t = rt.Tensor.from_numpy(a)
    assert t.dtype == "bfloat16" and t.nbytes == 2 * 257
    out = builtin_ops.leaky_relu_custom(t, negative_slope=0.5)
    assert isinstance(out, rt.Tensor) and out.dtype == "bfloat16"
    af = a.astype(np.float32)
    np.testing.assert_array_equal(out.numpy(), np.where(af >= 0, af, 0.5 * af).astype(ml_dtypes.bfloat16))


def test_tensor_empty_is_device_memory(ops):
    x = rt.Tensor.empty((4, 33), "float32")
    x.numpy()[:] = 1.5
    z = rt.Tensor.empty((4, 33), "float32")
    assert x.data_ptr % rt.device.MEM_ALIGN == 0
    size, ex = ops.aclnnAddCustomTemplateGetWorkspaceSize(x, x, z)
    ops.aclnnAddCustomTemplate(None, size, ex)
    np.testing.assert_array_equal(z.numpy(), 3.0)
    assert rt.Tensor.empty((0, 3), "float16").numel == 0


def test_tensor_rejects_unknown_format_and_dtype():
    with pytest.raises(AclnnError) as err:
        rt.Tensor(np.ones(3), "NC1HWC0")
    assert err.value.status == rt.ACLNN_ERR_PARAM_INVALID and "NC1HWC0" in err.value.message
    with pytest.raises(ValueError):
        rt.Tensor.from_numpy(np.ones(3, np.complex64))


def test_tensors_and_arrays_share_plans(ops):
    x = np.ones(100, np.float32)
    ops.add_custom_template(x, x)
    n = executor.cache_size()
    out = ops.add_custom_template(rt.Tensor(x), x)
    assert isinstance(out, rt.Tensor) and executor.cache_size() == n
    np.testing.assert_array_equal(out.numpy(), 2 * x)


def test_two_phase_on_a_created_stream(ops, builtin_ops):
    """Custom and built-in ops on one in-order stream."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 512), dtype=np.float32)
    y = rng.standard_normal((256, 512), dtype=np.float32)
    z = np.zeros_like(x)
    with rt.Stream() as stream:
        size, ex = ops.aclnnAddCustomTemplateGetWorkspaceSize(x, y, z)
        ops.aclnnAddCustomTemplate(None, size, ex, stream)
        # a kernel with a workspace, then a non-contiguous output, on the same in-order stream
        r = np.empty(512, np.float32)
        size, ex2 = builtin_ops.aclnnReduceSumCustomGetWorkspaceSize(z, [0], False, r, deterministic=True)
        assert size > 0
        workspace = rt.malloc(size)
        builtin_ops.aclnnReduceSumCustom(workspace, size, ex2, stream)
        parent = np.zeros((256, 1024), np.float32)
        ops.aclnnMulCustom(None, *ops.aclnnMulCustomGetWorkspaceSize(x, y, parent[:, ::2]), stream)
        del ex, ex2  # the stream keeps what its kernels use alive
        gc.collect()
        stream.synchronize()
        assert stream.pending() == 0
    np.testing.assert_array_equal(z, x + y)
    np.testing.assert_allclose(r, (x + y).astype(np.float64).sum(axis=0), rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(parent[:, ::2], x * y)
    np.testing.assert_array_equal(parent[:, 1::2], 0)


def test_one_shot_on_a_created_stream(ops, builtin_ops):
    x = np.arange(1000, dtype=np.float32).reshape(10, 100)
    stream = rt.Stream()
    z = ops.add_custom_template(x, x, stream=stream)
    s = builtin_ops.reduce_sum_custom(x, axes=[1], stream=stream)
    stream.synchronize()
    np.testing.assert_array_equal(z, 2 * x)
    np.testing.assert_allclose(s, x.sum(axis=1), rtol=1e-6)
    stream.destroy()


def test_kernel_failure_on_a_stream_surfaces_at_synchronize(probe_package):
    probe = rt.import_ops(probe_package)
    x = np.ones(100, np.float32)
    stream = rt.Stream()
    size, ex = probe.aclnnProbeCustomGetWorkspaceSize(x, -4.0, np.empty_like(x))
    probe.aclnnProbeCustom(None, size, ex, stream)
    with pytest.raises(rt.DeviceError) as err:
        stream.synchronize()
    assert "cannot cover 100 elements" in str(err.value)
    stream.destroy()


def test_default_stream_object_is_synchronous(ops):
    x = np.ones(10, np.float32)
    z = np.empty_like(x)
    size, ex = ops.aclnnAddCustomTemplateGetWorkspaceSize(x, x, z)
    ops.aclnnAddCustomTemplate(None, size, ex, rt.default_stream)
    np.testing.assert_array_equal(z, 2)


def test_tensor_array_protocol_copies_only_when_asked():
    a = np.arange(4, dtype=np.float32)
    t = rt.Tensor(a)
    assert np.asarray(t) is a
    c = np.array(t, copy=True)
    assert not np.shares_memory(c, a) and np.array_equal(c, a)
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
