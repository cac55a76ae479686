"""One native plan cache for both front ends (issue 24): the aclnn C ABI (acl library, opcache.c)
and the Python two-phase wrappers (_fastpath) keep their plans in the same core (plancache.c),
so they bound, evict and re-select identically: the same call sequence gives the same table
counters on both sides. A Python miss hands its plan to either as one record (plans.native_record)
read by one parser (plancache_plan_from_record), which refuses a malformed record by name.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import time

import numpy as np
import pytest

import opbuild.runtime as rt
from opbuild.runtime import capi
from opbuild.runtime.call import executor, plans
from opbuild.runtime.call.plans import STAMP_INTERVAL_NS
from test_capi_inprocess import acl, opapi  # noqa: F401
from test_native_cache import Add, stats

fastpath = pytest.importorskip("opbuild.runtime._fastpath")
if executor._fastpath is None:
    pytest.skip("the C fast path is disabled (OPBUILD_NO_FASTPATH)", allow_module_level=True)

COUNTERS = ("hits", "misses", "inserts", "stale", "size", "evictions")


class PyAdd:
    """AddCustomTemplate through the Python two-phase wrappers (the _fastpath front end)."""

    def __init__(self, ops, n: int) -> None:
        self.p1, self.p2 = ops.aclnnAddCustomTemplateGetWorkspaceSize, ops.aclnnAddCustomTemplate
        self.x = np.arange(n, dtype=np.float32)
        self.y = np.full(n, 0.5, np.float32)
        self.z = np.zeros(n, np.float32)

    def call(self) -> None:
        ws, ex = self.p1(self.x, self.y, self.z)
        assert self.p2(None, ws, ex) == 0
        np.testing.assert_array_equal(self.z, self.x + self.y)
        self.z[:] = 0


@pytest.fixture(scope="module")
def ops(package):
    return rt.import_ops(package.root)


@pytest.fixture(autouse=True)
def _empty_tables(acl):
    acl.opbuild_aclnn_clear_cache()
    rt.clear_op_cache()
    yield
    acl.opbuild_aclnn_clear_cache()
    rt.clear_op_cache()


def c_counters(acl) -> dict[str, int]:
    return {k: stats(acl)[k] for k in COUNTERS}


def py_counters() -> dict[str, int]:
    return {k: fastpath.cache_stats()[k] for k in COUNTERS}


def deltas(now: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: now[k] - before[k] if k != "size" else now[k] for k in COUNTERS}


def test_capacity_is_one_setting_read_by_both_libraries(package):
    """OPBUILD_PARAM_CACHE_SIZE bounds both libraries' tables (plancache.c reads it once)."""
    code = ("from opbuild.runtime import capi, _fastpath; import ctypes; acl = capi.acl_library(); "
            "acl.opbuild_aclnn_cache_capacity.restype = ctypes.c_size_t; "
            "acl.opbuild_aclnn_cache_capacity.argtypes = [ctypes.c_size_t]; "
            "print(acl.opbuild_aclnn_cache_capacity(0), _fastpath.cache_capacity())")
    for value, expected in (("3", "3 3"), (None, "1024 1024")):
        env = {k: v for k, v in os.environ.items() if k != "OPBUILD_PARAM_CACHE_SIZE"}
        if value is not None:
            env["OPBUILD_PARAM_CACHE_SIZE"] = value
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == expected.split()


def test_eviction_is_the_same_on_both_front_ends(acl, opapi, ops):  # noqa: F811
    """A full table drops its least recently used plan, counted alike by the C ABI and _fastpath."""
    import ctypes

    acl.opbuild_aclnn_cache_capacity.restype = ctypes.c_size_t
    acl.opbuild_aclnn_cache_capacity.argtypes = [ctypes.c_size_t]
    old_c, old_py = acl.opbuild_aclnn_cache_capacity(0), fastpath.cache_capacity()
    c_calls = {n: Add(acl, opapi, n) for n in (8, 16, 32)}
    py_calls = {n: PyAdd(ops, n) for n in (8, 16, 32)}
    sequence = (8, 16, 8, 32, 8, 16)  # the third shape evicts 16 (8 was used since); 16 again evicts 32
    try:
        assert acl.opbuild_aclnn_cache_capacity(2) == 2 and fastpath.cache_capacity(2) == 2
        # One front end after the other: a C ABI miss runs the Python phase 1, which looks its key up
        # in (and files its plan in) the Python front end's table, the _fastpath one.
        c0 = c_counters(acl)
        c_seen = []
        for n in sequence:
            c_calls[n].call()
            c_seen.append(deltas(c_counters(acl), c0))
        fastpath.reset()
        py0 = py_counters()
        py_seen = []
        for n in sequence:
            py_calls[n].call()
            py_seen.append(deltas(py_counters(), py0))
        assert c_seen == py_seen
        assert c_seen[-1] == {"hits": 2, "misses": 4, "inserts": 4, "stale": 0, "size": 2, "evictions": 2}
    finally:
        acl.opbuild_aclnn_cache_capacity(old_c)
        fastpath.cache_capacity(old_py)
        for a in c_calls.values():
            a.close()


def test_package_rebuilt_in_place_is_selected_again_on_both(acl, opapi, ops, package):  # noqa: F811
    c_add, py_add = Add(acl, opapi, 8), PyAdd(ops, 8)
    try:
        # Each front end's counters around its own calls: a C ABI miss runs the Python phase 1, which
        # looks its key up in the _fastpath table (the Python front end's).
        def c_delta() -> dict[str, int]:
            c0 = c_counters(acl)
            c_add.call()
            return deltas(c_counters(acl), c0)

        def py_delta() -> dict[str, int]:
            py0 = py_counters()
            py_add.call()
            return deltas(py_counters(), py0)

        py_delta(), c_delta()
        assert py_delta()["hits"] == 1 == c_delta()["hits"]
        config = package.root / "op_impl/ai_core/tbe/kernel/config/ascend910b/binary_info_config.json"
        st = config.stat()
        os.utime(config, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # rebuilt in place
        time.sleep(2 * STAMP_INTERVAL_NS / 1e9)  # a plan re-checks its stamp at most this often
        py_d, c_d = py_delta(), c_delta()
        assert c_d == py_d
        assert (c_d["hits"], c_d["stale"], c_d["inserts"]) == (0, 1, 1)
        assert py_delta()["hits"] == 1 == c_delta()["hits"]  # the new plan is a hit again
    finally:
        c_add.close()


def _record_of(ops) -> tuple[bytes, object]:
    x = np.arange(8, dtype=np.float32)
    z = np.empty_like(x)
    _, ex = ops.aclnnAddCustomTemplateGetWorkspaceSize(x, x, z)
    return plans.executor_record(ex), ex


def test_one_record_both_front_ends(ops):
    """The record a miss hands to C (plans.native_record) reads back, through the one parser, as
    the plan it was made from; the C ABI's record (capi.native_plan) is the same record."""
    record, ex = _record_of(ops)
    plan = ex.plan
    fields = fastpath.parse_plan_record(record)
    assert fields == {
        "fn": plan.fn.value, "block_dim": plan.block_dim, "nargs": plan.nargs, "ntensors": plan.nargs - 2,
        "sync": plan.sync, "empty": int(plan.empty), "workspace_size": plan.workspace_size,
        "tiling": bytes(plan.tiling_buffer), "itemsizes": bytes([4, 4, 4]), "stamp_path": plan.stamp_path,
        "key_text": plan.selection.full_key, "kernel": plan.kernel.name, "mtime_ns": plan.stamp[0],
        "size": plan.stamp[1], "inode": plan.stamp[2],
    }
    assert capi.native_plan(ex) == record


@pytest.mark.parametrize("damage, message", [
    (lambda r: r[:50], "50 bytes, shorter than its 120-byte header"),
    (lambda r: b"OPPLAN02" + r[8:], "magic 0x"),
    (lambda r: r + b"\0", "its header says"),
    (lambda r: r[:-1], "its header says"),
    (lambda r: r[:10 * 8] + struct.pack("=Q", 1 << 40) + r[11 * 8:], "field 0's length 1099511627776 exceeds"),
    (lambda r: r[:3 * 8] + struct.pack("=Q", 9) + r[4 * 8:], "9 launch arguments for 3 tensors"),
    (lambda r: r[:4 * 8] + struct.pack("=Q", 8) + r[5 * 8:], "flags 0x8 out of range"),
])
def test_malformed_record_is_refused_with_a_clear_error(ops, damage, message):
    record, _ = _record_of(ops)
    with pytest.raises(ValueError, match="^plan record: ") as err:
        fastpath.parse_plan_record(damage(record))
    assert message in str(err.value)
