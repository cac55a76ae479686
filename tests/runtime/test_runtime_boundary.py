"""The aclnn API's boundary: only AclnnError leaves it, with the status the failure stands for.

Foreign exceptions raised inside a call (MemoryError, RecursionError, DeviceError, ValueError)
become AclnnError; shapes that broadcast but are too large say so; a deterministic setting that
is not a bool is rejected; an executor is checked against the op it is used with.
"""

from __future__ import annotations

import numpy as np
import pytest

import opbuild.runtime as rt
from opbuild.runtime import (
    ACLNN_ERR_INNER,
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_RUNTIME_ERROR,
    AclnnError,
    device,
    settings,
)
from opbuild.runtime.call import executor


def _status(fn, *args, **kwargs) -> AclnnError:
    with pytest.raises(AclnnError) as err:
        fn(*args, **kwargs)
    return err.value


@pytest.mark.parametrize("exc, status", [
    (MemoryError("no more"), ACLNN_ERR_INNER),
    (RecursionError("maximum recursion depth exceeded"), ACLNN_ERR_INNER),
    (device.DeviceError("device lost"), ACLNN_ERR_RUNTIME_ERROR),
    (ValueError("bad value"), ACLNN_ERR_PARAM_INVALID),
])
def test_foreign_exceptions_of_phase1_become_aclnn_errors(ops, monkeypatch, exc, status):
    def failing_build(*args, **kwargs):
        raise exc

    monkeypatch.setattr(executor, "build_plan", failing_build)
    # The Python miss, which calls build_plan: an earlier test may have left this call signature a
    # program of the native miss (native/src/signature_miss.c), which plans new shapes in C.
    rt.clear_op_cache(selections=True)
    x = np.ones(5, np.float32)
    err = _status(ops.aclnnAddCustomTemplateGetWorkspaceSize, x, x, np.empty_like(x))
    assert err.status == status and type(exc).__name__ in err.message and "aclnnAddCustomTemplate" in err.message
    err = _status(ops.add_custom_template, x, x)  # the one-shot call too
    assert err.status == status and type(exc).__name__ in err.message


@pytest.mark.parametrize("exc, status", [
    (MemoryError(), ACLNN_ERR_INNER),
    (device.DeviceError("stream gone"), ACLNN_ERR_RUNTIME_ERROR),
    (ValueError("bad"), ACLNN_ERR_PARAM_INVALID),
])
def test_foreign_exceptions_of_phase2_become_aclnn_errors(ops, monkeypatch, exc, status):
    from opbuild.runtime.call import fast_wrappers

    def failing_execute(*args, **kwargs):
        raise exc

    monkeypatch.setattr(fast_wrappers, "execute", failing_execute)
    x = np.ones(5, np.float32)
    size, ex = ops.aclnnAddCustomTemplateGetWorkspaceSize(x, x, np.empty_like(x))
    stream = rt.Stream()  # not the default stream: the Python phase 2 runs
    try:
        err = _status(ops.aclnnAddCustomTemplate, None, size, ex, stream)
    finally:
        stream.synchronize()
    assert err.status == status


def test_broadcastable_but_too_large_says_so(ops):
    big = np.lib.stride_tricks.as_strided(np.ones(1, np.float32), (2**40, 1), (0, 0))
    wide = np.lib.stride_tricks.as_strided(np.ones(1, np.float32), (1, 2**40), (0, 0))
    err = _status(ops.mul_custom, big, wide)
    assert err.status == ACLNN_ERR_PARAM_INVALID
    assert "too large" in err.message and "do not broadcast" not in err.message
    err = _status(ops.mul_custom, np.ones((2, 3), np.float32), np.ones((4,), np.float32))
    assert err.status == ACLNN_ERR_PARAM_INVALID and "do not broadcast" in err.message


def test_output_too_large_to_allocate_says_so(ops):
    big = np.lib.stride_tricks.as_strided(np.ones(1, np.float32), (2**20, 2**20, 2**10), (0, 0, 0))
    err = _status(ops.mul_custom, big, big)
    assert err.status == ACLNN_ERR_PARAM_INVALID and "too large" in err.message


@pytest.mark.parametrize("value", ["yes", "0", 2, -1, 0.5, None])
def test_set_deterministic_rejects_non_bools(value):
    err = _status(rt.set_deterministic, value)
    assert err.status == ACLNN_ERR_PARAM_INVALID and repr(value) in err.message
    assert settings.get_deterministic() == 0


@pytest.mark.parametrize("value, d", [(True, 1), (False, 0), (1, 1), (0, 0), (np.bool_(True), 1)])
def test_set_deterministic_takes_bools_and_0_1(value, d):
    rt.set_deterministic(value)
    assert settings.get_deterministic() == d


def test_per_call_deterministic_rejects_non_bools(ops):
    x = np.ones(5, np.float32)
    err = _status(ops.aclnnAddCustomTemplateGetWorkspaceSize, x, x, np.empty_like(x), deterministic="yes")
    assert err.status == ACLNN_ERR_PARAM_INVALID


def test_executor_of_another_op_is_rejected_on_every_path(ops):
    x = np.ones(5, np.float32)
    z = np.empty_like(x)
    for stream in (None, rt.Stream()):
        size, ex = ops.aclnnAddCustomTemplateGetWorkspaceSize(x, x, z)
        err = _status(ops.aclnnMulCustom, None, size, ex, stream)
        assert err.status == ACLNN_ERR_PARAM_INVALID and "AddCustomTemplate" in err.message
        ops.aclnnAddCustomTemplate(None, size, ex, stream)  # still usable by its own op
        if stream is not None:
            stream.synchronize()
        np.testing.assert_array_equal(z, 2 * x)


def test_tracebacks_show_source_lines(ops):
    """The phase functions are plain Python (no code compiled from string templates): every frame
    of a failure has a file and a source line."""
    import traceback

    p1 = ops.aclnnAddCustomTemplateGetWorkspaceSize
    p1 = getattr(p1, "__wrapped__", p1)
    x = np.ones(5, np.float32)
    with pytest.raises(AclnnError) as err:
        p1(x, x, np.empty(4, np.float32))
    frames = traceback.extract_tb(err.value.__traceback__)
    assert frames and all(f.filename.endswith(".py") and f.line for f in frames)


def test_launch_observers_see_every_path(ops):
    from opbuild.runtime.call import launch

    seen = []
    unregister = launch.observe_launches(lambda plan: seen.append(plan.op.name))
    try:
        x = np.ones(5, np.float32)
        z = np.empty_like(x)
        size, ex = ops.aclnnAddCustomTemplateGetWorkspaceSize(x, x, z)
        ops.aclnnAddCustomTemplate(None, size, ex)  # the C fast path defers to Python while observed
        ops.add_custom_template(x, x)
    finally:
        unregister()
    assert seen == ["AddCustomTemplate", "AddCustomTemplate"]
    size, ex = ops.aclnnAddCustomTemplateGetWorkspaceSize(x, x, z)
    ops.aclnnAddCustomTemplate(None, size, ex)
    assert len(seen) == 2  # unregistered: nothing observed
