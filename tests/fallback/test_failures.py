"""Each failure point of the two macros returns GRAPH_FAILED, logs what failed, and leaves no
converted object, executor or workspace behind."""

from __future__ import annotations

import ctypes
import logging

import ml_dtypes
import numpy as np
import pytest

from opbuild.runtime import capi, device
from opbuild.runtime import fallback as fb

RUNS = [fb.syn_exec_aclnn, fb.asyn_exec_aclnn]
IDS = ["sync", "async"]


def _array_beyond_acl_dims() -> np.ndarray | None:
    """A 33-dim array (aclCreateTensor takes at most 32), or None where numpy cannot make one:
    numpy 2 allows 64 dims, numpy 1.x stops at 32 (so its arrays never reach the C-side refusal)."""
    try:
        return np.zeros((1,) * 33, np.float32)
    except ValueError:
        return None


_BEYOND_ACL_DIMS = _array_beyond_acl_dims()


@pytest.fixture
def fake(fakes):
    lib = ctypes.CDLL(str(fakes.full / "op_api" / "lib" / "libcust_opapi.so"))
    knobs = {name: ctypes.c_int32.in_dll(lib, name) for name in ("fake_phase1_status", "fake_phase2_status")}
    ws = ctypes.c_uint64.in_dll(lib, "fake_workspace_size")
    calls = {name: ctypes.c_int32.in_dll(lib, name) for name in ("fake_phase1_calls", "fake_phase2_calls")}
    yield lib, knobs, ws, calls
    for knob in knobs.values():
        knob.value = 0
    ws.value = 0


def _echo_args():
    return (np.zeros(4, np.float32), 1.5, 3, True, "s", [1], [1.0], [True], [np.zeros(2, np.float32)],
            ctypes.c_double(0), None)


def _check_clean(ctx, before, blocks, live):
    assert live() == before
    assert device.mem_blocks() == blocks
    assert ctx.get_op_api_params() is None


@pytest.mark.parametrize("run", RUNS, ids=IDS)
def test_missing_reset_cache_thread_local(fakes, live, caplog, run):
    # a library with both aclnn phases but no ResetCacheThreadLocal in it or its dependencies
    ctx, before, blocks = fb.OpExecuteContext(node_name="node0"), live(), device.mem_blocks()
    with caplog.at_level(logging.ERROR, logger="opbuild.fallback"):
        rc = run(ctx, "aclnnFakeEcho", *_echo_args(), roots=[fakes.no_acl])
    assert rc == fb.GRAPH_FAILED == 0xFFFFFFFF
    assert "ResetCacheThreadLocal not found" in ctx.last_error
    assert "aclnnFakeEchoGetWorkspaceSize" not in ctx.last_error  # those two were found
    assert "node0" in caplog.text and "ResetCacheThreadLocal" in caplog.text
    _check_clean(ctx, before, blocks, live)


@pytest.mark.parametrize("run", RUNS, ids=IDS)
def test_missing_get_workspace_size(fakes, live, fake, run):
    ctx, before, blocks = fb.OpExecuteContext(), live(), device.mem_blocks()
    rc = run(ctx, "aclnnFakeOnlyRun", np.zeros(1, np.float32), roots=[fakes.full])
    assert rc == fb.GRAPH_FAILED
    assert "aclnnFakeOnlyRunGetWorkspaceSize not found" in ctx.last_error
    assert str(fakes.full / "op_api" / "lib" / "libcust_opapi.so") in ctx.last_error
    _check_clean(ctx, before, blocks, live)


@pytest.mark.parametrize("run", RUNS, ids=IDS)
def test_missing_phase2_function(fakes, live, fake, run):
    _, _, _, calls = fake
    phase1_calls = calls["fake_phase1_calls"].value
    ctx, before, blocks = fb.OpExecuteContext(), live(), device.mem_blocks()
    rc = run(ctx, "aclnnFakeNoRun", roots=[fakes.full])
    assert rc == fb.GRAPH_FAILED
    assert "aclnnFakeNoRun not found" in ctx.last_error and "GetWorkspaceSize not found" not in ctx.last_error
    assert calls["fake_phase1_calls"].value == phase1_calls  # nothing ran
    _check_clean(ctx, before, blocks, live)


@pytest.mark.parametrize("run", RUNS, ids=IDS)
def test_unknown_api_in_the_packages(env, live, run):
    ctx, before, blocks = fb.OpExecuteContext(), live(), device.mem_blocks()
    assert run(ctx, "aclnnNoSuchOp", np.zeros(1, np.float32)) == fb.GRAPH_FAILED
    assert "aclnnNoSuchOpGetWorkspaceSize not found" in ctx.last_error
    assert "aclnnNoSuchOp not found" in ctx.last_error
    assert "libopapi_ras.so" in ctx.last_error
    _check_clean(ctx, before, blocks, live)


@pytest.mark.parametrize("run", RUNS, ids=IDS)
def test_phase1_failure_wrong_dtype(env, live, caplog, run):
    ctx, before, blocks = fb.OpExecuteContext(), live(), device.mem_blocks()
    x = np.ones(8, np.int64)
    with caplog.at_level(logging.ERROR, logger="opbuild.fallback"):
        rc = run(ctx, "aclnnAddCustomTemplate", x, x, np.zeros(8, np.int64))
    assert rc == fb.GRAPH_FAILED
    assert "aclnnAddCustomTemplateGetWorkspaceSize returned 161002" in ctx.last_error
    assert "aclnnAddCustomTemplateGetWorkspaceSize returned 161002" in caplog.text
    _check_clean(ctx, before, blocks, live)


@pytest.mark.parametrize("run", RUNS, ids=IDS)
def test_phase1_failure_status_of_fake(fakes, live, fake, run):
    _, knobs, _, calls = fake
    knobs["fake_phase1_status"].value = 561000
    phase2_calls = calls["fake_phase2_calls"].value
    ctx, before, blocks = fb.OpExecuteContext(), live(), device.mem_blocks()
    assert run(ctx, "aclnnFakeEcho", *_echo_args(), roots=[fakes.full]) == fb.GRAPH_FAILED
    assert "aclnnFakeEchoGetWorkspaceSize returned 561000" in ctx.last_error
    assert calls["fake_phase2_calls"].value == phase2_calls
    _check_clean(ctx, before, blocks, live)


class NoMemory(fb.OpExecuteContext):
    __slots__ = ()

    def malloc_workspace(self, size):
        return None


@pytest.mark.parametrize("run", RUNS, ids=IDS)
def test_workspace_allocation_failure(env, live, run):
    ctx, before, blocks = NoMemory(), live(), device.mem_blocks()
    x = np.ones((4, 64), np.float32)
    y = np.zeros((64,), np.float32)
    rc = run(ctx, "aclnnReduceSumCustom", x, [0], False, y)
    if run is fb.asyn_exec_aclnn:  # phase 1 succeeded; the workspace is allocated at launch
        assert rc == fb.GRAPH_SUCCESS and ctx.get_workspace_sizes()[0] > 0
        rc = ctx.launch()
    assert rc == fb.GRAPH_FAILED
    assert "MallocWorkspace" in ctx.last_error
    assert (y == 0).all()
    _check_clean(ctx, before, blocks, live)


@pytest.mark.parametrize("run", RUNS, ids=IDS)
def test_phase2_failure_status_of_fake(fakes, live, fake, run):
    _, knobs, ws, _ = fake
    knobs["fake_phase2_status"].value = 361001
    ws.value = 1000
    ctx, before, blocks = fb.OpExecuteContext(), live(), device.mem_blocks()
    rc = run(ctx, "aclnnFakeEcho", *_echo_args(), roots=[fakes.full])
    if run is fb.asyn_exec_aclnn:
        assert rc == fb.GRAPH_SUCCESS
        rc = ctx.launch()
    assert rc == fb.GRAPH_FAILED
    assert "aclnnFakeEcho (phase 2) returned 361001" in ctx.last_error
    _check_clean(ctx, before, blocks, live)


@pytest.mark.parametrize("run", RUNS, ids=IDS)
def test_phase2_failure_stream_not_of_acl(env, live, run):
    # a plain simulator stream was not made by aclrtCreateStream: phase 2 rejects it
    stream = device.Stream()
    try:
        ctx, before, blocks = fb.OpExecuteContext(stream=stream), live(), device.mem_blocks()
        x = np.ones(16, np.float32)
        z = np.zeros(16, np.float32)
        rc = run(ctx, "aclnnAddCustomTemplate", x, x, z)
        if run is fb.asyn_exec_aclnn:
            assert rc == fb.GRAPH_SUCCESS
            rc = ctx.launch()
        assert rc == fb.GRAPH_FAILED
        assert "aclnnAddCustomTemplate (phase 2) returned 161002" in ctx.last_error
        assert "not a live stream" in ctx.last_error
        assert (z == 0).all()
        stream.synchronize()
        _check_clean(ctx, before, blocks, live)
    finally:
        stream.destroy()


@pytest.mark.parametrize("run", RUNS, ids=IDS)
@pytest.mark.parametrize("bad, message", [
    (object(), "cannot convert object"),
    ([1, "a"], "a list must hold only"),
    pytest.param(_BEYOND_ACL_DIMS, "at most 32 are supported",  # aclCreateTensor refuses it (C side)
                 marks=pytest.mark.skipif(_BEYOND_ACL_DIMS is None, reason="numpy 1.x makes no array of 33 dims")),
    (np.zeros(3, ml_dtypes.float8_e4m3fn), None),  # ACL_FLOAT8_E4M3FN: a CANN aclDataType, accepted
    (np.zeros(3, object), "cannot be an aclTensor"),
    (np.zeros(4, np.float32).view(np.uint8)[1::2], None),  # fine: an odd uint8 view
    (np.zeros((4, 4), np.float32)[:, 1:3].view(np.uint16)[:, ::3], None),
])
def test_conversion_failure_releases_what_was_made(fakes, live, fake, run, bad, message):
    ctx, before, blocks = fb.OpExecuteContext(), live(), device.mem_blocks()
    args = list(_echo_args())
    args[8] = bad  # after a tensor, a scalar and three arrays were made
    rc = run(ctx, "aclnnFakeEcho", *args, roots=[fakes.full])
    if message is None:
        assert rc == fb.GRAPH_SUCCESS, ctx.last_error
        ctx.close()
    else:
        assert rc == fb.GRAPH_FAILED
        assert message in ctx.last_error
    _check_clean(ctx, before, blocks, live)


def test_int_beyond_int64(fakes, live):
    ctx, before = fb.OpExecuteContext(), live()
    args = list(_echo_args())
    args[2] = 1 << 70
    assert fb.syn_exec_aclnn(ctx, "aclnnFakeEcho", *args, roots=[fakes.full]) == fb.GRAPH_FAILED
    assert "does not fit int64_t" in ctx.last_error
    assert live() == before


def test_failed_async_call_drops_pending_params(env, live):
    before = live()
    ctx = fb.OpExecuteContext()
    x = np.ones(8, np.float32)
    z = np.zeros(8, np.float32)
    assert fb.asyn_exec_aclnn(ctx, "aclnnAddCustomTemplate", x, x, z) == 0
    assert fb.asyn_exec_aclnn(ctx, "aclnnAddCustomTemplate", x, x, np.zeros(8, np.int64)) == fb.GRAPH_FAILED
    assert ctx.get_op_api_params() is None and ctx.get_workspace_sizes() == []
    assert ctx.launch() == fb.GRAPH_FAILED  # the earlier call is not launched by mistake
    assert (z == 0).all() and live() == before


def test_unconvertible_byte_stride(fakes, live):
    ctx, before = fb.OpExecuteContext(), live()
    rec = np.zeros(4, dtype=[("a", np.float32), ("b", np.int16)])
    rc = fb.syn_exec_aclnn(ctx, "aclnnFakeEcho", rec["a"], roots=[fakes.full])
    assert rc == fb.GRAPH_FAILED and "not a whole number" in ctx.last_error
    assert live() == before


def test_replaced_or_closed_params_are_released(env, live):
    before = live()
    executors = capi.live_objects("executor")
    ctx = fb.OpExecuteContext()
    x = np.ones(8, np.float32)
    z = np.zeros(8, np.float32)
    assert fb.asyn_exec_aclnn(ctx, "aclnnAddCustomTemplate", x, x, z) == 0
    first = ctx.get_op_api_params()
    assert fb.asyn_exec_aclnn(ctx, "aclnnMulCustom", x, x, z) == 0
    assert first.released  # replaced without launch: its objects and executor are gone
    assert capi.live_objects("executor") == executors + 1
    with ctx:
        pass  # close(): the second one too
    assert live() == before and (z == 0).all()
    # a context dropped with params pending releases them when collected
    ctx = fb.OpExecuteContext()
    assert fb.asyn_exec_aclnn(ctx, "aclnnAddCustomTemplate", x, x, z) == 0
    del ctx
    import gc

    gc.collect()
    assert live() == before
