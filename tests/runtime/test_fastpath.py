"""The C cache-hit path of the per-op two-phase wrappers (opbuild.runtime._fastpath).

Its reference is the Python path it wraps (`fn.__wrapped__`): same plans, results, statuses and
messages; it must be taken on plain cache hits and left for everything else.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import opbuild.runtime as rt
from opbuild.runtime import settings
from opbuild.runtime.call import executor
from opbuild.runtime.errors import ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR, ACLNN_ERR_RUNTIME_ERROR, AclnnError

fastpath = pytest.importorskip("opbuild.runtime._fastpath")
if executor._fastpath is None:
    pytest.skip("the C fast path is disabled (OPBUILD_NO_FASTPATH)", allow_module_level=True)


@pytest.fixture(scope="module")
def probe(probe_package):
    return rt.import_ops(probe_package)


def stats() -> dict[str, int]:
    return fastpath.stats()


def delta(before: dict[str, int]) -> dict[str, int]:
    now = stats()
    return {k: now[k] - before[k] for k in now}


def add_phases(ops):
    return ops.aclnnAddCustomTemplateGetWorkspaceSize, ops.aclnnAddCustomTemplate


def error_of(fn, *args) -> tuple[int, str]:
    with pytest.raises(AclnnError) as err:
        fn(*args)
    return err.value.status, str(err.value)


def test_wrappers_are_c_objects_dressed_as_functions(ops):
    p1, p2 = add_phases(ops)
    assert isinstance(p1, fastpath.Phase1) and isinstance(p2, fastpath.Phase2)
    assert p1.__name__ == "aclnnAddCustomTemplateGetWorkspaceSize" and p2.__name__ == "aclnnAddCustomTemplate"
    assert p1.__doc__.startswith("Phase 1 of AddCustomTemplate") and callable(p1.__wrapped__)
    import inspect

    assert list(inspect.signature(p1).parameters)[-2:] == ["deterministic", "impl_mode"]


def test_hits_take_the_c_path_and_match_the_python_path(ops):
    p1, p2 = add_phases(ops)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 1000), dtype=np.float32)
    z = np.empty_like(x)
    before = stats()
    size, ex = p1(x, y, z)  # miss: the Python path builds and registers the plan (or, for a signature
    assert ex.fast  # an earlier test planned, the native miss does) ... and its executor launches from C, as a hit's
    p2(None, size, ex)
    np.testing.assert_array_equal(z, x + y)
    d = delta(before)
    assert (d["phase1_misses"], d["registered"] + d["phase1_native_misses"], d["phase2_fast"], d["phase2_slow"]) == (1, 1, 1, 0)
    assert fastpath.table_size() == 1
    for k in range(3):
        x2, y2 = rng.standard_normal((2, 1000), dtype=np.float32)  # new arrays, same signature
        z[:] = 0
        before = stats()
        size, ex = p1(x2, y2, z)
        assert ex.fast
        assert p2(None, size, ex) == 0
        d = delta(before)
        assert d["phase1_hits"] == 1 and d["phase1_misses"] == 0 and d["phase2_fast"] == 1 and d["phase2_slow"] == 0
        np.testing.assert_array_equal(z, x2 + y2)
        # the Python path gives the same plan, executor fields and result
        z_ref = np.empty_like(z)
        size_ref, ex_ref = p1.__wrapped__(x2, y2, z_ref)
        p2.__wrapped__(None, size_ref, ex_ref)
        np.testing.assert_array_equal(z, z_ref)
        assert size == size_ref and ex.plan is ex_ref.plan
        assert ex.args == p1.__wrapped__(x2, y2, z)[1].args  # same arrays: same launch arguments
        assert (ex.simplified_key, ex.binary_name, ex.workspace_size) == \
            (ex_ref.simplified_key, ex_ref.binary_name, ex_ref.workspace_size)
        assert repr(ex) == repr(ex_ref) and ex.op is ex_ref.op
        assert all(a is b for a, b in zip(ex.refs, (x2, y2, z)))


def test_one_shot_calls_use_it(ops):
    x = np.arange(8, dtype=np.float32)
    ops.add_custom_template(x, x)
    before = stats()
    np.testing.assert_array_equal(ops.add_custom_template(x, x), 2 * x)
    assert delta(before)["phase1_hits"] == 1


def test_executors_of_c_path_work_everywhere(ops):
    """Streams, workspaces and the Python execute() accept its executors."""
    p1, p2 = add_phases(ops)
    x = np.arange(64, dtype=np.float32)
    z = np.empty_like(x)
    size, ex = p1(x, x, z)
    p2(None, size, ex)
    size, ex = p1(x, x, z)
    assert ex.fast
    stream = rt.Stream()
    z[:] = 0
    p2(None, size, ex, stream)
    stream.synchronize()
    np.testing.assert_array_equal(z, 2 * x)
    size, ex = p1(x, x, z)
    z[:] = 0
    executor.execute(None, size, ex)
    np.testing.assert_array_equal(z, 2 * x)
    size, ex = p1(x, x, z)
    z[:] = 0
    p2(np.empty(16, np.uint8), 16, ex)  # a workspace the op does not need: the Python path checks it
    np.testing.assert_array_equal(z, 2 * x)


def test_run_once_and_repeatable(ops):
    p1, p2 = add_phases(ops)
    x = np.ones(5, np.float32)
    z = np.empty_like(x)
    p2(None, *p1(x, x, z))
    size, ex = p1(x, x, z)
    size_ref, ex_ref = p1.__wrapped__(x, x, z)
    assert ex.fast and not ex_ref.fast
    p2(None, size, ex)
    p2.__wrapped__(None, size_ref, ex_ref)
    assert ex.used and ex_ref.used
    before = stats()
    got = error_of(p2, None, size, ex)
    assert delta(before)["phase2_slow"] == 0  # raised in C
    assert got == error_of(p2.__wrapped__, None, size_ref, ex_ref)
    assert got[0] == ACLNN_ERR_PARAM_INVALID and "already ran" in got[1]
    assert ex.set_repeatable() is ex and ex.repeatable
    for _ in range(3):
        z[:] = 0
        p2(None, size, ex)
        np.testing.assert_array_equal(z, 2 * x)
    ex.set_repeatable(False)
    assert error_of(p2, None, size, ex)[0] == ACLNN_ERR_PARAM_INVALID


def test_workspace_errors_match_the_python_path(probe):
    p1, p2 = probe.aclnnProbeCustomGetWorkspaceSize, probe.aclnnProbeCustom
    x = np.ones(10, np.float32)
    y = np.empty_like(x)
    p1(x, -3.0, y)
    cases = [
        (None, 4095, ACLNN_ERR_PARAM_INVALID, "4095 bytes is smaller than the 4096 required"),
        (None, -1, ACLNN_ERR_PARAM_INVALID, "-1 bytes is smaller than the 4096 required"),
        (None, 4096, ACLNN_ERR_PARAM_NULLPTR, "workspace is a null pointer (4096 bytes required)"),
    ]
    for workspace, size_arg, status, text in cases:
        size, ex = p1(x, -3.0, y)
        assert size == 4096 and ex.fast
        size_ref, ex_ref = p1.__wrapped__(x, -3.0, y)
        before = stats()
        got = error_of(p2, workspace, size_arg, ex)
        assert delta(before)["phase2_slow"] == 0  # raised in C
        assert got == error_of(p2.__wrapped__, workspace, size_arg, ex_ref)
        assert got[0] == status and text in got[1]
        assert not ex.used  # rejected calls do not use the executor up
        p2(rt.malloc(size), size, ex)  # a real workspace: the Python path
        np.testing.assert_array_equal(y, -3 * x)


def test_kernel_failure_matches_the_python_path(probe):
    p1, p2 = probe.aclnnProbeCustomGetWorkspaceSize, probe.aclnnProbeCustom
    x = np.ones(100, np.float32)
    y = np.empty_like(x)
    with pytest.raises(AclnnError):
        p2(rt.malloc(4096), *p1(x, -4.0, y))
    size, ex = p1(x, -4.0, y)
    assert ex.fast
    if size:
        pytest.skip("the failing probe mode needs a workspace: launched by the Python path")
    got = error_of(p2, None, size, ex)
    assert got[0] == ACLNN_ERR_RUNTIME_ERROR
    size_ref, ex_ref = p1.__wrapped__(x, -4.0, y)
    assert got == error_of(p2.__wrapped__, None, size_ref, ex_ref)


@pytest.mark.parametrize("case", ["readonly_out", "misaligned", "noncontiguous", "tensor", "kwargs", "list"])
def test_other_calls_take_the_python_path(ops, case):
    p1, p2 = add_phases(ops)
    x = np.arange(16, dtype=np.float32)
    z = np.empty_like(x)
    size, ex = p1(x, x, z)
    p2(None, size, ex)
    kwargs = {}
    a, b, out = x, x, z
    if case == "readonly_out":
        out = np.empty_like(x)
        out.flags.writeable = False
    elif case == "misaligned":
        buf = np.zeros(17 * 4 + 4, np.uint8)[4:4 + 16 * 4].view(np.float32)
        buf[:] = x
        a = buf
    elif case == "noncontiguous":
        a = np.arange(32, dtype=np.float32)[::2]
    elif case == "tensor":
        a = rt.Tensor(x)
    elif case == "kwargs":
        kwargs = {"deterministic": False}
    elif case == "list":
        a = list(x)
    before = stats()
    if case in ("readonly_out", "list"):
        with pytest.raises(AclnnError):
            p1(a, b, out, **kwargs)
        assert delta(before)["phase1_hits"] == 0
        return
    size, ex = p1(a, b, out, **kwargs)
    assert not ex.fast and delta(before)["phase1_hits"] == 0
    out[:] = 0
    p2(None, size, ex)
    np.testing.assert_array_equal(out, np.asarray(a.array if isinstance(a, rt.Tensor) else a) + b)


def test_settings_changes_are_honoured(ops):
    p1, p2 = add_phases(ops)
    x = np.ones(4, np.float32)
    z = np.empty_like(x)
    p2(None, *p1(x, x, z))
    assert "d=0,p=1" in p1(x, x, z)[1].simplified_key
    for det, mode, key in ((True, "high_performance", "d=1,p=1"), (False, "default", "d=0,p=0"),
                           (True, "default", "d=1,p=0"), (False, "high_performance", "d=0,p=1")):
        settings.set_deterministic(det)
        settings.set_impl_mode(mode)
        size, ex = p1(x, x, z)  # first call with these settings (a miss, except the last)
        assert key in ex.simplified_key
        size, ex = p1(x, x, z)
        assert ex.fast and key in ex.simplified_key
        z[:] = 0
        p2(None, size, ex)
        np.testing.assert_array_equal(z, 2 * x)


def test_clear_op_cache_clears_it(ops, monkeypatch):
    p1, p2 = add_phases(ops)
    x = np.ones(4, np.float32)
    z = np.empty_like(x)
    p1(x, x, z)
    assert p1(x, x, z)[1].fast and fastpath.table_size() == 1
    rt.clear_op_cache()
    assert fastpath.table_size() == 0 and executor.cache_size() == 0
    before = stats()
    p1(x, x, z)
    assert delta(before)["phase1_misses"] == 1 and delta(before)["phase1_hits"] == 0
    assert executor.cache_size() == 1


def test_eviction_clears_it(ops, cache_capacity):
    cache_capacity(1)
    p1, _ = add_phases(ops)
    a, b = np.ones(4, np.float32), np.ones(5, np.float32)
    p1(a, a, np.empty_like(a))
    assert fastpath.table_size() == 1
    p1(b, b, np.empty_like(b))  # evicts a's plan: the C table must not keep it
    assert executor.cache_size() == 1 and fastpath.table_size() <= 1
    before = stats()
    p1(a, a, np.empty_like(a))
    assert delta(before)["phase1_hits"] == 0


def test_big_launch_releases_the_gil(ops):
    p1, p2 = add_phases(ops)
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((2, 1 << 20), dtype=np.float32)
    z = np.empty_like(x)
    p2(None, *p1(x, y, z))
    z[:] = 0
    size, ex = p1(x, y, z)
    assert ex.fast
    p2(None, size, ex)
    np.testing.assert_array_equal(z, x + y)


def test_eight_threads(ops):
    p1, p2 = add_phases(ops)
    errors: list[BaseException] = []
    tables: list[int] = [0] * 8
    before = stats()

    def worker(k: int) -> None:
        try:
            rng = np.random.default_rng(k)
            for i in range(400):
                n = (1, 7, 64, 1 << 16)[(i + k) % 4]
                x = rng.standard_normal(n, dtype=np.float32)
                y = rng.standard_normal(n, dtype=np.float32)
                z = np.empty_like(x)
                size, ex = p1(x, y, z)
                p2(None, size, ex)
                np.testing.assert_array_equal(z, x + y)
                if i == 200 and k % 2:
                    rt.clear_op_cache()  # only this thread's tables
            tables[k] = fastpath.table_size()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    x = np.ones(3, np.float32)
    p1(x, x, np.empty_like(x))
    mine = fastpath.table_size()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors[:3]
    assert tables == [4] * 8
    assert fastpath.table_size() == mine == 1
    assert delta(before)["phase1_hits"] >= 8 * 390


def test_attributes_are_part_of_the_key(probe):
    p1, p2 = probe.aclnnProbeCustomGetWorkspaceSize, probe.aclnnProbeCustom
    x = np.arange(10, dtype=np.float32)
    y = np.empty_like(x)
    hits = []
    for scale in (2.0, 3.0, 2.0, 3.0, 2, 2, np.float32(2.0), np.float32(2.0)):
        before = stats()
        size, ex = p1(x, scale, y)
        p2(rt.malloc(size) if size else None, size, ex)
        np.testing.assert_array_equal(y, float(scale) * x)
        hits.append(delta(before)["phase1_hits"])
    # 2 (an int) for a float attribute is 2.0: the same key (opkey.h encodes the spec's type);
    # numpy scalar attributes take the Python path
    assert hits == [0, 0, 1, 1, 1, 1, 0, 0]


# ---- one key: the C fast path's key of a call equals cache_key.py's --------------------------------

from hypothesis import HealthCheck, given  # noqa: E402
from hypothesis import settings as hsettings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from opbuild.abi.ge_types import DTYPE_TO_GE, dtype_name  # noqa: E402
from opbuild.runtime.call import cache_key  # noqa: E402

array_strategy = st.tuples(st.lists(st.integers(1, 5), min_size=0, max_size=3),
                           st.sampled_from([np.float32, np.float16, np.int32]), st.integers(1, 2))


def _slot(a: np.ndarray):
    return (DTYPE_TO_GE[dtype_name(a.dtype)], 2, a.shape, tuple(s // a.itemsize for s in a.strides), 0)


def _make(spec) -> np.ndarray:
    dims, dtype, step = spec
    base = np.zeros([d * step for d in dims] or [1], dtype)
    return base[tuple(slice(None, None, step) for _ in dims)] if dims else np.zeros((), dtype)


@hsettings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arrays=st.lists(array_strategy, min_size=3, max_size=3),
       slope=st.one_of(st.floats(allow_nan=False), st.integers(-2**40, 2**40)),
       d=st.booleans(), env=st.sampled_from([None, "ascend910b", ""]))
def test_c_fast_path_key_equals_python_key(ops, builtin_ops, monkeypatch, arrays, slope, d, env):
    if env is None:
        monkeypatch.delenv("OPBUILD_SOC", raising=False)
    else:
        monkeypatch.setenv("OPBUILD_SOC", env)
    settings.set_deterministic(d)
    try:
        x, y, z = (_make(s) for s in arrays)
        dp = settings.DP[0]
        add = ops.aclnnAddCustomTemplateGetWorkspaceSize
        expected = cache_key.key_words(ops._OPS["AddCustomTemplate"].key_id, cache_key.env_token(), dp,
                                       [_slot(x), _slot(y), _slot(z)], [])
        assert fastpath.key_words(add, x, y, z) == expected
        leaky = builtin_ops.aclnnLeakyReluCustomGetWorkspaceSize
        expected = cache_key.key_words(builtin_ops._OPS["LeakyReluCustom"].key_id, cache_key.env_token(), dp,
                                       [_slot(x), _slot(z)], [("float", float(slope))])
        assert fastpath.key_words(leaky, x, slope, z) == expected
    finally:
        settings.set_deterministic(False)


def test_one_shot_hits_run_in_c_and_match_the_python_call(ops):
    # api.call is a C OneShot in front of the Python call (oneshot.c): the first call of a
    # signature fills the output-specs cache in Python; the next ones allocate and run both
    # phases in C, without the Python call; anything else goes to it (same results)
    from opbuild.runtime import api
    from opbuild.runtime.tensor import Tensor

    assert isinstance(api.call, fastpath.OneShot) and api.call.fn is api.call.__wrapped__
    rt.clear_op_cache()
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = np.full((3, 4), 0.5, np.float32)
    first = ops.add_custom_template(x, y)  # Python: fills the specs cache
    python_calls = []

    def spy(*args):
        python_calls.append(args)
        return api.call.fn(*args)

    call = fastpath.OneShot(spy, executor._CACHE)  # the same object, with an observed Python call
    op = ops._OPS["AddCustomTemplate"]
    hits = [call(op, (x, y), (), None, None, None) for _ in range(3)]
    assert python_calls == []
    for got in (first, *hits):
        assert type(got) is np.ndarray and got.dtype == np.float32 and got.shape == (3, 4)
        np.testing.assert_array_equal(got, x + y)
    assert len({id(a) for a in hits}) == 3  # a new output each call
    before = stats()
    ops.add_custom_template(x, y)
    # the hit of phase 1 and 2 in C, from the arrays' memory (oneshot.c raw_call, the torch kernel's)
    assert delta(before)["phase1_hits"] == 1 and delta(before)["oneshot_raw"] == 1
    # a Tensor input, a per-call setting, an unknown signature: the Python call
    t = ops.add_custom_template(Tensor(x), y)
    assert isinstance(t, Tensor)
    np.testing.assert_array_equal(t.array, x + y)
    np.testing.assert_array_equal(ops.add_custom_template(x, y, deterministic=True), x + y)
    np.testing.assert_array_equal(ops.add_custom_template(x[:2], y[:2]), x[:2] + y[:2])
    with pytest.raises(AclnnError):
        ops.add_custom_template(x, y[:2])
    for args in ((op, (Tensor(x), y), ()), (op, (x, y), (), True), (op, [x, y], ()), (op, (x[:1], y[:1]), ())):
        out = call(*args)
        assert python_calls[-1] == args
        np.testing.assert_array_equal(out.array if isinstance(out, Tensor) else out, args[1][0] + args[1][1])


def test_one_shot_arrays_the_memory_hit_does_not_take_are_still_right(ops):
    """The numpy one-shot's C hit launches from the arrays' memory; a transposed input (its key
    has other strides) and an input off 16-byte alignment go the phases' way: the same results,
    never a launch on the wrong memory."""
    rt.clear_op_cache()
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = np.full((4, 3), 0.25, np.float32)
    for _ in range(3):
        np.testing.assert_array_equal(ops.add_custom_template(x.T, y), x.T + y)
    raw = np.zeros(13, np.float32)
    a, b = raw[1:], np.arange(12, dtype=np.float32)  # a is 4 bytes off its buffer's alignment
    a[:] = 2.0
    for _ in range(3):
        np.testing.assert_array_equal(ops.add_custom_template(a, b), a + b)


def test_eviction_keeps_the_table_as_small_as_the_cache(ops, cache_capacity):
    """A stream of new shapes through a full cache: the Python front end's plans and the C hit's
    are one table (plancache.c), bounded by the one capacity."""
    cache_capacity(8)
    p1, _ = add_phases(ops)
    for n in range(1, 60):
        x = np.ones(n, np.float32)
        assert p1(x, x, np.empty_like(x))[1].fast
        assert executor.cache_size() == fastpath.table_size() == min(n, 8)
    x = np.ones(3, np.float32)  # evicted long ago: a miss again, not a stale hit
    before = stats()
    p1(x, x, np.empty_like(x))
    assert delta(before)["phase1_hits"] == 0


# ---- the hit path's shortcuts: the memo of the last hit, recycled executors -------------------------

def _row_strided(row_bytes: int) -> np.ndarray:
    """A (1, 4) fp32 array whose row stride is `row_bytes` (contiguous: the stride of a size-1 dim
    does not matter to numpy, but it is part of the key)."""
    base = np.ones(row_bytes // 4 * 2, np.float32)
    return np.lib.stride_tricks.as_strided(base, shape=(1, 4), strides=(row_bytes, 4))


def test_last_hit_memo_serves_only_the_same_call(ops):
    """Phase1 remembers its last hit; calls differing in any part of the key from it (shape, dtype,
    strides) alternate with it and must each get their own plan, the one the Python path gives."""
    p1, p2 = add_phases(ops)
    calls = []
    for x in (np.ones(4, np.float32), np.ones(5, np.float32), np.ones(4, np.float16), np.ones((4, 1), np.float32),
              _row_strided(16), _row_strided(32)):
        calls.append((x, x.copy(), np.empty_like(x)) if x.base is None else (x, x, np.empty((1, 4), np.float32)))
    for args in calls:
        p2(None, *p1(*args))  # misses: plans made and registered
    plans = [p1.__wrapped__(*args)[1].plan for args in calls]
    assert len({id(p) for p in plans}) == len(calls)  # six keys
    before = stats()
    for _ in range(3):
        for args, plan in zip(calls, plans):
            for _ in range(2):  # the second call of a pair is served by the memo
                size, ex = p1(*args)
                assert ex.fast and ex.plan is plan
                args[2][...] = 0
                p2(None, size, ex)
                np.testing.assert_array_equal(args[2], args[0] + args[1])
    d = delta(before)
    assert d["phase1_hits"] == 36 and d["phase1_misses"] == 0


def test_recycled_executors_start_fresh_and_nothing_leaks(ops):
    """Executors are recycled (a free list): many alive at once are all distinct and run; a recycled
    one is not used nor repeatable; churning through many keeps memory and array references flat."""
    import gc
    import sys

    p1, p2 = add_phases(ops)
    x = np.ones(3, np.float32)
    z = np.empty_like(x)
    p2(None, *p1(x, x, z))
    live = [p1(x, x, z) for _ in range(100)]  # more than the free list holds
    assert len({id(ex) for _, ex in live}) == 100 and all(ex.fast and not ex.used for _, ex in live)
    for i, (size, ex) in enumerate(live):
        if i % 2:
            ex.set_repeatable()
        z[:] = 0
        assert p2(None, size, ex) == 0
        np.testing.assert_array_equal(z, 2 * x)
    assert all(ex.used for _, ex in live) and sum(ex.repeatable for _, ex in live) == 50
    del live, ex
    for _ in range(40):
        size, ex = p1(x, x, z)
        assert ex.fast and not ex.used and not ex.repeatable
        p2(None, size, ex)
        assert error_of(p2, None, size, ex)[0] == ACLNN_ERR_PARAM_INVALID  # runs once, as a new one
    del ex

    def churn(n: int) -> None:
        for _ in range(n):
            size, ex = p1(x, x, z)
            p2(None, size, ex)

    churn(1000)
    gc.collect()
    blocks, refs = sys.getallocatedblocks(), sys.getrefcount(x)
    churn(20000)
    gc.collect()
    assert sys.getrefcount(x) == refs
    assert sys.getallocatedblocks() - blocks < 200
