"""AI CPU sample ops (NonZeroCustom, SortCustom) against numpy through the Python aclnn API:
one shot and two phases, several dtypes and shapes (empty, one element, all zero, all non-zero,
large), data-dependent shapes returned to the caller, and AI CPU and AI Core launches kept in
order on one stream."""

from __future__ import annotations

import numpy as np
import pytest

import opbuild.runtime as rt
from opbuild.runtime import device

NONZERO_DTYPES = (np.float32, np.float16, np.int32, np.int64, np.int8, np.uint8, np.bool_)
SORT_DTYPES = (np.float32, np.float16, np.int32, np.int64, np.int8, np.uint8)
SHAPES = ((0,), (1,), (3, 0), (1, 1), (7,), (4, 5), (2, 3, 4), (65536,), (31, 257))


def _data(rng, dtype, shape, kind: str) -> np.ndarray:
    if kind == "zero":
        return np.zeros(shape, dtype)
    if kind == "nonzero":
        return (rng.integers(1, 5, shape) * rng.choice([-1, 1], shape) if np.dtype(dtype).kind != "u"
                and dtype is not np.bool_ else np.ones(shape)).astype(dtype)
    return rng.integers(-2, 3, shape).astype(dtype)  # about 2/5 zeros


@pytest.mark.parametrize("dtype", NONZERO_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("kind", ("mixed", "zero", "nonzero"))
def test_non_zero_one_shot_matches_numpy(ops, dtype, kind):
    rng = np.random.default_rng(1)
    for shape in SHAPES:
        x = _data(rng, dtype, shape, kind)
        got = ops.non_zero_custom(x)
        want = np.array(np.nonzero(x), dtype=np.int64).reshape(len(shape), -1)
        assert got.dtype == np.int64 and got.shape == want.shape, (shape, got.shape, want.shape)
        np.testing.assert_array_equal(got, want)


def test_non_zero_two_phases_updates_the_out_tensor_view(ops):
    x = np.array([[0, 3, 0, 0], [1, 0, 0, 2]], np.int32)
    buffer = np.full((2, 8), -1, np.int64)  # the bound [rank(x), size(x)]
    out = rt.Tensor(buffer)
    size, executor = ops.aclnnNonZeroCustomGetWorkspaceSize(x, out)
    assert size == 0 and executor.view_shapes is None
    assert ops.aclnnNonZeroCustom(None, size, executor, None) == 0
    assert executor.view_shape(0) == (2, 3)
    np.testing.assert_array_equal(out.array, np.array(np.nonzero(x)))
    assert np.shares_memory(out.array, buffer)  # a view of the caller's buffer, written from its start


def test_non_zero_output_smaller_than_its_bound_is_refused(ops):
    x = np.ones((3, 4), np.float32)
    with pytest.raises(rt.AclnnError) as info:
        ops.aclnnNonZeroCustomGetWorkspaceSize(x, np.empty((2, 11), np.int64))
    assert info.value.status == 161002 and "bound [2, 12]" in info.value.message


def test_undeclared_dtype_is_refused_with_the_declared_combinations(ops):
    with pytest.raises(rt.AclnnError) as info:
        ops.non_zero_custom(np.ones(3, np.float64))
    assert info.value.status == 161002 and "x=float32" in info.value.message


def _sorted_reference(x: np.ndarray, descending: bool) -> tuple[np.ndarray, np.ndarray]:
    if descending:  # stable: equal elements keep their order
        n = x.shape[-1]
        order = n - 1 - np.flip(np.argsort(np.flip(x, -1), axis=-1, kind="stable"), -1)
    else:
        order = np.argsort(x, axis=-1, kind="stable")
    return np.take_along_axis(x, order, -1), order


@pytest.mark.parametrize("dtype", SORT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("descending", (False, True))
def test_sort_matches_numpy(ops, dtype, descending):
    rng = np.random.default_rng(2)
    for shape in ((0,), (1,), (1, 1), (5, 0), (9,), (3, 17), (2, 3, 50), (4, 4096)):
        for kind in ("mixed", "zero", "nonzero"):
            x = _data(rng, dtype, shape, kind)
            values, indices = ops.sort_custom(x, descending=descending)
            want_values, want_indices = _sorted_reference(x, descending)
            np.testing.assert_array_equal(values, want_values)
            np.testing.assert_array_equal(indices, want_indices)
            assert values.dtype == x.dtype and indices.dtype == np.int64


def test_sort_two_phases_non_contiguous_output(ops):
    x = np.random.default_rng(3).standard_normal((6, 40)).astype(np.float32)
    values = np.empty((40, 6), np.float32).T  # a transposed (non-contiguous) output
    indices = np.empty((6, 40), np.int64)
    size, executor = ops.aclnnSortCustomGetWorkspaceSize(x, True, values, indices)
    ops.aclnnSortCustom(None, size, executor, None)
    want_values, want_indices = _sorted_reference(x, True)
    np.testing.assert_array_equal(values, want_values)
    np.testing.assert_array_equal(indices, want_indices)


def test_ai_cpu_and_ai_core_launches_stay_in_order_on_one_stream(ops):
    """AI Core add, AI CPU sort of its result, AI Core add of the sort's values, on one created
    stream without a synchronization in between: each step reads what the previous one wrote."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((8, 1024)).astype(np.float32)
    y = rng.standard_normal((8, 1024)).astype(np.float32)
    z, values, indices, w = (np.empty_like(x), np.empty_like(x), np.empty(x.shape, np.int64), np.empty_like(x))
    before = device.aicpu_tasks()
    with rt.Stream() as stream:
        for _ in range(3):
            z.fill(np.nan)
            values.fill(np.nan)
            size, ex = ops.aclnnAddCustomTemplateGetWorkspaceSize(x, y, z)
            ops.aclnnAddCustomTemplate(rt.malloc(size) if size else None, size, ex, stream)
            size, ex = ops.aclnnSortCustomGetWorkspaceSize(z, False, values, indices)
            ops.aclnnSortCustom(None, size, ex, stream)
            size, ex = ops.aclnnAddCustomTemplateGetWorkspaceSize(values, values, w)
            ops.aclnnAddCustomTemplate(rt.malloc(size) if size else None, size, ex, stream)
            stream.synchronize()
            want_values, want_indices = _sorted_reference(x + y, False)
            np.testing.assert_array_equal(values, want_values)
            np.testing.assert_array_equal(indices, want_indices)
            np.testing.assert_array_equal(w, want_values + want_values)
    assert device.aicpu_tasks() - before == 3  # the sorts ran on the simulator's AI CPU


def test_one_shot_on_a_stream_returns_the_real_shape(ops):
    x = np.array([0, 5, 0, 7], np.int64)
    with rt.Stream() as stream:
        got = ops.non_zero_custom(x, stream=stream)
    np.testing.assert_array_equal(got, [[1, 3]])


def test_tensor_inputs_give_tensor_outputs(ops):
    got = ops.non_zero_custom(rt.Tensor(np.array([1, 0, 2], np.float32)))
    assert isinstance(got, rt.Tensor)
    np.testing.assert_array_equal(got.array, [[0, 2]])


def test_executor_runs_once_unless_repeatable(ops):
    x = np.array([[3, 1, 2]], np.int32)
    values, indices = np.empty_like(x), np.empty(x.shape, np.int64)
    size, ex = ops.aclnnSortCustomGetWorkspaceSize(x, False, values, indices)
    ops.aclnnSortCustom(None, size, ex, None)
    with pytest.raises(rt.AclnnError) as info:
        ops.aclnnSortCustom(None, size, ex, None)
    assert info.value.status == 161002
    ex.set_repeatable()
    ops.aclnnSortCustom(None, size, ex, None)
    np.testing.assert_array_equal(values, [[1, 2, 3]])


def test_dimension_bounds_from_op_proto(tmp_path):
    """The bound of a data-dependent output comes from the generated op_proto library (infer_bound
    of opbuild/infer.h): N, rank(x), size(x), dim(x, i); an axis x lacks is the caller's error."""
    import dataclasses
    from pathlib import Path

    from opbuild.runtime.host.op_proto import InferError, infer_outputs
    from opbuild.om import legacy
    from opbuild.spec.loader import load_spec
    from opbuild.spec.model import ShapeRule

    spec = load_spec(Path(__file__).parents[2] / "ops" / "non_zero_custom" / "op.yaml")
    bounds = ("7", "rank(x)", "size( x )", "dim(x, 1)", "dim(x,-1)")
    out = dataclasses.replace(spec.outputs[0], shape=ShapeRule("data_dependent", bounds))
    spec = dataclasses.replace(spec, op="BoundProbe", outputs=(out,))
    lib = legacy.op_proto_library([spec], "probe")

    def bound(shape):
        [(dims, _)] = infer_outputs(lib, spec, [[("float32", "ND", shape, None)]], [], soc="ascend910b",
                                    core_num=1, ub_size=1 << 18, dtypes=False)
        return dims

    assert bound((3, 4, 5)) == (7, 3, 60, 4, 5)
    with pytest.raises(InferError, match="has no axis 3") as info:
        out3 = dataclasses.replace(out, shape=ShapeRule("data_dependent", ("dim(x, 3)",)))
        spec3 = dataclasses.replace(spec, op="BoundProbe3", outputs=(out3,))
        infer_outputs(legacy.op_proto_library([spec3], "probe3"), spec3, [[("float32", "ND", (3, 4, 5), None)]], [],
                      soc="ascend910b", core_num=1, ub_size=1 << 18, dtypes=False)
    assert info.value.invalid


def test_isolated_ai_cpu_tasks(ops, tmp_path):
    """OPBUILD_ISOLATION=process covers AI CPU tasks too: they compute in shared memory in a worker
    process, and a crashing compute function is an error of that task, not of the caller."""
    import ctypes
    import shutil
    import subprocess

    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    lib = tmp_path / "crash.so"
    (tmp_path / "crash.c").write_text("#include <stdint.h>\n"
                                      "uint32_t crash(void *ctx) { (void)ctx; *(volatile int *)0 = 1; return 0; }\n")
    subprocess.run([cc, "-shared", "-fPIC", "-O0", "-o", str(lib), str(tmp_path / "crash.c")], check=True)
    crash = ctypes.cast(ctypes.CDLL(str(lib)).crash, ctypes.c_void_p).value
    x = np.array([[0, 1, 0], [2, 0, 3]], np.float32)
    device.set_isolation("process", 5)
    try:
        before = device.aicpu_tasks()
        np.testing.assert_array_equal(ops.non_zero_custom(x), np.array(np.nonzero(x)))
        with pytest.raises(device.DeviceError, match=r"AI CPU task: block 0 of 1: SIGSEGV .*isolated worker"):
            device.aicpu_launch(crash, 0, 0)
        np.testing.assert_array_equal(ops.non_zero_custom(x), np.array(np.nonzero(x)))  # the caller lives on
        assert device.aicpu_tasks() == before + 3
    finally:
        device.set_isolation()


def _aicpu_library(tmp_path, op_dir: str, compute: str):
    """A libcust_aicpu_kernels.so of the sample op in ops/<op_dir> with `compute` as its compute
    source (the generated registry, compiled and linked as the build does)."""
    import shutil
    import subprocess
    from pathlib import Path

    from opbuild.codegen.aicpu import render_aicpu_registry
    from opbuild.runtime.call.aicpu import AicpuLibrary
    from opbuild.runtime_paths import native_include_dir
    from opbuild.spec.loader import load_spec

    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    spec = load_spec(Path(__file__).parents[2] / "ops" / op_dir / "op.yaml")
    (tmp_path / "registry.c").write_text(render_aicpu_registry([spec]))
    (tmp_path / "compute.c").write_text(compute)
    lib = tmp_path / "libcust_aicpu_kernels.so"
    subprocess.run([cc, "-shared", "-fPIC", f"-I{native_include_dir()}", "-o", str(lib), str(tmp_path / "registry.c"),
                    str(tmp_path / "compute.c"), "-Wl,-z,defs"], check=True)
    return AicpuLibrary(lib)


def test_data_dependent_output_whose_shape_the_compute_never_sets(ops, tmp_path):
    """Issue 26: a compute function returning AICPU_OK without aicpu_set_output_shape for a
    data-dependent output is an error naming op, function, source and output, not the bound's
    shape full of garbage."""
    lib = _aicpu_library(tmp_path, "non_zero_custom", '#include "opbuild/aicpu.h"\n'
                         "uint32_t non_zero_custom_compute(AicpuContext *ctx) { (void)ctx; return AICPU_OK; }\n")
    x = np.array([[0, 1, 0], [2, 0, 3]], np.float32)
    out = np.full((2, 6), -1, np.int64)
    size, ex = ops.aclnnNonZeroCustomGetWorkspaceSize(x, out)
    ex.library = lib
    with pytest.raises(rt.AclnnError) as info:
        ops.aclnnNonZeroCustom(None, size, ex, None)
    from opbuild.runtime.errors import ACLNN_ERR_RUNTIME_ERROR

    assert info.value.status == ACLNN_ERR_RUNTIME_ERROR
    assert info.value.message == ("NonZeroCustom: the compute function non_zero_custom_compute (compute.c) returned "
                                  "without setting the shape of data-dependent output 0 'y' (call "
                                  "aicpu_set_output_shape(ctx, 0, ndim, dims)); its buffer holds no result of a known "
                                  "shape")
    assert ex.view_shapes is None
