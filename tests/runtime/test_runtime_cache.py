"""The op-parameter cache: a hit runs neither GenSimplifiedKey nor tiling; per-thread caches;
ResetCacheThreadLocal (keeps the cache) and clear_op_cache; eviction; many threads calling at once."""

from __future__ import annotations

import os
import random
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from concurrency import in_threads

import opbuild.runtime as rt
from opbuild.runtime import AclnnError, api
from opbuild.runtime.call import executor
from opbuild.runtime.call.plan_cache import _fastpath
from opbuild.runtime.call.plans import STAMP_INTERVAL_NS
from opbuild.runtime.host import c_callbacks


class Counter:
    def __init__(self, fn):
        self.fn = fn
        self.calls = 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.fn(*args, **kwargs)


class TilingCalls:
    """Counts the tiling function's runs: the three places it is called (on a C-filled TilingBlock,
    on a ctypes context without the extension, and by the native miss of a known call signature,
    native/src/signature_miss.c, which counts its own)."""

    def __init__(self, monkeypatch):
        self.counters = [Counter(c_callbacks.tiling_on_block), Counter(c_callbacks._run_tiling_ctypes)]
        monkeypatch.setattr(c_callbacks, "tiling_on_block", self.counters[0])
        monkeypatch.setattr(c_callbacks, "_run_tiling_ctypes", self.counters[1])
        self.native0 = self._native()

    @staticmethod
    def _native() -> int:
        return _fastpath.stats()["phase1_native_misses"] if _fastpath is not None else 0

    @property
    def calls(self) -> int:
        return sum(c.calls for c in self.counters) + self._native() - self.native0


@pytest.fixture
def tiling_calls(monkeypatch):
    return TilingCalls(monkeypatch)


def _count_fragments(monkeypatch, op) -> Counter:
    fn = op.fragment_fn(op.package)
    counter = Counter(fn)
    monkeypatch.setattr(op, "_fragment_fn", counter)
    return counter


def test_hit_runs_neither_table_key_nor_tiling(ops, monkeypatch, tiling_calls):
    op = ops._OPS["AddCustomTemplate"]
    rt.clear_op_cache(selections=True)  # earlier tests' calls of this signature are forgotten
    keys = _count_fragments(monkeypatch, op)
    x = np.ones((4, 100), np.float32)
    for k in range(20):
        a, b = x + k, x * k  # new arrays each call, same signature
        z = np.empty_like(a)
        size, ex = ops.aclnnAddCustomTemplateGetWorkspaceSize(a, b, z)
        ops.aclnnAddCustomTemplate(None, size, ex)
        np.testing.assert_array_equal(z, a + b)
    assert (keys.calls, tiling_calls.calls) == (1, 1)
    # generic entry point and one-shot share the cached plan
    api.get_workspace_size(op, (x, x), (), (np.empty_like(x),))
    ops.add_custom_template(x, x)
    assert (keys.calls, tiling_calls.calls) == (1, 1)
    # another shape, dtype or d is another plan
    ops.add_custom_template(np.ones(7, np.float32), np.ones(7, np.float32))
    ops.add_custom_template(x.astype(np.float16), x.astype(np.float16))
    ops.add_custom_template(x, x, deterministic=True)
    # the new shape tiles again but keeps its signature's selection (the table rule sees no shapes)
    assert (keys.calls, tiling_calls.calls) == (3, 4)


def test_hit_runs_neither_python_callback_nor_tiling(builtin_copy, tiling_calls):
    """LeakyReluCustom (a built-in op) with a counting copy of its Python key rule."""
    package_copy = builtin_copy
    rule = package_copy / "op_api/python/keyrules/leaky_relu_custom/key_rule.py"
    rule.write_text(
        "CALLS = []\n"
        "def gen_simplified_key(ctx):\n"
        "    CALLS.append(ctx.input_dtype(0))\n"
        "    kind = 'relu' if ctx.attr('negative_slope') == 0.0 else 'leaky'\n"
        "    return kind + '_' + {'float16': 'fp16', 'float32': 'fp32', 'bfloat16': 'bf16'}[ctx.input_dtype(0)]\n")
    ops = rt.import_ops(package_copy)
    x = np.linspace(-2, 2, 64, dtype=np.float32)
    for _ in range(10):
        y = np.empty_like(x)
        size, ex = ops.aclnnLeakyReluCustomGetWorkspaceSize(x, 0.5, y)
        ops.aclnnLeakyReluCustom(None, size, ex)
        np.testing.assert_allclose(y, np.where(x >= 0, x, 0.5 * x), rtol=1e-6)
    module = next(m for m in list(sys.modules.values())
                  if getattr(m, "__file__", None) and Path(m.__file__).resolve() == rule.resolve())
    assert module.CALLS == ["float32"] and tiling_calls.calls == 1
    ops.leaky_relu_custom(x, negative_slope=0.0)  # the attribute is in the key
    assert module.CALLS == ["float32", "float32"] and tiling_calls.calls == 2
    ops.leaky_relu_custom(x, negative_slope=0.0)
    assert len(module.CALLS) == 2 and tiling_calls.calls == 2
    ops.leaky_relu_custom(x[:10], negative_slope=0.0)  # a Python rule may read shapes: a new shape asks it
    assert len(module.CALLS) == 3 and tiling_calls.calls == 3


def test_hit_runs_neither_c_callback_nor_tiling(ops, monkeypatch, tiling_calls):
    counter = Counter(c_callbacks.CKeyCallback.__call__)
    monkeypatch.setattr(c_callbacks.CKeyCallback, "__call__", lambda self, ctx: counter(self, ctx))
    xs = [np.ones((3, 5), np.float32) * k for k in range(3)]
    for _ in range(5):
        y = np.empty((3, 5), np.float32)
        size, ex = ops.aclnnAddNCustomGetWorkspaceSize(xs, y)
        ops.aclnnAddNCustom(None, size, ex)
        np.testing.assert_array_equal(y, xs[0] + xs[1] + xs[2])
    assert (counter.calls, tiling_calls.calls) == (1, 1)
    ops.add_n_custom(xs[:2])  # another list length is another plan
    assert (counter.calls, tiling_calls.calls) == (2, 2)


def test_hit_with_default_keys_and_strides(ops, monkeypatch, tiling_calls):
    op = ops._OPS["MulCustom"]
    rt.clear_op_cache(selections=True)
    keys = _count_fragments(monkeypatch, op)
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    for _ in range(3):
        ops.mul_custom(base, base)
    assert (keys.calls, tiling_calls.calls) == (1, 1)
    ops.mul_custom(base[:, ::2], base[:, ::2])  # strides are in the plan's key, not in the selection's
    ops.mul_custom(base[:, ::2], base[:, ::2])
    assert (keys.calls, tiling_calls.calls) == (1, 2)
    rt.clear_op_cache(selections=True)  # forgotten: the key rule runs again
    ops.mul_custom(base, base)
    assert (keys.calls, tiling_calls.calls) == (2, 3)


def test_a_call_without_a_key_is_planned_every_time(ops, tiling_calls):
    # strides not in whole elements have no encoding in the key (opkey.h: strides in elements):
    # such a call is right, and tiled on every call rather than cached under a wrong key
    rt.clear_op_cache()
    raw = np.zeros(64, np.uint8)
    x = np.lib.stride_tricks.as_strided(raw[:4].view(np.float32), shape=(4,), strides=(6,))
    x[...] = [1.5, -2.0, 3.25, 4.0]  # 4 bytes every 6: no overlap
    y = np.ones(4, np.float32)
    z = np.empty(4, np.float32)
    for k in range(1, 3):
        size, ex = ops.aclnnAddCustomTemplateGetWorkspaceSize(x, y, z)
        ops.aclnnAddCustomTemplate(None, size, ex)
        np.testing.assert_array_equal(z, x.copy() + 1)
        assert tiling_calls.calls == k and executor.cache_size() == 0


def test_clear_op_cache_clears_only_the_calling_thread(ops, tiling_calls):
    x = np.ones(16, np.float32)
    ops.add_custom_template(x, x)
    assert executor.cache_size() == 1
    worker_sizes = []
    errors = []
    go_reset, reset_done = threading.Event(), threading.Event()

    def worker():
        try:
            ops.add_custom_template(x, x)
            ops.add_custom_template(x, x)
            worker_sizes.append(executor.cache_size())
            go_reset.wait(10)
            rt.clear_op_cache()
            worker_sizes.append(executor.cache_size())
            ops.add_custom_template(x, x)  # a miss again on this thread
            worker_sizes.append(executor.cache_size())
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            reset_done.set()

    t = threading.Thread(target=worker)
    t.start()
    go_reset.set()
    reset_done.wait(10)
    t.join(10)
    assert not errors
    assert worker_sizes == [1, 0, 1]
    assert tiling_calls.calls == 3  # main miss, worker miss, worker miss after its clear
    assert executor.cache_size() == 1  # the main thread's plan survived the worker's clear
    ops.add_custom_template(x, x)
    assert tiling_calls.calls == 3
    rt.clear_op_cache()
    assert executor.cache_size() == 0
    ops.add_custom_template(x, x)
    assert tiling_calls.calls == 4


def test_reset_cache_thread_local_keeps_the_cache(ops, tiling_calls):
    """CANN's ResetCacheThreadLocal resets per-call state only: the next call still hits."""
    x = np.ones(16, np.float32)
    z = np.empty_like(x)
    size, ex = ops.aclnnAddCustomTemplateGetWorkspaceSize(x, x, z)
    ops.aclnnAddCustomTemplate(None, size, ex)
    assert (tiling_calls.calls, executor.cache_size()) == (1, 1)
    for _ in range(3):
        rt.ResetCacheThreadLocal()
        size, ex = ops.aclnnAddCustomTemplateGetWorkspaceSize(x, x, z)
        ops.aclnnAddCustomTemplate(None, size, ex)
    assert (tiling_calls.calls, executor.cache_size()) == (1, 1)  # three hits after the resets
    np.testing.assert_array_equal(z, 2 * x)


def test_cache_is_bounded_and_keeps_recently_used_plans(ops, cache_capacity, tiling_calls):
    cache_capacity(3)
    arrays = {n: np.ones(n, np.float32) for n in (1, 2, 3, 4, 5)}

    def call(n):
        ops.add_custom_template(arrays[n], arrays[n])

    for n in (1, 2, 3):
        call(n)
    assert executor.cache_size() == 3 and tiling_calls.calls == 3
    call(1)  # used again: survives the next eviction
    call(4)  # evicts 2, the least recently used
    assert executor.cache_size() == 3 and tiling_calls.calls == 4
    call(1)
    call(3)
    call(4)
    assert tiling_calls.calls == 4
    call(2)
    assert tiling_calls.calls == 5 and executor.cache_size() == 3


def test_eight_threads_thousand_mixed_calls_each(ops, builtin_ops):
    """Custom and built-in ops mixed on every thread."""
    import ml_dtypes

    counts = [0] * 8

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        nrng = np.random.default_rng(seed)
        for _ in range(1000):
            kind = rng.randrange(7)
            n = rng.choice((1, 3, 64, 1009, 5000))
            if kind == 0:
                x, y = nrng.standard_normal((2, n), dtype=np.float32)
                z = np.empty_like(x)
                size, ex = ops.aclnnAddCustomTemplateGetWorkspaceSize(x, y, z)
                ops.aclnnAddCustomTemplate(None, size, ex)
                np.testing.assert_array_equal(z, x + y)
            elif kind == 1:
                x, y = nrng.standard_normal((2, n)).astype(np.float16)
                np.testing.assert_array_equal(ops.add_custom_template(x, y), x + y)
            elif kind == 2:
                x = nrng.integers(-100, 100, (n,), dtype=np.int32)
                y = nrng.integers(-100, 100, (1,), dtype=np.int32)
                np.testing.assert_array_equal(ops.mul_custom(x, y), x * y)
            elif kind == 3:
                slope = rng.choice((0.0, 0.25))
                x = nrng.standard_normal(n).astype(ml_dtypes.bfloat16)
                want = np.where(x.astype(np.float32) >= 0, x.astype(np.float32), np.float32(slope) * x.astype(np.float32))
                np.testing.assert_array_equal(builtin_ops.leaky_relu_custom(x, negative_slope=slope),
                                              want.astype(ml_dtypes.bfloat16))
            elif kind == 4:
                xs = [nrng.standard_normal(n, dtype=np.float32) for _ in range(rng.randrange(1, 4))]
                want = xs[0].copy()
                for x in xs[1:]:
                    want = want + x
                np.testing.assert_array_equal(ops.add_n_custom(xs), want)
            elif kind == 5:
                x = nrng.standard_normal((n, 3), dtype=np.float32)
                y = np.empty(3, np.float32)
                size, ex = builtin_ops.aclnnReduceSumCustomGetWorkspaceSize(x, [0], False, y, deterministic=True)
                ws = np.empty(size, np.uint8) if size else None
                builtin_ops.aclnnReduceSumCustom(ws, size, ex)
                np.testing.assert_allclose(y, x.astype(np.float64).sum(axis=0), rtol=1e-4, atol=1e-4)
            else:
                x = nrng.standard_normal((n, 2), dtype=np.float32)
                np.testing.assert_array_equal(ops.add_custom_template(x.T, x.T), x.T + x.T)
            counts[seed] += 1

    errors = in_threads(worker, 8, 120)
    assert not errors, errors[:3]
    assert counts == [1000] * 8


def test_eviction_never_drops_the_plan_just_stored(ops, cache_capacity, tiling_calls):
    cache_capacity(2)
    a, b, c = (np.ones(n, np.float32) for n in (1, 2, 3))
    ops.add_custom_template(a, a)
    ops.add_custom_template(b, b)
    ops.add_custom_template(a, a)
    ops.add_custom_template(b, b)  # both hot
    ops.add_custom_template(c, c)  # stored; one of a, b goes
    assert executor.cache_size() == 2 and tiling_calls.calls == 3
    ops.add_custom_template(c, c)
    assert tiling_calls.calls == 3


# ---- what else is in the key: SoC, search environment, the package's stamp --------------------------

def _paths(ops):
    """The three Python entry points of a two-phase call: C fast path, the Python path it wraps, and
    the generic one (an ND Tensor takes the Python path's own branch)."""
    p1, p2 = ops.aclnnAddCustomTemplateGetWorkspaceSize, ops.aclnnAddCustomTemplate
    py1, py2 = getattr(p1, "__wrapped__", p1), getattr(p2, "__wrapped__", p2)

    def run(first, second, x, z):
        size, ex = first(x, x, z)
        second(None, size, ex)
        np.testing.assert_array_equal(z, 2 * np.asarray(x))

    return {"fast": lambda x, z: run(p1, p2, x, z), "python": lambda x, z: run(py1, py2, x, z),
            "one-shot": lambda x, z: np.testing.assert_array_equal(ops.add_custom_template(x, x), 2 * x)}


@pytest.mark.parametrize("path", ["fast", "python", "one-shot"])
def test_soc_change_selects_again(ops, monkeypatch, tiling_calls, path):
    call = _paths(ops)[path]
    x = np.ones(16, np.float32)
    z = np.empty_like(x)
    call(x, z)
    call(x, z)
    assert tiling_calls.calls == 1
    monkeypatch.setenv("OPBUILD_SOC", "ascend310p")  # the sample package has no binaries for it
    with pytest.raises(AclnnError) as err:
        call(x, z)
    assert "ascend310p" in err.value.message  # selected again (and found nothing), not the cached plan
    monkeypatch.delenv("OPBUILD_SOC")
    call(x, z)
    assert tiling_calls.calls == 1  # the first SoC's plan is still cached


@pytest.mark.parametrize("var", ["ASCEND_CUSTOM_OPP_PATH", "ASCEND_OPP_PATH"])
@pytest.mark.parametrize("path", ["fast", "python"])
def test_search_environment_change_selects_again(ops, monkeypatch, tmp_path, tiling_calls, var, path):
    call = _paths(ops)[path]
    x = np.ones(16, np.float32)
    z = np.empty_like(x)
    call(x, z)
    monkeypatch.setenv(var, str(tmp_path))
    call(x, z)
    call(x, z)
    assert tiling_calls.calls == 2  # once per environment


@pytest.mark.parametrize("path", ["fast", "python", "one-shot"])
def test_package_rebuild_selects_again(ops, package, tiling_calls, path):
    call = _paths(ops)[path]
    x = np.ones(16, np.float32)
    z = np.empty_like(x)
    call(x, z)
    config = package / "op_impl/ai_core/tbe/kernel/config/ascend910b/binary_info_config.json"
    st = config.stat()
    os.utime(config, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # rebuilt in place
    time.sleep(2 * STAMP_INTERVAL_NS / 1e9)  # hits re-check the stamp at most this often (plans.py, opkey.h)
    call(x, z)
    call(x, z)
    assert tiling_calls.calls == 2


@pytest.mark.skipif(executor._fastpath is None, reason="the C fast path is disabled (OPBUILD_NO_FASTPATH)")
def test_one_table_for_the_python_and_the_c_hit(ops, tiling_calls):
    """The Python front end files its plans in the C hit's table (there is no second table): a plan
    made by a call the C path does not take (a Tensor argument) is handed to the C path's miss of
    the same key (no tiling again), which files it launchable; the next plain call is a C hit."""
    fastpath = executor._fastpath
    rt.clear_op_cache()
    p1, p2 = ops.aclnnAddCustomTemplateGetWorkspaceSize, ops.aclnnAddCustomTemplate
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    z = np.zeros_like(x)
    size, ex = p1(rt.Tensor(x), x, z)  # the Python path: a miss, filed for Python lookups
    assert not ex.fast and tiling_calls.calls == 1
    assert executor.cache_size() == fastpath.table_size() == 1
    p2(None, size, ex)
    np.testing.assert_array_equal(z, 2 * x)
    before = fastpath.stats()
    size, ex = p1(x, x, z)  # the C path finds that plan: the Python phase 1 uses it, C files it launchable
    assert tiling_calls.calls == 1 and ex.fast
    assert fastpath.stats()["phase1_misses"] - before["phase1_misses"] == 1
    assert fastpath.stats()["registered"] - before["registered"] == 1
    assert executor.cache_size() == 1
    size, ex = p1(x, x, z)  # and now a C hit
    assert tiling_calls.calls == 1 and ex.fast
    assert fastpath.stats()["phase1_hits"] - before["phase1_hits"] == 1
    z[:] = 0
    p2(None, size, ex)
    np.testing.assert_array_equal(z, 2 * x)
    size, ex = p1(rt.Tensor(x), x, z)  # the Python path finds the launchable plan in the same table
    assert tiling_calls.calls == 1 and executor.cache_size() == 1
