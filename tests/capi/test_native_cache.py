"""The native hit path of the aclnn C ABI (opcache.c): key -> cached plan -> launch in C.

A call's first phase 1 is a miss (the Python runtime selects and tiles, and the plan is cached
natively); the next one with the same key is a hit that never enters Python. The key includes
the SoC and search environment, and a hit checks the package's stamp; ResetCacheThreadLocal keeps
the cache, opbuild_aclnn_clear_cache empties it; an executor is checked against the op it is run
with; the C key equals the pure-Python key (cache_key.py) of the same call.
"""

from __future__ import annotations

import ctypes
import os
import struct
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opbuild.runtime import capi

from opbuild.runtime.call import cache_key
from opbuild.runtime import settings as rt_settings
from test_capi_inprocess import VP, _arr, acl, make_tensor, opapi, phase1, recent_error  # noqa: F401
from opbuild.runtime.call.plans import STAMP_INTERVAL_NS

ACL_FLOAT, ACL_FLOAT16 = 0, 1


class Stats(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in ("hits", "misses", "inserts", "stale", "size", "evictions")]


def stats(acl) -> dict[str, int]:
    s = Stats()
    acl.opbuild_aclnn_cache_stats(ctypes.byref(s))
    return {n: getattr(s, n) for n, _ in Stats._fields_}


def delta(acl, before: dict[str, int]) -> dict[str, int]:
    now = stats(acl)
    return {k: now[k] - before[k] for k in ("hits", "misses", "inserts", "stale")}


@pytest.fixture(autouse=True)
def _empty_native_cache(acl):
    acl.opbuild_aclnn_clear_cache()
    yield
    acl.opbuild_aclnn_clear_cache()


class Add:
    """AddCustomTemplate through the C ABI on three aclTensors over numpy arrays."""

    def __init__(self, acl, opapi, n: int = 8) -> None:
        self.acl, self.opapi = acl, opapi
        self.x = np.arange(n, dtype=np.float32)
        self.y = np.full(n, 0.5, np.float32)
        self.z = np.zeros(n, np.float32)
        self.ts = [make_tensor(acl, a) for a in (self.x, self.y, self.z)]

    def phase1(self):
        status, ws, ex = phase1(self.opapi, "AddCustomTemplate", *self.ts)
        assert status == 0, recent_error(self.acl)
        return ws, ex

    def call(self) -> None:
        ws, ex = self.phase1()
        assert self.opapi.aclnnAddCustomTemplate(None, ws, ex, None) == 0, recent_error(self.acl)
        np.testing.assert_array_equal(self.z, self.x + self.y)
        self.z[:] = 0

    def close(self) -> None:
        for t in self.ts:
            self.acl.aclDestroyTensor(t)


@pytest.fixture
def add(acl, opapi):
    a = Add(acl, opapi)
    yield a
    a.close()


def test_second_call_is_a_native_hit(acl, add):
    before = stats(acl)
    add.call()
    assert delta(acl, before) == {"hits": 0, "misses": 1, "inserts": 1, "stale": 0}
    for _ in range(5):
        add.call()
    assert delta(acl, before) == {"hits": 5, "misses": 1, "inserts": 1, "stale": 0}
    _, ex = add.phase1()
    assert acl.opbuild_aclnn_executor_key(ex).decode().startswith("AddCustomTemplate/d=0,p=1/")
    acl.aclDestroyAclOpExecutor(ex)


def test_full_cache_evicts_the_least_recently_used(acl, opapi):
    """OPBUILD_PARAM_CACHE_SIZE / opbuild_aclnn_cache_capacity bounds the native cache; a full
    cache drops the plan used longest ago, not everything."""
    acl.opbuild_aclnn_cache_capacity.restype = ctypes.c_size_t
    acl.opbuild_aclnn_cache_capacity.argtypes = [ctypes.c_size_t]
    old = acl.opbuild_aclnn_cache_capacity(0)
    a, b, c = (Add(acl, opapi, n) for n in (8, 16, 32))
    try:
        assert acl.opbuild_aclnn_cache_capacity(2) == 2
        before = stats(acl)
        a.call(), b.call(), a.call()  # a: most recently used
        c.call()  # evicts b
        assert stats(acl)["size"] == 2 and stats(acl)["evictions"] - before["evictions"] == 1
        mid = stats(acl)
        a.call()
        assert delta(acl, mid)["hits"] == 1
        b.call()
        assert delta(acl, mid) == {"hits": 1, "misses": 1, "inserts": 1, "stale": 0}
    finally:
        acl.opbuild_aclnn_cache_capacity(old)
        for x in (a, b, c):
            x.close()


def test_hit_executor_repeatable_and_streams(acl, add):
    add.call()
    ws, ex = add.phase1()  # a hit
    assert acl.aclSetAclOpExecutorRepeatable(ex) == 0
    stream = VP()
    assert acl.aclrtCreateStream(ctypes.byref(stream)) == 0
    for _ in range(3):
        assert add.opapi.aclnnAddCustomTemplate(None, ws, ex, stream) == 0
    assert acl.aclrtSynchronizeStream(stream) == 0
    np.testing.assert_array_equal(add.z, add.x + add.y)
    acl.opbuild_aclnn_clear_cache()  # plans in flight stay alive (the stream holds a reference)
    assert add.opapi.aclnnAddCustomTemplate(None, ws, ex, stream) == 0
    assert acl.aclrtSynchronizeStream(stream) == 0
    assert acl.aclDestroyAclOpExecutor(ex) == 0
    assert acl.aclrtDestroyStream(stream) == 0


def test_many_hits_on_a_stream_keep_their_plans(acl, add):
    """Hits on a created stream queue the kernel with the plan's release (sim_launch_then): plans
    dropped from the cache while launches are queued stay alive until those ran."""
    add.call()
    stream = VP()
    assert acl.aclrtCreateStream(ctypes.byref(stream)) == 0
    before = stats(acl)
    for i in range(1500):
        ws, ex = add.phase1()
        assert add.opapi.aclnnAddCustomTemplate(None, ws, ex, stream) == 0, recent_error(acl)
        if i % 500 == 499:
            acl.opbuild_aclnn_clear_cache()  # the next call is a miss; the queued hits keep their plan
    assert acl.aclrtSynchronizeStream(stream) == 0, recent_error(acl)
    np.testing.assert_array_equal(add.z, add.x + add.y)
    assert delta(acl, before) == {"hits": 1498, "misses": 2, "inserts": 2, "stale": 0}
    assert acl.aclrtDestroyStream(stream) == 0


def test_hit_executor_runs_once(acl, add):
    add.call()
    ws, ex = add.phase1()
    assert add.opapi.aclnnAddCustomTemplate(None, ws, ex, None) == 0
    assert add.opapi.aclnnAddCustomTemplate(None, ws, ex, None) == 161002
    assert "not a live aclOpExecutor" in recent_error(acl)


def test_reset_cache_thread_local_keeps_the_cache(acl, opapi, add):
    add.call()
    before = stats(acl)
    opapi.ResetCacheThreadLocal()
    add.call()
    assert delta(acl, before)["hits"] == 1  # as CANN's: per-call state only


def test_clear_cache_empties_it(acl, add):
    add.call()
    acl.opbuild_aclnn_clear_cache()
    assert stats(acl)["size"] == 0
    before = stats(acl)
    add.call()
    assert delta(acl, before) == {"hits": 0, "misses": 1, "inserts": 1, "stale": 0}


def test_clear_op_cache_from_python_empties_the_native_cache(acl, add):
    import opbuild.runtime as rt

    add.call()
    rt.clear_op_cache()
    assert stats(acl)["size"] == 0


def test_soc_change_selects_again(acl, add, monkeypatch):
    add.call()
    monkeypatch.setenv("OPBUILD_SOC", "ascend310p")  # no binaries for it in the sample package
    status, _, _ = phase1(add.opapi, "AddCustomTemplate", *add.ts)
    assert status != 0, "a cached plan of another SoC was used"
    assert "ascend310p" in recent_error(acl)
    monkeypatch.delenv("OPBUILD_SOC")
    before = stats(acl)
    add.call()  # the original SoC's plan is still cached
    assert delta(acl, before)["hits"] == 1


@pytest.mark.parametrize("var", ["ASCEND_CUSTOM_OPP_PATH", "ASCEND_OPP_PATH"])
def test_search_environment_change_selects_again(acl, add, monkeypatch, tmp_path, var):
    add.call()
    before = stats(acl)
    monkeypatch.setenv(var, str(tmp_path))
    add.call()  # a package-bound op still runs its package, but selects again
    assert delta(acl, before) == {"hits": 0, "misses": 1, "inserts": 1, "stale": 0}
    add.call()
    assert delta(acl, before)["hits"] == 1


def test_package_rebuild_selects_again(acl, add, package):
    add.call()
    config = package.root / "op_impl/ai_core/tbe/kernel/config/ascend910b/binary_info_config.json"
    st_ = config.stat()
    os.utime(config, ns=(st_.st_atime_ns, st_.st_mtime_ns + 1_000_000_000))  # rebuilt in place
    time.sleep(2 * STAMP_INTERVAL_NS / 1e9)  # hits re-check the stamp at most this often (plans.py, opkey.h)
    before = stats(acl)
    add.call()
    assert delta(acl, before) == {"hits": 0, "misses": 1, "inserts": 1, "stale": 1}
    add.call()
    assert delta(acl, before)["hits"] == 1


def test_deterministic_is_in_the_key(acl, add):
    add.call()
    before = stats(acl)
    rt_settings.set_deterministic(True)
    try:
        status, _, ex = phase1(add.opapi, "AddCustomTemplate", *add.ts)
        assert delta(acl, before)["hits"] == 0
        if status == 0:
            acl.aclDestroyAclOpExecutor(ex)
    finally:
        rt_settings.set_deterministic(False)


@pytest.mark.parametrize("hit", [False, True])
def test_executor_of_another_op_is_rejected(acl, opapi, add, hit):
    if hit:
        add.call()
    ws, ex = add.phase1()
    opapi.aclnnMulCustom.argtypes = [VP, ctypes.c_uint64, VP, VP]
    assert opapi.aclnnMulCustom(None, ws, ex, None) == 161002
    msg = recent_error(acl)
    assert "aclnnAddCustomTemplate" in msg and "aclnnMulCustom" in msg
    assert opapi.aclnnAddCustomTemplate(None, ws, ex, None) == 0  # still its own op's
    np.testing.assert_array_equal(add.z, add.x + add.y)


def test_view_outside_storage_is_not_a_hit(acl, opapi, add):
    add.call()
    x = np.arange(16, dtype=np.float32)
    bad = make_tensor(acl, x, view_shape=(8,), strides=(1,), offset=12, storage=(16,))  # same key, reaches 19
    try:
        status, _, _ = phase1(opapi, "AddCustomTemplate", bad, add.ts[1], add.ts[2])
        assert status == 161002 and "outside its storage" in recent_error(acl)
    finally:
        acl.aclDestroyTensor(bad)


# ---- one key: the C key of a call equals cache_key.py's ---------------------------------------------

def _c_key(acl, root: str, op: str, dp: int, ins, attrs, outs) -> list[int]:
    arrays = [(VP * max(len(v), 1))(*v) for v in (ins, attrs, outs)]
    out = (ctypes.c_uint64 * 1024)()
    acl.opbuild_aclnn_call_key.restype = ctypes.c_int64
    acl.opbuild_aclnn_call_key.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint64] + [VP] * 4 + [
        ctypes.c_size_t]
    n = acl.opbuild_aclnn_call_key(root.encode(), op.encode(), dp, *[ctypes.cast(a, VP) for a in arrays], out, 1024)
    assert n > 0, "no C key (the op's signature is learned by its first call)"
    return list(out[:n]), [ctypes.cast(a, VP).value for a in arrays]


tensor_strategy = st.tuples(
    st.lists(st.integers(1, 5), min_size=0, max_size=4),       # dims
    st.integers(0, 7),                                         # storage offset
    st.sampled_from([(np.float32, ACL_FLOAT), (np.float16, ACL_FLOAT16)]),
    st.sampled_from([0, 1, 2]),                                # NCHW, NHWC, ND
    st.booleans(),                                             # reversed strides
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tensors=st.lists(tensor_strategy, min_size=3, max_size=3), dp=st.sampled_from([0, 1, 2, 4, 5, 6]),
       slope=st.floats(allow_nan=False, width=64), axes=st.lists(st.integers(-4, 3), max_size=4),
       keep=st.one_of(st.none(), st.booleans()))
def test_c_key_equals_python_key(acl, opapi, add, package, tensors, dp, slope, axes, keep):
    add.call()  # signatures learned by a first call of each op
    leaky_ok = np.zeros(8, np.float32)
    lt = [make_tensor(acl, leaky_ok), make_tensor(acl, leaky_ok.copy())]
    st_ = phase1(opapi, "LeakyReluCustom", lt[0], ctypes.c_double(0.1), lt[1])
    if st_[0] == 0:
        acl.aclDestroyAclOpExecutor(st_[2])
    rx, ry = np.zeros((2, 3, 4), np.float32), np.zeros(3, np.float32)
    rt_ = [make_tensor(acl, rx), make_tensor(acl, ry)]
    axes02 = acl.aclCreateIntArray(_arr([0, 2]), 2)
    st_ = phase1(opapi, "ReduceSumCustom", rt_[0], axes02, False, rt_[1])
    assert st_[0] == 0, recent_error(acl)
    acl.aclDestroyAclOpExecutor(st_[2])
    acl.aclDestroyIntArray(axes02)
    lt += rt_
    buf = np.zeros(4096, np.float32)
    made = []
    for dims, offset, (dtype, acl_dtype), fmt, rev in tensors:
        strides = []
        acc = 1
        for d in reversed(dims):
            strides.insert(0, acc)
            acc *= d
        if rev:
            strides = strides[::-1]
        made.append(make_tensor(acl, buf.view(dtype) if dtype != np.float32 else buf, view_shape=tuple(dims),
                                strides=tuple(strides), offset=offset, storage=(1024,), dtype=acl_dtype, fmt=fmt))
    try:
        root = str(package.root.resolve())
        words, ptrs = _c_key(acl, root, "AddCustomTemplate", dp, made[:2], [], made[2:])
        assert words == capi.call_key(root, "AddCustomTemplate", dp, ptrs[0], ptrs[1], ptrs[2])
        builtin = str(package.builtin.resolve())
        slope_c = ctypes.c_double(slope)
        words, ptrs = _c_key(acl, builtin, "LeakyReluCustom", dp, made[:1], [ctypes.addressof(slope_c)], made[2:])
        assert words == capi.call_key(builtin, "LeakyReluCustom", dp, ptrs[0], ptrs[1], ptrs[2])
        assert words[1] == acl.opbuild_aclnn_op_id(builtin.encode(), b"LeakyReluCustom")
        assert words[2] == cache_key.env_token() == ctypes.c_uint64(acl.opbuild_opkey_env_token()).value
        # list_int and bool attributes, NULL = the default (encoded once by capi, appended by C)
        acl.aclCreateIntArray.restype = VP
        acl.aclCreateIntArray.argtypes = [ctypes.POINTER(ctypes.c_int64), ctypes.c_uint64]
        axes_c = acl.aclCreateIntArray(_arr(axes or [0]), len(axes)) if axes or keep else None
        keep_c = None if keep is None else ctypes.c_bool(keep)
        attr_ptrs = [axes_c or 0, 0 if keep_c is None else ctypes.addressof(keep_c)]
        try:
            words, ptrs = _c_key(acl, builtin, "ReduceSumCustom", dp, made[:1], attr_ptrs, made[2:])
            assert words == capi.call_key(builtin, "ReduceSumCustom", dp, ptrs[0], ptrs[1], ptrs[2])
        finally:
            if axes_c:
                acl.aclDestroyIntArray(axes_c)
    finally:
        for t in made + lt:
            acl.aclDestroyTensor(t)


def test_env_token_follows_the_environment(acl, monkeypatch):
    acl.opbuild_opkey_env_token.restype = ctypes.c_uint64
    first = acl.opbuild_opkey_env_token()
    assert first == cache_key.env_token()
    monkeypatch.setenv("OPBUILD_SOC", "ascend910b")
    monkeypatch.setenv("ASCEND_OPP_PATH", "")  # set but empty differs from unset
    second = acl.opbuild_opkey_env_token()
    assert second == cache_key.env_token() != first
    assert cache_key.env_hash([b"a", None, None, None]) != cache_key.env_hash([None, b"a", None, None])
    assert struct.pack("=Q", second)  # a uint64
