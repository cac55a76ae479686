"""The cache miss of phase 1: its C helpers equal their Python references (describe_call, the
tiling and op_proto functions run on the C-filled context), and what a signature keeps
(plans.Prepared) is dropped when the package changes."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import opbuild.runtime as rt
from opbuild.runtime.binaries.package import STAMP_INTERVAL_NS
from opbuild.runtime.call import plans
from opbuild.runtime.call.arguments import _DTYPE_NAMES, _dtype_name
from opbuild.runtime.errors import AclnnError
from opbuild.runtime.host import tiling_context as tc
from opbuild.runtime.reference import describe as reference_describe
from opbuild.runtime.reference import executor as reference_executor

DTYPES = [np.float32, np.float16, np.int32, np.int8, np.int64, np.uint8, np.bool_]
for _d in DTYPES:
    _dtype_name(np.dtype(_d))  # memoized, as normalize_tensors leaves them

array = st.builds(
    lambda dt, shape, step, fmt: (np.zeros(shape, dt)[..., ::step] if shape else np.zeros(shape, dt), fmt),
    st.sampled_from(DTYPES), st.lists(st.integers(0, 5), max_size=4).map(tuple), st.integers(1, 2),
    st.sampled_from(["ND", "NCHW"]))
groups = st.lists(st.lists(array, max_size=3), max_size=4)


@pytest.mark.skipif(plans._fastpath is None, reason="opbuild.runtime._fastpath is not built")
@settings(max_examples=150, deadline=None)
@given(groups, groups)
def test_describe_call_in_c_equals_the_python_reference(inputs, outputs):
    fast = plans._fastpath.describe_call(inputs, outputs, _DTYPE_NAMES)
    slow = reference_describe.describe_call(inputs, outputs, _DTYPE_NAMES)
    assert fast == slow
    assert all(type(x) is bool for x in fast[3:])


@pytest.mark.skipif(plans._fastpath is None, reason="opbuild.runtime._fastpath is not built")
def test_describe_call_refuses_an_unknown_dtype_as_the_reference():
    a = np.zeros(3, np.complex128)
    for fn in (plans._fastpath.describe_call, reference_describe.describe_call):
        with pytest.raises(KeyError):
            fn([[(a, "ND")]], [], _DTYPE_NAMES)


def _miss_result(call):
    """(outputs, error text) of a call made after emptying the cache."""
    rt.clear_op_cache(selections=True)
    try:
        return call(), None
    except AclnnError as exc:
        return None, str(exc)


@pytest.mark.parametrize("scale", [2.0, -6.0, -7.0, -9.0])
def test_tiling_on_the_c_context_equals_the_ctypes_path(probe_package, monkeypatch, scale):
    probe = rt.import_ops(probe_package)
    x = np.arange(16, dtype=np.float32)
    fast = _miss_result(lambda: probe.probe_custom(x, scale=scale))
    monkeypatch.setattr(tc, "_FILL", None)  # every context filled and read through ctypes
    slow = _miss_result(lambda: probe.probe_custom(x, scale=scale))
    assert (fast[1], None if fast[0] is None else fast[0].tolist()) == \
           (slow[1], None if slow[0] is None else slow[0].tolist())
    assert (fast[1] is None) == (scale == 2.0)


@pytest.mark.parametrize("shapes", [((2, 3), (3,)), ((4, 1), (1, 5)), ((2, 3), (4,))])
def test_inference_on_the_c_context_equals_the_ctypes_path(ops, monkeypatch, shapes):
    x, y = (np.ones(s, np.float32) for s in shapes)
    fast = _miss_result(lambda: ops.mul_custom(x, y))
    monkeypatch.setattr(tc, "_FILL", None)
    slow = _miss_result(lambda: ops.mul_custom(x, y))
    assert (fast[1], None if fast[0] is None else fast[0].shape) == (slow[1], None if slow[0] is None else slow[0].shape)
    assert (fast[1] is None) == (shapes != ((2, 3), (4,)))


def test_a_signature_keeps_its_selection_until_the_package_changes(package_copy):
    ops = rt.import_ops(package_copy)
    op = ops._OPS["AddCustomTemplate"]
    rt.clear_op_cache(selections=True)
    calls = []
    fn = op.fragment_fn(op.package)
    op._fragment_fn = lambda ctx: calls.append(ctx) or fn(ctx)
    for n in (4, 5, 6):  # one signature, three shapes: one GenSimplifiedKey
        x = np.ones(n, np.float32)
        np.testing.assert_array_equal(ops.add_custom_template(x, x), 2 * x)
    assert len(calls) == 1
    wrong = np.empty(3, np.float32)
    with pytest.raises(AclnnError, match=r"output 'z' has shape \[3\], expected \[4\]"):  # checked on a kept signature too
        ops.aclnnAddCustomTemplateGetWorkspaceSize(np.ones(4, np.float32), np.ones(4, np.float32), wrong)
    config = next((package_copy / "op_impl/ai_core/tbe/kernel/config").rglob("binary_info_config.json"))
    config.write_text(config.read_text())  # the package changes: a new index, a new selection
    st = config.stat()
    os.utime(config, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    time.sleep(2 * STAMP_INTERVAL_NS / 1e9)
    x = np.ones(7, np.float32)
    np.testing.assert_array_equal(ops.add_custom_template(x, x), 2 * x)
    assert len(calls) == 2


def _misaligned(n: int) -> np.ndarray:
    return np.frombuffer(bytearray(4 * n + 1), np.uint8)[1:].view(np.float32) if n else np.zeros(0, np.float32)


@pytest.mark.skipif(plans._fastpath is None, reason="opbuild.runtime._fastpath is not built")
@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(DTYPES), st.integers(0, 9), st.booleans()), max_size=6),
       st.integers(0, 2**64 - 1))
def test_pack_direct_in_c_equals_the_python_reference(specs, tiling_addr):
    arrays = [_misaligned(n) if bad else np.zeros(n, dt) for dt, n, bad in specs]
    assert plans._fastpath.pack_direct(arrays, tiling_addr) == reference_executor.direct_args(arrays, tiling_addr)
