"""Binary selection by simplified key: the seeds' table 1, d and p, and every key rule kind."""

from __future__ import annotations

import numpy as np
import pytest
from rtutil import run_two_phase

import opbuild.runtime as rt
from opbuild.runtime import AclnnError, settings
from opbuild.runtime.call import executor


@pytest.mark.parametrize("dtype, key, binary", [
    (np.float16, "AddCustomTemplate/d=0,p=1/custom_fp16", "AddCustomTemplate_FP16"),
    (np.float32, "AddCustomTemplate/d=0,p=1/custom_fp32", "AddCustomTemplate_FP32"),
])
def test_seed_table_1(ops, dtype, key, binary):
    """Seed 003, table 1: x fp16 -> AddCustomTemplate/d=0,p=1/custom_fp16 -> AddCustomTemplate_FP16."""
    x = np.ones((8, 2048), dtype)
    z = np.empty_like(x)
    size, ex = ops.aclnnAddCustomTemplateGetWorkspaceSize(x, x, z)
    assert (ex.simplified_key, ex.binary_name, size) == (key, binary, 0)
    assert ex.plan.selection.fragment == key.rsplit("/", 1)[1]
    ops.aclnnAddCustomTemplate(None, size, ex)
    np.testing.assert_array_equal(z, x + x)
    # the generic entry point selects the same
    _, ex2 = executor.get_workspace_size(ops._OPS["AddCustomTemplate"], (x, x), (), (np.empty_like(x),))
    assert (ex2.simplified_key, ex2.binary_name) == (key, binary)


@pytest.mark.parametrize("kwargs, head", [
    ({}, "d=0,p=1"),
    ({"deterministic": True}, "d=1,p=1"),
    ({"impl_mode": "default"}, "d=0,p=0"),
    ({"deterministic": True, "impl_mode": 0}, "d=1,p=0"),
])
def test_d_and_p_per_call(ops, kwargs, head):
    x = np.ones(10, np.float16)
    _, ex = ops.aclnnAddCustomTemplateGetWorkspaceSize(x, x, np.empty_like(x), **kwargs)
    assert ex.simplified_key == f"AddCustomTemplate/{head}/custom_fp16"
    assert ex.binary_name == "AddCustomTemplate_FP16"


def test_d_and_p_process_wide(ops):
    x = np.ones(10, np.float32)
    rt.set_deterministic(True)
    rt.set_impl_mode("default")
    assert (rt.get_deterministic(), rt.get_impl_mode()) == (1, 0)
    _, ex = ops.aclnnAddCustomTemplateGetWorkspaceSize(x, x, np.empty_like(x))
    assert ex.simplified_key == "AddCustomTemplate/d=1,p=0/custom_fp32"
    # a per-call value wins over the process-wide one
    _, ex = ops.aclnnAddCustomTemplateGetWorkspaceSize(x, x, np.empty_like(x), deterministic=False)
    assert ex.simplified_key == "AddCustomTemplate/d=0,p=0/custom_fp32"


def test_deterministic_selects_the_deterministic_reduce_binary(builtin_ops):
    ops = builtin_ops
    x = np.ones((4, 4), np.float32)
    y = np.empty((4,), np.float32)
    _, ex = ops.aclnnReduceSumCustomGetWorkspaceSize(x, [0], False, y, deterministic=True)
    assert (ex.simplified_key, ex.binary_name) == ("ReduceSumCustom/d=1,p=1/0,2/0,2", "ReduceSumCustom_FP32_Det")
    _, ex = ops.aclnnReduceSumCustomGetWorkspaceSize(x, [0], False, y)
    assert (ex.simplified_key, ex.binary_name) == ("ReduceSumCustom/d=0,p=1/0,2/0,2", "ReduceSumCustom_FP32")


def test_unknown_impl_mode_is_invalid(ops):
    x = np.ones(3, np.float32)
    with pytest.raises(AclnnError) as err:
        ops.aclnnAddCustomTemplateGetWorkspaceSize(x, x, np.empty_like(x), impl_mode="fastest")
    assert err.value.status == rt.ACLNN_ERR_PARAM_INVALID and "fastest" in err.value.message
    with pytest.raises(AclnnError):
        settings.set_impl_mode(True)


def test_high_precision_has_no_binary(ops, package):
    """p=2 is not declared for AddCustomTemplate: the miss names the key and the nearest ones."""
    x = np.ones(3, np.float32)
    with pytest.raises(AclnnError) as err:
        ops.aclnnAddCustomTemplateGetWorkspaceSize(x, x, np.empty_like(x), impl_mode="high_precision")
    e = err.value
    assert e.status == rt.ACLNN_ERR_PARAM_INVALID
    assert "AddCustomTemplate/d=0,p=2/custom_fp32" in e.message and str(package) in e.message
    nearest = e.message.split("nearest existing keys of AddCustomTemplate:")[1].split()
    assert nearest[0].endswith("/custom_fp32")


def test_python_callback_picks_the_relu_binary_by_attribute(builtin_ops):
    ops = builtin_ops
    x = np.linspace(-1, 1, 11, dtype=np.float32)
    for slope, key, binary in [(0.0, "relu_fp32", "LeakyReluCustom_Relu_FP32"),
                               (0.5, "leaky_fp32", "LeakyReluCustom_FP32")]:
        ex = run_two_phase(ops, "LeakyReluCustom", x, slope, np.empty_like(x))
        assert ex.simplified_key == f"LeakyReluCustom/d=0,p=1/{key}" and ex.binary_name == binary


@pytest.mark.parametrize("dtype, key, binary", [
    (np.float16, "diy,addn,1", "AddNCustom_FP16"),
    (np.float32, "diy,addn,0", "AddNCustom_FP32"),
    (np.int32, "diy,addn,3", "AddNCustom_INT32"),
])
def test_c_callback_keys_of_a_tensor_list(ops, dtype, key, binary):
    xs = [np.full((2, 3), k, dtype) for k in range(1, 4)]
    y = np.empty((2, 3), dtype)
    ex = run_two_phase(ops, "AddNCustom", xs, y)
    assert ex.simplified_key == f"AddNCustom/d=0,p=1/{key}" and ex.binary_name == binary
    np.testing.assert_array_equal(y, np.full((2, 3), 6, dtype))


@pytest.mark.parametrize("kind", ["custom", "built-in"])  # MulCustom is in both packages
def test_default_mode_keys(ops_for, kind):
    ops = ops_for("MulCustom", kind)
    x = np.ones((2, 3), np.float16)
    y = np.ones((3,), np.float32)
    ex = run_two_phase(ops, "MulCustom", x, y, np.empty((2, 3), np.float32))
    assert ex.simplified_key == "MulCustom/d=0,p=1/1,2/0,2/0,2" and ex.binary_name == "MulCustom_FP16_FP32"


def test_format_is_part_of_the_default_key(ops):
    """An NCHW tensor makes the group `0,0`; the op only has ND binaries."""
    x = rt.Tensor(np.ones((1, 2, 3, 4), np.float32), "NCHW")
    with pytest.raises(AclnnError) as err:
        ops.aclnnMulCustomGetWorkspaceSize(x, x, np.empty((1, 2, 3, 4), np.float32))
    assert err.value.status == rt.ACLNN_ERR_PARAM_INVALID
    assert "MulCustom/d=0,p=1/0,0/0,0/0,2" in err.value.message
