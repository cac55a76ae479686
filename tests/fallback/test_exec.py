"""syn_exec_aclnn / asyn_exec_aclnn on every sample op through the dlsym'd symbols of the
session's packages, against numpy; every converted object released in both modes."""

from __future__ import annotations

import ctypes

import ml_dtypes
import numpy as np
import pytest

from opbuild.runtime import capi, device
from opbuild.runtime import fallback as fb
from opbuild.runtime.tensor import Tensor

rng = np.random.default_rng(7)


def _leaky(x, slope):
    x = x.astype(np.float32)
    return np.where(x >= 0, x, np.float32(slope) * x)


def _cases():
    """(api, args builder) -> (args, outputs, expected)."""

    def add(dtype):
        def make():
            x = rng.standard_normal(1000).astype(dtype)
            y = rng.standard_normal(1000).astype(dtype)
            z = np.zeros(1000, dtype)
            return "aclnnAddCustomTemplate", (x, y, z), [(z, x + y)]
        return make

    def add_n():
        parts = [rng.integers(-50, 50, (4, 33)).astype(np.int32) for _ in range(3)]
        y = np.zeros((4, 33), np.int32)
        return "aclnnAddNCustom", (parts, y), [(y, parts[0] + parts[1] + parts[2])]

    def leaky():
        x = rng.standard_normal((3, 5, 7)).astype(np.float32)
        y = np.zeros_like(x)
        return "aclnnLeakyReluCustom", (x, ctypes.c_double(0.2), y), [(y, _leaky(x, 0.2))]

    def leaky_bf16_tensor():
        x = rng.standard_normal(300).astype(ml_dtypes.bfloat16)
        y = np.zeros_like(x)
        return ("aclnnLeakyReluCustom", (Tensor(x), ctypes.c_double(0.0), Tensor(y)),
                [(y, _leaky(x, 0.0).astype(ml_dtypes.bfloat16))])

    def mul():
        x = rng.standard_normal((4, 1, 6)).astype(np.float32)
        y = rng.standard_normal((5, 1)).astype(np.float32)
        z = np.zeros((4, 5, 6), np.float32)
        return "aclnnMulCustom", (x, y, z), [(z, x * y)]

    def mul_mixed():
        x = rng.standard_normal((8, 8)).astype(np.float16)
        y = rng.standard_normal((8, 8)).astype(np.float32)
        z = np.zeros((8, 8), np.float32)
        return "aclnnMulCustom", (x, y, z), [(z, x.astype(np.float32) * y)]

    def reduce_sum():
        x = rng.standard_normal((6, 7, 300)).astype(np.float32)
        y = np.zeros((1, 7, 1), np.float32)
        return "aclnnReduceSumCustom", (x, [0, 2], True, y), [(y, x.sum(axis=(0, 2), keepdims=True))]

    def reduce_all():
        x = rng.standard_normal((5, 9)).astype(np.float32)
        y = np.zeros((), np.float32)
        return "aclnnReduceSumCustom", (x, [], False, y), [(y, x.sum())]

    def sort_desc():  # an AI CPU op
        x = rng.integers(-9, 9, (5, 33)).astype(np.int32)
        values, indices = np.zeros_like(x), np.zeros(x.shape, np.int64)
        order = x.shape[-1] - 1 - np.flip(np.argsort(np.flip(x, -1), axis=-1, kind="stable"), -1)
        return "aclnnSortCustom", (x, True, values, indices), [(values, np.take_along_axis(x, order, -1)),
                                                               (indices, order)]

    def non_zero():  # an AI CPU op with a data-dependent output: written from the start of its bound
        x = rng.integers(0, 2, (6, 7)).astype(np.float32)
        y = np.full((2, x.size), -1, np.int64)
        want = np.array(np.nonzero(x))
        return "aclnnNonZeroCustom", (x, y), [(y.reshape(-1)[:want.size], want.reshape(-1))]

    return {"add_fp32": add(np.float32), "add_fp16": add(np.float16), "add_n_int32": add_n, "leaky_relu": leaky,
            "leaky_relu_bf16_tensor": leaky_bf16_tensor, "mul_broadcast": mul, "mul_fp16_fp32": mul_mixed,
            "reduce_sum": reduce_sum, "reduce_sum_all": reduce_all, "sort_aicpu": sort_desc,
            "non_zero_aicpu": non_zero}


CASES = _cases()


def _check(results):
    for got, want in results:
        tol = 1e-4 if want.dtype in (np.float32, np.int32) else 2e-2
        np.testing.assert_allclose(np.asarray(got).astype(np.float32), np.asarray(want).astype(np.float32),
                                   rtol=tol, atol=tol)


@pytest.mark.parametrize("case", sorted(CASES))
def test_sync(env, live, case):
    api, args, results = CASES[case]()
    before, blocks = live(), device.mem_blocks()
    ctx = fb.OpExecuteContext()
    assert fb.syn_exec_aclnn(ctx, api, *args) == fb.GRAPH_SUCCESS, ctx.last_error
    _check(results)
    assert live() == before  # tensors, lists, arrays, executor: all released
    assert device.mem_blocks() == blocks  # workspace freed
    assert ctx.get_op_api_params() is None and ctx.last_error is None


@pytest.mark.parametrize("case", sorted(CASES))
def test_async(env, live, case):
    api, args, results = CASES[case]()
    before, blocks = live(), device.mem_blocks()
    executors = capi.live_objects("executor")
    ctx = fb.OpExecuteContext()
    outputs = [np.array(got, copy=True) for got, _ in results]
    assert fb.asyn_exec_aclnn(ctx, api, *args) == fb.GRAPH_SUCCESS, ctx.last_error
    # phase 1 only: nothing computed yet, the converted objects and the executor are held
    for (got, _), old in zip(results, outputs):
        np.testing.assert_array_equal(np.asarray(got), old)
    params = ctx.get_op_api_params()
    assert isinstance(params, fb.OpApiParams) and params.executor and not params.released
    assert params.op_api_func is not None and params.api == api
    held = sum(1 for p in params.converted_params if p.pointer)
    assert held >= 2 and live() >= before + held + 1  # (a tensor list's tensors count too) + the executor
    assert capi.live_objects("executor") == executors + 1
    assert all(p.deleter is not None for p in params.converted_params if p.pointer)
    (size,) = ctx.get_workspace_sizes()
    assert size >= 0 and (size > 0) == api.startswith("aclnnReduceSum")
    assert ctx.launch() == fb.GRAPH_SUCCESS, ctx.last_error
    _check(results)
    assert params.released and ctx.get_op_api_params() is None
    assert live() == before and device.mem_blocks() == blocks
    assert ctx.launch() == fb.GRAPH_FAILED  # nothing left to launch
    assert "no OpApiParams" in ctx.last_error


def test_sync_on_acl_stream(env, live):
    stream = fb.AclStream()
    try:
        assert capi.live_objects("stream") >= 1
        before = live()
        ctx = fb.OpExecuteContext(stream=stream)
        assert ctx.get_stream() is stream
        x = rng.standard_normal((64, 130)).astype(np.float32)
        y = np.zeros((130,), np.float32)
        assert fb.syn_exec_aclnn(ctx, "aclnnReduceSumCustom", x, [0], False, y) == 0, ctx.last_error
        stream.synchronize()
        np.testing.assert_allclose(y, x.sum(axis=0), rtol=1e-4, atol=1e-4)
        z = np.zeros_like(x)
        assert fb.asyn_exec_aclnn(ctx, "aclnnMulCustom", x, x, z) == 0
        assert ctx.launch() == 0, ctx.last_error
        stream.synchronize()
        np.testing.assert_allclose(z, x * x, rtol=1e-6)
        assert live() == before
    finally:
        stream.destroy()


def test_strided_views_are_honoured(env, live):
    before = live()
    ctx = fb.OpExecuteContext()
    base = rng.standard_normal((6, 8)).astype(np.float32)
    cases = {
        "transposed": base.T,
        "reversed": base[::-1, ::-2],
        "offset slice": base[2:5, 1:7],
    }
    for what, x in cases.items():
        assert not x.flags.c_contiguous
        y = np.zeros(x.shape, np.float32)
        assert fb.syn_exec_aclnn(ctx, "aclnnLeakyReluCustom", x, ctypes.c_double(0.5), y) == 0, (what, ctx.last_error)
        np.testing.assert_allclose(y, _leaky(x, 0.5), rtol=1e-6, err_msg=what)
    # a strided output view writes only its elements
    target = np.full((4, 10), 7.0, np.float32)
    src = -np.ones((4, 5), np.float32)
    assert fb.syn_exec_aclnn(ctx, "aclnnLeakyReluCustom", src, ctypes.c_double(0.5), target[:, ::2]) == 0
    assert (target[:, ::2] == -0.5).all() and (target[:, 1::2] == 7.0).all()
    assert live() == before


def test_converted_arguments(fakes, live):
    """What each Python argument becomes, read from the live objects before phase 2 (async)."""
    lib = ctypes.CDLL(str(fakes.full / "op_api" / "lib" / "libcust_opapi.so"))
    ptr = lambda name: ctypes.c_void_p.in_dll(lib, name).value  # noqa: E731
    ctypes.c_uint64.in_dll(lib, "fake_workspace_size").value = 0
    before = live()
    ctx = fb.OpExecuteContext()
    x = np.arange(24, dtype=np.int16).reshape(2, 3, 4)[:, ::-1, 1:]
    parts = [np.zeros(3, np.float32), np.ones((2, 2), np.float64)]
    rc = fb.asyn_exec_aclnn(ctx, "aclnnFakeEcho", x, 2.5, -7, True, "mode=fast", [1, 2, 3], [0.5, 2],
                            [True, False], parts, ctypes.c_double(1.25), None, roots=[fakes.full])
    assert rc == fb.GRAPH_SUCCESS, ctx.last_error
    params = ctx.get_op_api_params()
    # tensor, scalar, int/float/bool arrays, tensor list + the 2 tensors it owns (the fake makes no executor)
    assert live() == before + 8
    assert [p.pointer for p in params.converted_params] == [
        ptr(n) for n in ("fake_tensor", "fake_scalar", "fake_int_array", "fake_float_array", "fake_bool_array",
                         "fake_tensor_list")]
    # the tensor: real dims, element strides, offset from the lowest element (int16 -> ACL_FLOAT16, as op_fallback)
    t = capi.AclTensor.from_address(ptr("fake_tensor"))
    assert t.dataType == fb.ACL_DTYPE["ACL_FLOAT16"] and t.format == 2
    assert [t.viewDims[i] for i in range(3)] == [2, 3, 3]
    assert [t.strides[i] for i in range(3)] == [12, -4, 1]
    assert t.offset == 8 and t.data == x.ctypes.data - 8 * 2
    view = capi.tensor_array(ptr("fake_tensor"), "x")  # the same elements
    np.testing.assert_array_equal(view.array.view(np.int16), x)
    s = capi.AclScalar.from_address(ptr("fake_scalar"))
    assert s.dataType == fb.ACL_DTYPE["ACL_FLOAT"] and ctypes.c_float.from_buffer_copy(bytes(s.value[:4])).value == 2.5
    assert ctypes.c_int64.in_dll(lib, "fake_int").value == -7
    assert ctypes.c_bool.in_dll(lib, "fake_bool").value is True
    assert ctypes.c_char_p(ctypes.addressof(ctypes.c_char.in_dll(lib, "fake_str"))).value == b"mode=fast"
    assert capi.attr_value("list_int", ptr("fake_int_array"), "a") == [1, 2, 3]
    assert capi.attr_value("list_float", ptr("fake_float_array"), "a") == [0.5, 2.0]
    assert capi.attr_value("list_bool", ptr("fake_bool_array"), "a") == [True, False]
    lst = capi.tensor_list(ptr("fake_tensor_list"), "l")
    assert [a.array.shape for a in lst] == [(3,), (2, 2)]
    assert ctypes.c_double.in_dll(lib, "fake_double").value == 1.25
    assert ptr("fake_null") is None
    assert ctx.launch() == 0
    assert live() == before
    # sync: the same arguments, all released after phase 2
    rc = fb.syn_exec_aclnn(ctx, "aclnnFakeEcho", x, np.float16(1.5), 0, False, b"raw", [], [1.0], [False], parts,
                           ctypes.c_double(0), None, roots=[fakes.full])
    assert rc == 0 and live() == before


def test_phase2_gets_workspace_and_stream(fakes):
    lib = ctypes.CDLL(str(fakes.full / "op_api" / "lib" / "libcust_opapi.so"))
    ctypes.c_uint64.in_dll(lib, "fake_workspace_size").value = 4096
    stream = fb.AclStream()
    try:
        for run in (fb.syn_exec_aclnn, fb.asyn_exec_aclnn):
            ctx = fb.OpExecuteContext(stream=stream)
            blocks = device.mem_blocks()
            rc = run(ctx, "aclnnFakeEcho", np.zeros(1, np.float32), 1.0, 0, False, "", [], [], [], None,
                     ctypes.c_double(0), None, roots=[fakes.full])
            assert rc == 0, ctx.last_error
            if run is fb.asyn_exec_aclnn:
                assert ctx.get_workspace_sizes() == [4096]
                assert ctx.launch() == 0
            assert ctypes.c_uint64.in_dll(lib, "fake_ws_size").value == 4096
            assert ctypes.c_void_p.in_dll(lib, "fake_ws").value
            assert ctypes.c_void_p.in_dll(lib, "fake_stream").value == stream.handle
            stream.synchronize()  # the workspace free is ordered on the stream
            assert device.mem_blocks() == blocks
    finally:
        ctypes.c_uint64.in_dll(lib, "fake_workspace_size").value = 0
        stream.destroy()


def test_dtype_table_is_the_seeds():
    seed = {
        "DT_FLOAT": "ACL_FLOAT", "DT_BF16": "ACL_BF16", "DT_BOOL": "ACL_BOOL", "DT_INT64": "ACL_INT64",
        "DT_INT32": "ACL_INT32", "DT_UINT64": "ACL_UINT64", "DT_UINT32": "ACL_UINT32", "DT_INT8": "ACL_INT8",
        "DT_UINT8": "ACL_UINT8", "DT_INT4": "ACL_INT4", "DT_FLOAT8_E4M3FN": "ACL_FLOAT8_E4M3FN",
        "DT_FLOAT8_E5M2": "ACL_FLOAT8_E5M2", "DT_FLOAT4_E2M1": "ACL_FLOAT4_E2M1", "DT_FLOAT4_E1M2": "ACL_FLOAT4_E1M2",
        "DT_FLOAT8_E8M0": "ACL_FLOAT8_E8M0", "DT_HIFLOAT8": "ACL_HIFLOAT8", "DT_COMPLEX64": "ACL_COMPLEX64",
        "DT_DOUBLE": "ACL_DOUBLE",
    }
    assert fb.DT_TO_ACL == seed
    acl = fb.ACL_DTYPE
    assert (acl["ACL_HIFLOAT8"], acl["ACL_FLOAT8_E5M2"], acl["ACL_FLOAT8_E4M3FN"], acl["ACL_FLOAT8_E8M0"],
            acl["ACL_FLOAT4_E2M1"], acl["ACL_FLOAT4_E1M2"]) == (34, 35, 36, 37, 40, 41)
    expect = {
        np.float32: "ACL_FLOAT", np.float64: "ACL_DOUBLE", np.bool_: "ACL_BOOL", np.int64: "ACL_INT64",
        np.int32: "ACL_INT32", np.uint64: "ACL_UINT64", np.uint32: "ACL_UINT32", np.int8: "ACL_INT8",
        np.uint8: "ACL_UINT8", np.complex64: "ACL_COMPLEX64", ml_dtypes.bfloat16: "ACL_BF16",
        ml_dtypes.int4: "ACL_INT4", ml_dtypes.float8_e4m3fn: "ACL_FLOAT8_E4M3FN",
        ml_dtypes.float8_e5m2: "ACL_FLOAT8_E5M2", ml_dtypes.float8_e8m0fnu: "ACL_FLOAT8_E8M0",
        ml_dtypes.float4_e2m1fn: "ACL_FLOAT4_E2M1",
        # everything else: ACL_FLOAT16, as op_fallback's default branch
        np.float16: "ACL_FLOAT16", np.int16: "ACL_FLOAT16", np.uint16: "ACL_FLOAT16", np.complex128: "ACL_FLOAT16",
        ml_dtypes.uint4: "ACL_FLOAT16",
    }
    for dtype, name in expect.items():
        assert fb.acl_dtype(dtype) == acl[name], dtype


def test_plain_arrays_take_the_native_path(env, live, monkeypatch):
    # contiguous numpy arrays and no workspace: _fastpath.syn_exec (fallback_exec.c) runs both
    # phases; a strided view is left to the Python steps; both give numpy's result and release all
    from opbuild.runtime.fallback import execute

    if execute._fastpath is None:
        pytest.skip("the _fastpath extension is not built")
    calls = []

    class Spy:
        @staticmethod
        def syn_exec(*args):
            status = execute._fastpath_module.syn_exec(*args)
            calls.append(status)
            return status

    monkeypatch.setattr(execute, "_fastpath_module", execute._fastpath, raising=False)
    monkeypatch.setattr(execute, "_fastpath", Spy)
    before = live()
    ctx = fb.OpExecuteContext()
    x, y = np.arange(6, dtype=np.float32), np.full(6, 2, np.float32)
    z = np.zeros(6, np.float32)
    assert fb.syn_exec_aclnn(ctx, "aclnnAddCustomTemplate", x, y, z) == fb.GRAPH_SUCCESS
    np.testing.assert_array_equal(z, x + y)
    assert calls == [0]
    wide = np.zeros(12, np.float32)
    assert fb.syn_exec_aclnn(ctx, "aclnnAddCustomTemplate", x, y, wide[::2]) == fb.GRAPH_SUCCESS
    np.testing.assert_array_equal(wide[::2], x + y)
    assert calls == [0, -1]  # not C-contiguous: the Python steps ran
    assert live() == before
