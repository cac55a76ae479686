"""Every failure gets its own aclnn status and a message that says what was asked and what exists."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import opbuild.runtime as rt
from opbuild.runtime import (
    ACLNN_ERR_INNER,
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_PARAM_NULLPTR,
    ACLNN_ERR_RUNTIME_ERROR,
    AclnnError,
)

CONFIG = Path("op_impl/ai_core/tbe/kernel/config/ascend910b/binary_info_config.json")
MATH_CONFIG = Path("op_impl/ai_core/tbe/kernel/config/ascend910b/ops_math/binary_info_config.json")
KEY_RULE = Path("op_api/python/keyrules/leaky_relu_custom/key_rule.py")  # LeakyReluCustom: built-in
ADD_FP32 = Path("op_impl/ai_core/tbe/kernel/ascend910b/add_custom_template/AddCustomTemplate_FP32")
SUM_FP32 = Path("op_impl/ai_core/tbe/kernel/ascend910b/ops_math/reduce_sum_custom/ReduceSumCustom_FP32")


def _raises(status: int, fn, *args, **kwargs) -> str:
    with pytest.raises(AclnnError) as err:
        fn(*args, **kwargs)
    assert err.value.status == status, err.value
    assert str(err.value).startswith(f"[{rt.errors.STATUS_NAMES[status]} {status}]")
    return err.value.message


def _leaky_with_rule(package: Path, body: str):
    (package / KEY_RULE).write_text(body)
    ops = rt.import_ops(package)
    x = np.ones(8, np.float32)
    return ops, x


def _add32(ops):
    x = np.ones((2, 3), np.float32)
    return ops.aclnnAddCustomTemplateGetWorkspaceSize, x, x, np.empty_like(x)


# ---- GenSimplifiedKey callbacks -----------------------------------------------------------------

def test_missing_callback_function(builtin_copy):
    ops, x = _leaky_with_rule(builtin_copy, "def something_else(ctx):\n    return 'leaky_fp32'\n")
    msg = _raises(ACLNN_ERR_INNER, ops.leaky_relu_custom, x)
    assert "gen_simplified_key" in msg and "key_rule.py" in msg and "LeakyReluCustom" in msg


def test_callback_module_that_does_not_import(builtin_copy):
    ops, x = _leaky_with_rule(builtin_copy, "import no_such_module_here\n")
    msg = _raises(ACLNN_ERR_INNER, ops.leaky_relu_custom, x)
    assert "no_such_module_here" in msg and "key_rule.py" in msg


def test_failing_callback(builtin_copy):
    ops, x = _leaky_with_rule(builtin_copy, "def gen_simplified_key(ctx):\n    raise RuntimeError('boom')\n")
    msg = _raises(ACLNN_ERR_INNER, ops.leaky_relu_custom, x)
    assert "RuntimeError: boom" in msg and "float32" in msg  # what raised, and the call it raised for


@pytest.mark.parametrize("fragment, words", [
    ("''", ["empty"]),
    ("'k' * 257", ["257 bytes", "256"]),
    ("'leaky fp32'", ["whitespace", "leaky fp32"]),
    ("'leaky_fp32\\n'", ["whitespace"]),
    ("42", ["string", "int"]),
])
def test_invalid_fragments(builtin_copy, fragment, words):
    ops, x = _leaky_with_rule(builtin_copy, f"def gen_simplified_key(ctx):\n    return {fragment}\n")
    msg = _raises(ACLNN_ERR_INNER, ops.leaky_relu_custom, x)
    assert "invalid fragment" in msg
    for w in words:
        assert w in msg


def test_key_not_in_binary_info_config(builtin_copy):
    ops, x = _leaky_with_rule(builtin_copy, "def gen_simplified_key(ctx):\n    return 'leaky_fp64'\n")
    msg = _raises(ACLNN_ERR_PARAM_INVALID, ops.leaky_relu_custom, x)
    assert "no binary for key LeakyReluCustom/d=0,p=1/leaky_fp64" in msg
    assert str(builtin_copy.resolve()) in msg and "binary_info_config.json" in msg
    nearest = msg.split("nearest existing keys of LeakyReluCustom:\n")[1].splitlines()
    assert nearest[0].startswith("    LeakyReluCustom/d=0,p=1/leaky_fp32  ->  LeakyReluCustom_FP32 (x=float32, y=float32)"
                                 "  [takes this call's dtypes]")
    assert all(line.startswith("    LeakyReluCustom/") and "  ->  LeakyReluCustom_" in line for line in nearest)


def test_nearest_keys_put_the_binaries_of_the_calls_dtypes_first(builtin_copy):
    """A bf16 call whose rule builds `leaky_bfp16` (a typo): by spelling alone `leaky_fp16` comes first,
    but its binary takes float16; the keys whose binaries take this call's bfloat16 are listed first."""
    import ml_dtypes

    ops, _ = _leaky_with_rule(builtin_copy, "def gen_simplified_key(ctx):\n    return 'leaky_bfp16'\n")
    x = np.ones(8, ml_dtypes.bfloat16)
    msg = _raises(ACLNN_ERR_PARAM_INVALID, ops.leaky_relu_custom, x)
    nearest = msg.split("nearest existing keys of LeakyReluCustom:\n")[1].splitlines()
    assert nearest[0] == ("    LeakyReluCustom/d=0,p=1/leaky_bf16  ->  LeakyReluCustom_BF16 (x=bfloat16, y=bfloat16)"
                          "  [takes this call's dtypes]")
    assert all("(x=bfloat16, y=bfloat16)  [takes this call's dtypes]" in line for line in nearest)


def test_nearest_key_lines_rank_the_calls_dtypes_above_spelling():
    """Keys `ssp_fp16` (a float16 binary) and `ssp_bf16_v2` (bfloat16): for a bfloat16 call that built
    `ssp_bfp16`, spelling alone puts ssp_fp16 first; the binary that takes the call's dtype comes first."""
    from types import SimpleNamespace as NS

    from opbuild.keys.context import KeyContext
    from opbuild.runtime.binaries.selection import nearest_key_lines, nearest_keys

    keys = ("Op/d=0,p=1/ssp_fp16", "Op/d=0,p=1/ssp_bf16_v2")
    assert nearest_keys("Op/d=0,p=1/ssp_bfp16", keys)[0] == keys[0]
    spec = NS(inputs=[NS(name="x")], outputs=[NS(name="y")],
              binaries=[NS(name="Op_FP16", when=(("x", NS(dtype="float16")), ("y", NS(dtype="float16")))),
                        NS(name="Op_BF16", when=(("x", NS(dtype="bfloat16")), ("y", NS(dtype="bfloat16"))))])
    index = NS(by_key={keys[0]: NS(name="Op_FP16"), keys[1]: NS(name="Op_BF16")})
    ctx = KeyContext([[("bfloat16", "ND", (4,))]], [[("bfloat16", "ND", (4,))]], {}, 0, 1, "ascend910b")
    assert nearest_key_lines(spec, "Op/d=0,p=1/ssp_bfp16", keys, index, ctx) == [
        "Op/d=0,p=1/ssp_bf16_v2  ->  Op_BF16 (x=bfloat16, y=bfloat16)  [takes this call's dtypes]",
        "Op/d=0,p=1/ssp_fp16  ->  Op_FP16 (x=float16, y=float16)",
    ]


def test_a_wrong_dtype_reads_the_same_on_every_path(ops):
    """float64 is in no declared column: the two-phase call (whose key table has no row for it), the
    one-shot call (whose output dtype cannot be inferred) and a default-mode op (whose key exists
    nowhere) all say op_proto's "no declared dtype combination", with the declared columns."""
    x = np.ones(4, np.float64)
    want = ("AddCustomTemplate: no declared dtype combination has x=float64, y=float64 (declared: x=float16, "
            "y=float16; x=float32, y=float32)")
    assert _raises(ACLNN_ERR_PARAM_INVALID, ops.aclnnAddCustomTemplateGetWorkspaceSize, x, x, np.empty_like(x)) == want
    assert _raises(ACLNN_ERR_PARAM_INVALID, ops.add_custom_template, x, x) == want
    a, b = np.ones(4, np.float32), np.ones(4, np.float16)
    assert _raises(ACLNN_ERR_PARAM_INVALID, ops.aclnnMulCustomGetWorkspaceSize, a, b, np.empty(4, np.float32)) == (
        "MulCustom: no declared dtype combination has x=float32, y=float16 (declared: x=float16, y=float16; "
        "x=float32, y=float32; x=float16, y=float32; x=int32, y=int32)")


# ---- the package on disk ------------------------------------------------------------------------

def test_missing_binary_file(package_copy):
    package_copy.joinpath(f"{ADD_FP32}.so").unlink()
    ops = rt.import_ops(package_copy)
    fn, *args = _add32(ops)
    msg = _raises(ACLNN_ERR_INNER, fn, *args)
    assert "AddCustomTemplate_FP32" in msg and "missing" in msg and f"{ADD_FP32.name}.so" in msg


def test_missing_binary_info_config(package_copy):
    package_copy.joinpath(CONFIG).unlink()
    ops = rt.import_ops(package_copy)
    fn, *args = _add32(ops)
    msg = _raises(ACLNN_ERR_INNER, fn, *args)
    assert "no binary_info_config.json" in msg and str(package_copy.resolve()) in msg


@pytest.mark.parametrize("text, words", [
    ("{\"AddCustomTemplate\": ", ["corrupt binary_info_config.json"]),
    ("[1, 2]", ["corrupt", "not an object"]),
    ("\xff\xfe\x00", ["corrupt"]),
])
def test_corrupt_binary_info_config(package_copy, text, words):
    package_copy.joinpath(CONFIG).write_bytes(text.encode("latin-1"))
    ops = rt.import_ops(package_copy)
    fn, *args = _add32(ops)
    msg = _raises(ACLNN_ERR_INNER, fn, *args)
    for w in words:
        assert w in msg
    assert "binary_info_config.json" in msg


def _edit_config(package: Path, edit) -> None:
    path = package / CONFIG
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("bin_path", ["../../x.so", "/etc/passwd", "ascend910b/../../../../../x.so"])
def test_bin_path_escaping_the_package(package_copy, bin_path):
    def edit(data):
        data["AddCustomTemplate"]["binaryList"][1]["binPath"] = bin_path

    _edit_config(package_copy, edit)
    ops = rt.import_ops(package_copy)
    fn, *args = _add32(ops)
    msg = _raises(ACLNN_ERR_INNER, fn, *args)
    assert "points outside the package" in msg and repr(bin_path) in msg


def test_bin_path_symlink_escaping_the_package(package_copy, tmp_path):
    outside = tmp_path / "outside.so"
    outside.write_bytes(package_copy.joinpath(f"{ADD_FP32}.so").read_bytes())
    link = package_copy / f"{ADD_FP32}.so"
    link.unlink()
    link.symlink_to(outside)
    ops = rt.import_ops(package_copy)
    fn, *args = _add32(ops)
    msg = _raises(ACLNN_ERR_INNER, fn, *args)
    assert "points outside the package" in msg


def test_entry_without_key_is_skipped_and_named(package_copy, caplog):
    """nnopbase skips a malformed entry and goes on: the other entries still serve; a call that
    needed the skipped one fails naming it."""
    def edit(data):
        del data["AddCustomTemplate"]["binaryList"][1]["simplifiedKey"]

    _edit_config(package_copy, edit)
    ops = rt.import_ops(package_copy)
    with caplog.at_level("WARNING", logger="opbuild.runtime"):
        fn, *args = _add32(ops)
        msg = _raises(ACLNN_ERR_PARAM_INVALID, fn, *args)
    assert "op AddCustomTemplate: binaryList[1] has no simplifiedKey; skipped" in msg
    warnings = [r.getMessage() for r in caplog.records if "binaryList[1]" in r.getMessage()]
    assert len(warnings) == 1 and "AddCustomTemplate" in warnings[0]


def test_duplicate_key_in_binary_info_config(package_copy, caplog):
    """A key listed twice stays with the first entry (nnopbase: first inserted wins), one warning."""
    def edit(data):
        lst = data["AddCustomTemplate"]["binaryList"]
        lst[1]["simplifiedKey"].append(lst[0]["simplifiedKey"][0])

    _edit_config(package_copy, edit)
    from opbuild.runtime.binaries.package import binary_index

    with caplog.at_level("WARNING", logger="opbuild.runtime"):
        index = binary_index(package_copy, "ascend910b")
    assert index.by_key["AddCustomTemplate/d=0,p=1/custom_fp16"].name == "AddCustomTemplate_FP16"
    assert index.by_key["AddCustomTemplate/d=0,p=1/custom_fp32"].name == "AddCustomTemplate_FP32"
    warnings = [r.getMessage() for r in caplog.records if "repeats key" in r.getMessage()]
    assert len(warnings) == 1 and "AddCustomTemplate/d=0,p=1/custom_fp16" in warnings[0]
    ops = rt.import_ops(package_copy)
    fn, *args = _add32(ops)
    size, _ = fn(*args)  # the second entry's own keys still serve
    assert size >= 0


def test_kernel_descriptor_with_too_small_tiling_buffer(package_copy):
    """opParaSize smaller than the op's tiling struct: TILING_DATA cannot fit."""
    desc_path = package_copy / f"{ADD_FP32}.json"
    desc = json.loads(desc_path.read_text())
    desc["opParaSize"] = 4
    desc_path.write_text(json.dumps(desc))
    ops = rt.import_ops(package_copy)
    fn, *args = _add32(ops)
    msg = _raises(ACLNN_ERR_INNER, fn, *args)
    assert "tiling data of 24 bytes exceeds the buffer of 4 bytes" in msg


def test_missing_binary_file_of_a_builtin_sub_package(builtin_copy):
    """The reader inserts ops_math into the config's binPath: the message names the real path."""
    builtin_copy.joinpath(f"{SUM_FP32}.so").unlink()
    ops = rt.import_ops(builtin_copy)
    x = np.ones((2, 3), np.float32)
    msg = _raises(ACLNN_ERR_INNER, ops.aclnnReduceSumCustomGetWorkspaceSize, x, [0], False, np.empty(3, np.float32))
    assert "ReduceSumCustom_FP32" in msg and "missing" in msg and "ops_math/reduce_sum_custom/ReduceSumCustom_FP32.so" in msg


@pytest.mark.parametrize("bin_path", ["../../x.so", "/etc/passwd", "ascend910b/../../../../../x.so"])
def test_bin_path_escaping_a_builtin_sub_package(builtin_copy, bin_path):
    path = builtin_copy / MATH_CONFIG
    data = json.loads(path.read_text())
    data["ReduceSumCustom"]["binaryList"][1]["binPath"] = bin_path
    path.write_text(json.dumps(data))
    ops = rt.import_ops(builtin_copy)
    x = np.ones((2, 3), np.float32)
    msg = _raises(ACLNN_ERR_INNER, ops.aclnnReduceSumCustomGetWorkspaceSize, x, [0], False, np.empty(3, np.float32))
    assert "points outside the package" in msg and repr(bin_path) in msg and "ops_math" in msg


def test_missing_tiling_library(package_copy):
    for lib in package_copy.rglob("libcust_opmaster_rt2.0.so"):
        lib.unlink()
    ops = rt.import_ops(package_copy)
    fn, *args = _add32(ops)
    msg = _raises(ACLNN_ERR_INNER, fn, *args)
    assert "tiling library missing" in msg


# ---- tiling -------------------------------------------------------------------------------------

def test_add_n_with_shapes_that_do_not_broadcast(ops):
    """A list's shapes are the op's business: AddNCustom's shape rule and tiling refuse [2, 3] + [3, 2]."""
    xs = [np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)]
    msg = _raises(ACLNN_ERR_PARAM_INVALID, ops.aclnnAddNCustomGetWorkspaceSize, xs, np.empty((2, 3), np.float32))
    assert msg == "AddNCustom: shapes do not broadcast: x[0][2, 3], x[1][3, 2]"
    msg = _raises(ACLNN_ERR_PARAM_INVALID, ops.aclnnAddNCustomGetWorkspaceSize, [xs[0], xs[0].astype(np.float16)],
                  np.empty((2, 3), np.float32))
    assert msg == "AddNCustom: x[1] is float16[2, 3], x[0] is float32[2, 3]"


def test_tiling_rejects_mismatched_shapes(ops):
    """The tiling function says the parameters are invalid (tiling_invalid): 161002, the caller's."""
    x, y = np.ones(4, np.float32), np.ones(5, np.float32)
    msg = _raises(ACLNN_ERR_PARAM_INVALID, ops.aclnnAddCustomTemplateGetWorkspaceSize, x, y, np.empty(4, np.float32))
    assert "add_custom_template_tiling rejected the call" in msg and "shapes differ" in msg and "[5]" in msg


def test_output_shape_mismatch(ops):
    x = np.ones(4, np.float32)
    msg = _raises(ACLNN_ERR_PARAM_INVALID, ops.aclnnAddCustomTemplateGetWorkspaceSize, x, x, np.empty(5, np.float32))
    assert "output 'z' has shape [5], expected [4]" in msg


@pytest.fixture(scope="module")
def probe(probe_package):
    return rt.import_ops(probe_package)


def test_probe_op_works(probe):
    x = np.arange(100, dtype=np.float32)
    np.testing.assert_array_equal(probe.probe_custom(x, scale=3.0), 3 * x)


def test_tiling_failure_message(probe):
    msg = _raises(ACLNN_ERR_INNER, probe.probe_custom, np.ones(10, np.float32), scale=-5.0)
    assert "probe_custom_tiling failed: ProbeCustom: scale -5 asks this tiling to fail" in msg


def test_block_dim_zero(probe):
    msg = _raises(ACLNN_ERR_INNER, probe.probe_custom, np.ones(10, np.float32), scale=-1.0)
    assert "probe_custom_tiling set block_dim 0" in msg


def test_tiling_data_larger_than_its_buffer(probe):
    msg = _raises(ACLNN_ERR_INNER, probe.probe_custom, np.ones(10, np.float32), scale=-2.0)
    assert "tiling data" in msg and "bytes" in msg


def test_kernel_failure(probe):
    msg = _raises(ACLNN_ERR_RUNTIME_ERROR, probe.probe_custom, np.ones(100, np.float32), scale=-4.0)
    assert "ProbeCustom: kernel ProbeCustom_FP32 failed" in msg and "cannot cover 100 elements" in msg
    # the two-phase path reports it the same way
    x = np.ones(100, np.float32)
    size, ex = probe.aclnnProbeCustomGetWorkspaceSize(x, -4.0, np.empty_like(x))
    msg = _raises(ACLNN_ERR_RUNTIME_ERROR, probe.aclnnProbeCustom, None, size, ex)
    assert "cannot cover 100 elements" in msg


def test_workspace_checks(probe):
    x = np.ones(10, np.float32)
    y = np.empty_like(x)

    def phase1():
        size, ex = probe.aclnnProbeCustomGetWorkspaceSize(x, -3.0, y)
        assert size == 4096
        return size, ex

    size, ex = phase1()
    msg = _raises(ACLNN_ERR_PARAM_INVALID, probe.aclnnProbeCustom, rt.malloc(4095), 4095, ex)
    assert "4095 bytes is smaller than the 4096 required" in msg
    msg = _raises(ACLNN_ERR_PARAM_NULLPTR, probe.aclnnProbeCustom, None, size, ex)
    assert "workspace is a null pointer" in msg
    msg = _raises(ACLNN_ERR_PARAM_INVALID, probe.aclnnProbeCustom, rt.malloc(100), size, ex)
    assert "workspace buffer has 100 bytes" in msg
    msg = _raises(ACLNN_ERR_PARAM_INVALID, probe.aclnnProbeCustom, rt.malloc(size), "4096", ex)
    assert "workspaceSize must be an int" in msg
    # none of the rejected calls used the executor up
    probe.aclnnProbeCustom(rt.malloc(size), size, ex)
    np.testing.assert_array_equal(y, -3 * x)
    size, ex = phase1()
    probe.aclnnProbeCustom(np.zeros(size + 10, np.uint8), size + 10, ex)  # larger is fine; arrays work


def test_workspace_as_a_bare_address_is_checked_against_device_memory(probe):
    """An int workspace is an address: it must lie in a live device buffer with room for the
    workspace (before, any int was passed to the kernel, which wrote 4096 bytes there)."""
    x = np.ones(10, np.float32)
    y = np.empty_like(x)
    size, ex = probe.aclnnProbeCustomGetWorkspaceSize(x, -3.0, y)
    host = np.zeros(size, np.uint8)
    msg = _raises(ACLNN_ERR_PARAM_INVALID, probe.aclnnProbeCustom, host.ctypes.data, size, ex)
    assert f"workspace address 0x{host.ctypes.data:x} is in no live device buffer" in msg
    buf = rt.malloc(size)
    msg = _raises(ACLNN_ERR_PARAM_INVALID, probe.aclnnProbeCustom, buf.address + 512, size, ex)
    assert f"workspace buffer has {size - 512} bytes, smaller than the 4096 required" in msg
    freed = rt.malloc(size)
    address = freed.address
    freed.free()
    msg = _raises(ACLNN_ERR_PARAM_INVALID, probe.aclnnProbeCustom, address, size, ex)
    assert "in no live device buffer" in msg
    probe.aclnnProbeCustom(buf.address, size, ex)  # the address of a big enough device buffer runs
    np.testing.assert_array_equal(y, -3 * x)


def test_reduce_sum_workspace_too_small(builtin_ops):
    ops = builtin_ops
    x = np.ones((64, 4096), np.float32)
    y = np.empty(4096, np.float32)
    size, ex = ops.aclnnReduceSumCustomGetWorkspaceSize(x, [0], False, y)
    assert size > 0
    msg = _raises(ACLNN_ERR_PARAM_INVALID, ops.aclnnReduceSumCustom, rt.malloc(size - 1), size - 1, ex)
    assert f"{size - 1} bytes is smaller than the {size} required" in msg
    ops.aclnnReduceSumCustom(rt.malloc(size), size, ex)
    np.testing.assert_allclose(y, 64.0)


# ---- executors and arguments --------------------------------------------------------------------

def test_executor_runs_once_unless_repeatable(ops):
    x = np.ones(5, np.float32)
    z = np.empty_like(x)
    size, ex = ops.aclnnAddCustomTemplateGetWorkspaceSize(x, x, z)
    ops.aclnnAddCustomTemplate(None, size, ex)
    msg = _raises(ACLNN_ERR_PARAM_INVALID, ops.aclnnAddCustomTemplate, None, size, ex)
    assert "already ran" in msg and "repeatable" in msg
    size, ex = ops.aclnnAddCustomTemplateGetWorkspaceSize(x, x, z)
    assert ex.set_repeatable() is ex
    for k in range(3):
        x[:] = k  # the executor reads the tensors' memory on every run
        ops.aclnnAddCustomTemplate(None, size, ex)
        np.testing.assert_array_equal(z, 2 * x)


def test_executor_of_another_op(ops):
    x = np.ones(5, np.float32)
    size, ex = ops.aclnnMulCustomGetWorkspaceSize(x, x, np.empty_like(x))
    msg = _raises(ACLNN_ERR_PARAM_INVALID, ops.aclnnAddCustomTemplate, None, size, ex)
    assert "made for MulCustom" in msg
    ops.aclnnMulCustom(None, size, ex)


def test_null_pointers(ops):
    x = np.ones(5, np.float32)
    msg = _raises(ACLNN_ERR_PARAM_NULLPTR, ops.aclnnAddCustomTemplateGetWorkspaceSize, x, None, np.empty_like(x))
    assert "input 'y'" in msg and "null" in msg
    msg = _raises(ACLNN_ERR_PARAM_NULLPTR, ops.aclnnAddCustomTemplateGetWorkspaceSize, x, x, None)
    assert "output 'z'" in msg
    msg = _raises(ACLNN_ERR_PARAM_NULLPTR, ops.add_custom_template, None, x)
    assert "input 'x'" in msg
    msg = _raises(ACLNN_ERR_PARAM_NULLPTR, ops.aclnnAddNCustomGetWorkspaceSize, None, np.empty_like(x))
    assert "tensor list" in msg
    msg = _raises(ACLNN_ERR_PARAM_NULLPTR, ops.aclnnAddNCustomGetWorkspaceSize, [x, None], np.empty_like(x))
    assert "x'[1]" in msg
    msg = _raises(ACLNN_ERR_PARAM_NULLPTR, ops.aclnnAddCustomTemplate, None, 0, None)
    assert "executor is a null pointer" in msg


def test_bad_arguments(ops, builtin_ops):
    x = np.ones(5, np.float32)
    msg = _raises(ACLNN_ERR_PARAM_INVALID, ops.aclnnAddCustomTemplateGetWorkspaceSize, x, [1.0] * 5, np.empty_like(x))
    assert "input 'y' must be a Tensor or a numpy array, not list" in msg
    msg = _raises(ACLNN_ERR_PARAM_INVALID, builtin_ops.aclnnLeakyReluCustomGetWorkspaceSize, x, "0.1", np.empty_like(x))
    assert "attribute 'negative_slope' must be float" in msg
    msg = _raises(ACLNN_ERR_PARAM_INVALID, builtin_ops.aclnnLeakyReluCustomGetWorkspaceSize, x, True, np.empty_like(x))
    assert "must be float, got True" in msg
    msg = _raises(ACLNN_ERR_PARAM_INVALID, builtin_ops.aclnnReduceSumCustomGetWorkspaceSize, x, [0.5], False,
                  np.empty(()))
    assert "attribute 'axes' must be list_int" in msg
    msg = _raises(ACLNN_ERR_PARAM_INVALID, builtin_ops.reduce_sum_custom, x, axes=[3])
    assert "axis 3 is out of range" in msg
    msg = _raises(ACLNN_ERR_PARAM_INVALID, ops.aclnnAddNCustomGetWorkspaceSize, [], np.empty_like(x))
    assert "non-empty list" in msg
    msg = _raises(ACLNN_ERR_PARAM_INVALID, ops.aclnnAddCustomTemplate, None, 0, "executor")
    assert "executor must be" in msg
    with pytest.raises(TypeError):
        ops.aclnnAddCustomTemplateGetWorkspaceSize(x, x)


def test_read_only_output(ops):
    x = np.ones(5, np.float32)
    z = np.empty_like(x)
    ops.add_custom_template(x, x)  # a cached plan for this signature exists: still checked
    size, ex = ops.aclnnAddCustomTemplateGetWorkspaceSize(x, x, z)
    z.flags.writeable = False
    msg = _raises(ACLNN_ERR_PARAM_INVALID, ops.aclnnAddCustomTemplateGetWorkspaceSize, x, x, z)
    assert "output 'z' is read-only" in msg


def test_non_native_byte_order(ops):
    x = np.ones(5, np.dtype(">f4"))
    msg = _raises(ACLNN_ERR_PARAM_INVALID, ops.add_custom_template, x, x)
    assert "byte order" in msg


def test_unsupported_dtype(ops):
    x = np.ones(5, np.complex64)
    msg = _raises(ACLNN_ERR_PARAM_INVALID, ops.aclnnAddCustomTemplateGetWorkspaceSize, x, x, np.empty_like(x))
    assert "complex64" in msg


def test_a_misspelt_keyword_of_a_one_shot_call_names_what_was_meant(builtin_copy):
    ops = rt.import_ops(builtin_copy)
    x = np.ones(4, np.float32)
    with pytest.raises(TypeError) as exc:
        ops.leaky_relu_custom(x, negative_slop=0.2, strem=None)
    assert str(exc.value) == ("leaky_relu_custom() got unexpected keyword argument(s) 'negative_slop' (did you mean "
                              "'negative_slope'?), 'strem' (did you mean 'stream'?); it takes: x, negative_slope, "
                              "deterministic, impl_mode, stream")
    np.testing.assert_array_equal(ops.leaky_relu_custom(-x, negative_slope=0.5), -0.5 * x)
