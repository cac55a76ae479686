"""The native miss of a known call signature (native/src/signature_miss.c).

After a Python miss of a signature whose binary is selected once per signature, the next miss of
a new shape of it is planned in C: the context filled from the pristine one, InferShape, tiling,
bounds, one factory call (SignatureTiling.plan) and a native plan like the signature's first.
These tests hold its plans equal to the Python miss's, field by field and native record by native
record; its declines (a shape that differs, a failing tiling, a result out of bounds, hooks, a
rebuilt package, forgotten selections) go to the Python miss, whose errors stay what they were.
"""

from __future__ import annotations

import os
import re
import struct
import time

import numpy as np
import pytest
from concurrency import in_threads
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import opbuild.runtime as rt
from opbuild.abi.platform import platform
from opbuild.runtime import AclnnError, device
from opbuild.runtime.call import plans, tiling_bounds
from opbuild.runtime.call.plan_cache import _fastpath
from opbuild.runtime.call.plans import STAMP_INTERVAL_NS

pytestmark = pytest.mark.skipif(_fastpath is None, reason="the _fastpath extension is not built")


def native_misses() -> int:
    return _fastpath.stats()["phase1_native_misses"]


def registered() -> int:
    return _fastpath.stats()["registered"]


def plan_view(plan) -> dict:
    """What a Python plan holds, but its identity-bound parts (selection and signature objects,
    the tiling buffer's address, the check time)."""
    return {
        "op": plan.op, "full_key": plan.selection.full_key, "binary": plan.selection.entry.name,
        "kernel": plan.kernel, "block_dim": plan.block_dim, "tiling_key": plan.tiling_key,
        "workspace_size": plan.workspace_size, "tiling": bytes(plan.tiling_buffer), "empty": plan.empty,
        "contiguous": plan.contiguous, "nargs": plan.nargs, "ws_index": plan.ws_index, "fn": plan.fn.value,
        "sync": plan.sync, "stamp_path": plan.stamp_path, "stamp": plan.stamp, "attrs": plan.attrs,
        "record_parts": plan.record_parts, "kept": plan.signature is not None,
    }


def planned(phase1, args: tuple, native: bool) -> tuple[dict, dict, object]:
    """Phase 1 of `args` as a miss, natively (a program of the signature is kept) or in Python (the
    selections and programs forgotten first): the plan's view, its native plan's fields, the executor."""
    rt.clear_op_cache(selections=not native)
    before = native_misses()
    _, ex = phase1(*args)
    assert native_misses() - before == (1 if native else 0)
    words = _fastpath.key_words(phase1, *args)
    entry = _fastpath.plan_entry(struct.pack(f"={len(words)}Q", *words))
    assert entry is not None
    return plan_view(ex.plan), entry, ex


def launch(phase2, ex) -> None:
    size = ex.plan.workspace_size
    phase2(rt.malloc(size) if size else None, size, ex)


def assert_native_equals_python(phase1, phase2, first: tuple, args: tuple, outputs: list[np.ndarray]) -> None:
    """The native miss of `args` (its signature's program made by a Python miss of `first`) plans
    and computes what the Python miss of `args` does."""
    rt.clear_op_cache(selections=True)
    phase1(*first)  # the Python miss that keeps the signature's program
    native_view, native_entry, ex = planned(phase1, args, native=True)
    launch(phase2, ex)
    native_out = [o.copy() for o in outputs]
    python_view, python_entry, ex = planned(phase1, args, native=False)
    launch(phase2, ex)
    assert native_view == python_view
    assert native_entry == python_entry
    for a, b in zip(native_out, outputs, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.fixture(scope="module")
def probe(probe_package):
    return rt.import_ops(probe_package)


shapes = st.lists(st.integers(1, 70), min_size=1, max_size=4).map(tuple)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=shapes, shape=shapes, dtype=st.sampled_from([np.float32, np.float16]))
def test_add_native_miss_plans_what_the_python_miss_plans(ops, first, shape, dtype):
    p1, p2 = ops.aclnnAddCustomTemplateGetWorkspaceSize, ops.aclnnAddCustomTemplate
    rng = np.random.default_rng(len(shape))
    x, y = (rng.standard_normal(shape).astype(dtype) for _ in range(2))
    z = np.empty_like(x)
    f = np.ones(first, dtype)
    assert_native_equals_python(p1, p2, (f, f, np.empty_like(f)), (x, y, z), [z])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(a=st.integers(1, 40), b=st.integers(1, 40), broadcast=st.booleans())
def test_mul_native_miss_with_a_broadcast_shape_rule(ops, a, b, broadcast):
    """MulCustom's output shape is the broadcast of its inputs' (its op_proto shape function)."""
    p1, p2 = ops.aclnnMulCustomGetWorkspaceSize, ops.aclnnMulCustom
    x = np.arange(a * b, dtype=np.float32).reshape(a, b)
    y = np.full((1, b) if broadcast else (a, b), 1.5, np.float32)
    z = np.empty((a, b), np.float32)
    f = np.ones((2, 3), np.float32)
    assert_native_equals_python(p1, p2, (f, f, np.empty_like(f)), (x, y, z), [z])


@pytest.mark.parametrize("scale", [2.5, -3.0])  # -3.0: its tiling asks for a 4096-byte workspace
def test_probe_native_miss_with_an_attribute_and_a_workspace(probe, scale):
    p1, p2 = probe.aclnnProbeCustomGetWorkspaceSize, probe.aclnnProbeCustom
    for n in (1, 100, 5000, 70001):
        x = np.linspace(-1, 1, n, dtype=np.float32)
        y = np.empty_like(x)
        f = np.ones(8, np.float32)
        assert_native_equals_python(p1, p2, (f, scale, np.empty_like(f)), (x, scale, y), [y])
        if scale > 0:
            np.testing.assert_allclose(y, scale * x, rtol=1e-6)


def test_a_new_signature_is_a_python_miss_and_a_new_shape_of_it_a_native_one(ops):
    p1 = ops.aclnnAddCustomTemplateGetWorkspaceSize
    rt.clear_op_cache(selections=True)
    assert _fastpath.signature_programs(p1) == 0
    x = np.ones(3, np.float32)
    n0, r0 = native_misses(), registered()
    p1(x, x, np.empty_like(x))
    assert (native_misses() - n0, registered() - r0, _fastpath.signature_programs(p1)) == (0, 1, 1)
    for n in (5, 6, 7):
        y = np.ones(n, np.float32)
        p1(y, y, np.empty_like(y))
    assert (native_misses() - n0, registered() - r0) == (3, 1)
    p1(x.astype(np.float16), x.astype(np.float16), np.empty(3, np.float16))  # a new signature: Python
    assert (native_misses() - n0, registered() - r0, _fastpath.signature_programs(p1)) == (3, 2, 2)
    h = np.ones(9, np.float16)
    p1(h, h, np.empty_like(h))
    assert native_misses() - n0 == 4


def test_declined_calls_raise_what_the_python_miss_raises(ops):
    """An output of another shape than the shape rule's, or a tiling that rejects the call: the
    native miss declines, the Python miss raises (the same error as without any program)."""
    p1 = ops.aclnnAddCustomTemplateGetWorkspaceSize
    x4 = np.ones(4, np.float32)
    cases = [(x4, x4, np.empty(5, np.float32)), (x4, np.ones(6, np.float32), np.empty(4, np.float32))]
    for args in cases:
        rt.clear_op_cache(selections=True)
        with pytest.raises(AclnnError) as without_program:
            p1(*args)
        p1(np.ones(2, np.float32), np.ones(2, np.float32), np.empty(2, np.float32))  # keeps a program
        assert _fastpath.signature_programs(p1) == 1
        before = native_misses()
        with pytest.raises(AclnnError) as with_program:
            p1(*args)
        assert native_misses() == before
        assert (with_program.value.status, str(with_program.value)) == (
            without_program.value.status, str(without_program.value))


_Y_SHAPE_CHECK = re.compile(r"    if \(x->dim_num > OPBUILD_MAX_DIMS \|\| y->dim_num != x->dim_num\)\n.*?\(long long\)y->dims\[i\]\);\n",
                            re.S)


def _without_the_output_shape_check(text: str) -> str:
    """ProbeCustom's tiling.c, its checks of y's rank and dims taken out (only the size of x counts)."""
    edited, n = _Y_SHAPE_CHECK.subn("", text)
    assert n == 1, "the scaffold's tiling.c changed; update _Y_SHAPE_CHECK"
    return edited


@pytest.fixture(scope="module")
def lax_probe(tmp_path_factory, probe_builder):
    """ProbeCustom whose tiling does not look at its output's shape: only its shape rule does."""
    return rt.import_ops(probe_builder(tmp_path_factory.mktemp("lax_probe"), _without_the_output_shape_check))


def test_an_output_shape_only_the_shape_rule_rejects_is_an_error(lax_probe):
    """When only the shape rule (the op_proto InferShape) sees that an output has another shape,
    the native miss compares what it gave: no plan that would write y past its end."""
    p1, p2 = lax_probe.aclnnProbeCustomGetWorkspaceSize, lax_probe.aclnnProbeCustom
    x = np.ones(64, np.float32)
    rt.clear_op_cache(selections=True)
    with pytest.raises(AclnnError) as without_program:
        p1(x, 2.0, np.empty(8, np.float32))
    y = np.empty_like(x)
    size, ex = p1(x, 2.0, y)  # keeps a program
    p2(None, size, ex)
    np.testing.assert_array_equal(y, 2 * x)
    before = native_misses()
    with pytest.raises(AclnnError) as with_program:
        p1(x, 2.0, np.empty(8, np.float32))
    assert native_misses() == before
    assert str(with_program.value) == str(without_program.value)
    assert "output 'y' has shape [8], expected [64]" in str(with_program.value)


def test_output_shape_error_names_the_shapes(ops):
    p1 = ops.aclnnAddCustomTemplateGetWorkspaceSize
    p1(np.ones(2, np.float32), np.ones(2, np.float32), np.empty(2, np.float32))
    x4 = np.ones(4, np.float32)
    with pytest.raises(AclnnError, match=r"output 'z' has shape \[5\], expected \[4\]"):
        p1(x4, x4, np.empty(5, np.float32))


def test_a_result_out_of_the_programs_bounds_is_planned_by_the_python_miss(ops, monkeypatch):
    """The bounds a program checks are tiling_limits'; one that accepts only 1 block sends a
    multi-block call to the Python miss (check_tiling_result with the SoC's real limits)."""
    p1, p2 = ops.aclnnAddCustomTemplateGetWorkspaceSize, ops.aclnnAddCustomTemplate
    monkeypatch.setattr(plans, "tiling_limits", lambda info, sync: (1, 1 << 40))
    rt.clear_op_cache(selections=True)
    s = np.ones(64, np.float32)
    p1(s, s, np.empty_like(s))  # the program: at most 1 block
    n0, r0 = native_misses(), registered()
    small = np.ones(128, np.float32)
    p1(small, small, np.empty_like(small))  # one block: native
    big = np.arange(200_000, dtype=np.float32)
    z = np.empty_like(big)
    size, ex = p1(big, big, z)  # many blocks: out of the program's bounds, planned in Python
    assert ex.plan.block_dim > 1
    assert (native_misses() - n0, registered() - r0) == (1, 1)
    p2(None, size, ex)
    np.testing.assert_array_equal(z, 2 * big)


def test_phase_hooks_see_every_miss(ops):
    """While phase hooks are registered (the profiler's), misses run in Python, where they are timed."""
    p1 = ops.aclnnAddCustomTemplateGetWorkspaceSize
    x = np.ones(10, np.float32)
    p1(x, x, np.empty_like(x))
    seen = []
    plans.PHASE_HOOKS.append(lambda phase, op, start, end: seen.append(phase))
    try:
        before = native_misses()
        for n in (11, 12):
            y = np.ones(n, np.float32)
            p1(y, y, np.empty_like(y))
        assert native_misses() == before
        assert seen.count("phase1 miss") == 2
    finally:
        plans.PHASE_HOOKS.pop()
    y = np.ones(13, np.float32)
    p1(y, y, np.empty_like(y))
    assert native_misses() == before + 1


def test_forgotten_selections_void_the_programs(ops):
    p1 = ops.aclnnAddCustomTemplateGetWorkspaceSize
    x = np.ones(10, np.float32)
    p1(x, x, np.empty_like(x))
    rt.clear_op_cache(selections=True)
    n0, r0 = native_misses(), registered()
    y = np.ones(11, np.float32)
    p1(y, y, np.empty_like(y))
    assert (native_misses() - n0, registered() - r0) == (0, 1)


def test_a_package_rebuilt_in_place_selects_again(package_copy):
    ops = rt.import_ops(package_copy)
    p1 = ops.aclnnAddCustomTemplateGetWorkspaceSize
    x = np.ones(10, np.float32)
    p1(x, x, np.empty_like(x))
    config = package_copy / "op_impl/ai_core/tbe/kernel/config/ascend910b/binary_info_config.json"
    st_ = config.stat()
    os.utime(config, ns=(st_.st_atime_ns, st_.st_mtime_ns + 1_000_000_000))
    time.sleep(2 * STAMP_INTERVAL_NS / 1e9)
    n0, r0 = native_misses(), registered()
    y = np.ones(11, np.float32)
    p1(y, y, np.empty_like(y))
    assert (native_misses() - n0, registered() - r0) == (0, 1)  # the stale program is dropped
    y = np.ones(12, np.float32)
    p1(y, y, np.empty_like(y))
    assert native_misses() - n0 == 1  # ... and made again from the new selection


def test_threads_missing_one_signature_at_once_compute_right(ops):
    p1, p2 = ops.aclnnAddCustomTemplateGetWorkspaceSize, ops.aclnnAddCustomTemplate
    x = np.ones(10, np.float32)
    p1(x, x, np.empty_like(x))
    def work(seed: int) -> None:
        rng = np.random.default_rng(seed)
        for _ in range(60):
            n = int(rng.integers(1, 50_000))
            a = rng.standard_normal(n).astype(np.float32)
            z = np.empty_like(a)
            rt.clear_op_cache()
            size, ex = p1(a, a, z)
            p2(None, size, ex)
            np.testing.assert_array_equal(z, a + a)

    errors = in_threads(work, 4)
    assert not errors, errors[:3]


@settings(max_examples=300, deadline=None)
@given(block_dim=st.integers(0, (1 << 32) - 1), workspace=st.integers(0, (1 << 64) - 1),
       key=st.integers(0, 5), keys=st.lists(st.integers(0, 5), max_size=4).map(tuple),
       sync=st.booleans(), soc=st.sampled_from(["ascend910b", "ascend310p"]))
def test_the_native_bounds_are_check_tiling_results(block_dim, workspace, key, keys, sync, soc):
    """tiling_accepts with tiling_limits' numbers accepts exactly what check_tiling_result accepts."""
    info = platform(soc)
    for bd in (block_dim, info.max_block_dim, info.max_block_dim + 1, device.MAX_SYNC_BLOCKS,
               device.MAX_SYNC_BLOCKS + 1):
        for ws in (workspace, info.device_memory, info.device_memory + 1, (1 << 63) - 1, 1 << 63):
            max_blocks, max_workspace = tiling_bounds.tiling_limits(info, sync)
            accepted = _fastpath.tiling_accepts(bd, ws, key, keys, max_blocks, max_workspace)
            try:
                tiling_bounds.check_tiling_result("Op", "fn", bd, ws, info, sync, key, keys)
                ok = True
            except AclnnError:
                ok = False
            assert accepted == ok, (bd, ws, key, keys, sync, soc)
