"""The host bridge runs an Ascend C op's tiling, InferShape and InferDataType functions through
opbuild's C ABI (a TilingContext from opbuild.runtime.host.tiling_context), with five lookalike ops linked
into one shared library (two of them define different optiling::TilingData classes)."""

from __future__ import annotations

import ctypes
import struct
import subprocess

import pytest

from opbuild.abi import vocabulary
from opbuild.runtime.host.tiling_context import GRAPH_FAILED, GRAPH_PARAM_INVALID, GRAPH_SUCCESS, build_tiling_context
from opbuild.runtime_paths import native_include_dir

_TILING = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_void_p)
_SHAPE = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_int64),
                          ctypes.POINTER(ctypes.c_uint32))
_DTYPE = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_int32))

pytestmark = pytest.mark.slow  # builds five ops' host blobs (a minute of g++ on a loaded machine)

SOC = vocabulary.SOC["ascend910b"]


def t(dtype: str, shape) -> tuple:
    return (dtype, "ND", tuple(shape), None)


def context(op, inputs, outputs, attrs=(), soc=SOC, capacity=4096):
    return build_tiling_context(op, inputs, outputs, list(attrs), soc.name, soc.core_num, soc.ub_size,
                                tiling_capacity=capacity)


def tiling(lib, snake, holder) -> int:
    return _TILING(ctypes.cast(getattr(lib, f"{snake}_opbuild_tiling"), ctypes.c_void_p).value)(holder.ptr)


def infer_shape(lib, snake, holder, index=0):
    fn = _SHAPE(ctypes.cast(getattr(lib, f"{snake}_opbuild_infer_shape"), ctypes.c_void_p).value)
    dims = (ctypes.c_int64 * 8)()
    n = ctypes.c_uint32(99)
    status = fn(holder.ptr, index, dims, ctypes.byref(n))
    return status, tuple(dims[: n.value]) if status == GRAPH_SUCCESS else None


def infer_dtype(lib, snake, holder, index=0):
    fn = _DTYPE(ctypes.cast(getattr(lib, f"{snake}_opbuild_infer_dtype"), ctypes.c_void_p).value)
    out = ctypes.c_int32(-1)
    status = fn(holder.ptr, index, ctypes.byref(out))
    return status, vocabulary.DTYPE_BY_GE[out.value].name if status == GRAPH_SUCCESS else None


def test_vec_add_tiling(host_lib):
    h = context("VecAddCustom", [[t("float16", (4, 6))], [t("float16", (4, 6))]], [[t("float16", (4, 6))]])
    assert tiling(host_lib, "vec_add_custom", h) == GRAPH_SUCCESS, h.error
    assert h.block_dim == 4
    assert h.tiling_key == 0
    assert h.workspace_size == 256 + 64  # the sum of the GetWorkspaceSizes entries
    assert struct.unpack("<II", h.tiling_data()) == (24, 2)


def test_leaky_tiling_has_its_own_tiling_data_class(host_lib):
    """LeakyCustom's optiling::TilingData (3 fields: 16 bytes) next to VecAddCustom's (8 bytes)."""
    h = context("LeakyCustom", [[t("float32", (10, 10))]], [[t("float32", (10, 10))]], [("float", 0.125)])
    assert tiling(host_lib, "leaky_custom", h) == GRAPH_SUCCESS, h.error
    data = h.tiling_data()
    assert len(data) == 16
    total, tiles, slope = struct.unpack("<IIf", data[:12])
    assert (total, tiles, slope) == (100, SOC.ub_size // 1024, 0.125)
    assert h.block_dim == SOC.vector_core_num  # PlatformAscendC::GetCoreNumAiv
    assert h.workspace_size == 16 * 1024 * 1024  # GetLibApiWorkSpaceSize on a 910B-class SoC
    h = context("LeakyCustom", [[t("float32", (3,))]], [[t("float32", (3,))]], [("float", 0.5)],
                soc=vocabulary.SOC["ascend310p"])
    assert tiling(host_lib, "leaky_custom", h) == GRAPH_SUCCESS, h.error
    assert h.block_dim == vocabulary.SOC["ascend310p"].core_num
    assert h.workspace_size == 0


def test_dynamic_input_list(host_lib):
    items = [t("float16", (5, 2)), t("float16", (7, 2)), t("float16", (9, 2))]
    h = context("SumListCustom", [items], [[t("float16", (5, 2))]])
    assert tiling(host_lib, "sum_list_custom", h) == GRAPH_SUCCESS, h.error
    assert struct.unpack("<6I", h.tiling_data()) == (10, 3, 5, 7, 9, 0)
    assert infer_shape(host_lib, "sum_list_custom", h) == (GRAPH_SUCCESS, (5, 2))
    assert infer_dtype(host_lib, "sum_list_custom", h) == (GRAPH_SUCCESS, "float16")


REDUCE_ATTRS = [("int", 7), ("float", 1.5), ("bool", True), ("str", "mean"), ("list_int", [0, 1, 2]),
                ("list_float", [0.5]), ("list_bool", [True])]


@pytest.mark.parametrize("dtype, n, key", [("float16", 128, 1), ("float32", 128, 2), ("float32", 64, 1),
                                           ("float16", 4096, 2)])
def test_reduce_tiling_key_from_size_and_dtype(host_lib, dtype, n, key):
    h = context("ReduceSumCustom", [[t(dtype, (n,))], []], [[t("float32", (2, 32))]], REDUCE_ATTRS)
    assert tiling(host_lib, "reduce_sum_custom", h) == GRAPH_SUCCESS, h.error
    assert h.tiling_key == key
    data = h.tiling_data()
    assert len(data) == 32
    total, = struct.unpack_from("<I", data, 0)
    rank, elements = struct.unpack_from("<H6xQ", data, 8)  # the nested ReduceShapeInfo at offset 8
    mode, = struct.unpack_from("<B", data, 24)
    assert (total, rank, elements, mode) == (n, 1, n + 3000, 11)


def test_reduce_key_class_and_attrs(host_lib):
    """Key 3 saves its own class (TilingDataBig, registered as ReduceSumCustom_3); bool false and
    another str reach the function by index."""
    attrs = [("int", -5), ("float", 1.5), ("bool", False), ("str", "sum"), ("list_int", []),
             ("list_float", []), ("list_bool", [])]
    h = context("ReduceSumCustom", [[t("float32", (100, 100))], []], [[t("float32", (0, 32))]], attrs)
    assert tiling(host_lib, "reduce_sum_custom", h) == GRAPH_SUCCESS, h.error
    assert h.tiling_key == 3
    assert struct.unpack("<Qi4x", h.tiling_data()) == (10000, -5)
    h = context("ReduceSumCustom", [[t("float32", (8,))], []], [[t("float32", (0, 32))]], attrs)
    assert tiling(host_lib, "reduce_sum_custom", h) == GRAPH_SUCCESS, h.error
    assert struct.unpack_from("<B", h.tiling_data(), 24) == (2,)


def test_infer_shape_and_dtype(host_lib):
    h = context("VecAddCustom", [[t("float32", (2, 3))], [t("float32", (4, 5, 6))]], [[]])
    assert infer_shape(host_lib, "vec_add_custom", h) == (GRAPH_SUCCESS, (4, 5, 6))
    assert infer_dtype(host_lib, "vec_add_custom", h) == (GRAPH_SUCCESS, "float32")
    h = context("ReduceSumCustom", [[t("float16", (9,))], []], [[]], REDUCE_ATTRS)
    assert infer_shape(host_lib, "reduce_sum_custom", h) == (GRAPH_SUCCESS, (3, 32))  # {axes.size(), 32}
    assert infer_dtype(host_lib, "reduce_sum_custom", h) == (GRAPH_SUCCESS, "float32")


def test_infer_of_a_missing_output(host_lib):
    h = context("LeakyCustom", [[t("float32", (3,))]], [[]], [("float", 0.5)])
    status, _ = infer_shape(host_lib, "leaky_custom", h, index=1)
    assert status == GRAPH_FAILED
    assert h.error == "LeakyCustom: no output 1 (the OpDef has 1)"


def test_infer_shape_that_sets_no_shape_is_an_error(host_lib):
    h = context("NoShapeCustom", [[t("float32", (13, 123))]], [[]])
    assert infer_shape(host_lib, "no_shape_custom", h)[0] == GRAPH_FAILED
    assert h.error.startswith("NoShapeCustom: InferShape set no shape for output 0")


def test_failing_tiling_function_names_the_op(host_lib):
    h = context("VecAddCustom", [[t("float16", (0, 6))], [t("float16", (0, 6))]], [[t("float16", (0, 6))]])
    assert tiling(host_lib, "vec_add_custom", h) == GRAPH_FAILED
    assert h.error == f"VecAddCustom: the tiling function returned {GRAPH_FAILED} (GRAPH_FAILED is {GRAPH_FAILED})"


def test_a_tiling_function_rejecting_the_call_is_param_invalid(host_lib):
    """ge::GRAPH_PARAM_INVALID from the op's tiling function is passed on (the runtime's 161002)."""
    h = context("VecAddCustom", [[t("float16", (2, 6))], [t("float16", (3, 6))]], [[t("float16", (2, 6))]])
    assert tiling(host_lib, "vec_add_custom", h) == GRAPH_PARAM_INVALID
    assert h.error == "VecAddCustom: the tiling function rejected the call's parameters (GRAPH_PARAM_INVALID)"


def test_tiling_data_larger_than_the_buffer(host_lib):
    """SaveToBuffer's std::runtime_error is caught by the bridge and becomes the context's error."""
    h = context("LeakyCustom", [[t("float32", (3,))]], [[t("float32", (3,))]], [("float", 0.5)], capacity=8)
    assert tiling(host_lib, "leaky_custom", h) == GRAPH_FAILED
    assert h.error == ("LeakyCustom: the tiling function threw: tiling data class TilingData of 16 bytes does not "
                       "fit the tiling buffer of 8 bytes")


@pytest.mark.parametrize("bias, block_dim", [(False, 2), (True, 3)])
def test_get_tiling_data_of_a_plain_struct(host_lib, bias, block_dim):
    """GetTilingData<T>() reports sizeof(T) bytes; an Attr without AttrType reads its value."""
    x = t("int32", (4,))
    h = context("PlainStructCustom", [[x], [t("float32", (4,))] if bias else []], [[x]], [("int", 42)])
    assert tiling(host_lib, "plain_struct_custom", h) == GRAPH_SUCCESS, h.error
    assert struct.unpack("<IIq", h.tiling_data()) == (3, 4, 42)
    assert (h.tiling_key, h.block_dim, h.workspace_size) == (42, block_dim, 0)


def test_op_without_infer_functions(host_lib):
    x = t("float32", (4,))
    h = context("PlainStructCustom", [[x], []], [[]], [("int", 1)])
    assert infer_shape(host_lib, "plain_struct_custom", h)[0] == GRAPH_FAILED
    assert h.error == "PlainStructCustom: the OpDef sets no InferShape (SetInferShape)"
    assert infer_dtype(host_lib, "plain_struct_custom", h)[0] == GRAPH_FAILED
    assert h.error == "PlainStructCustom: the OpDef sets no InferDataType (SetInferDataType)"


def test_blobs_link_with_cc_and_c_tiling_objects(host_blobs, tmp_path):
    """A package's tiling library linked by the C compiler (`cc -shared ... -lstdc++`) from plain C
    tiling objects and Ascend C host blobs: both kinds work, C++ exceptions still unwind."""
    c_src = tmp_path / "c_op.c"
    c_src.write_text('#include "opbuild/tiling.h"\n'
                     'OPBUILD_API uint32_t c_op_opbuild_tiling(TilingContext *ctx) { tiling_set_block_dim(ctx, 5); return 0; }\n')
    subprocess.run(["cc", "-fPIC", f"-I{native_include_dir()}", "-c", str(c_src), "-o", str(tmp_path / "c_op.o")],
                   check=True)
    lib_path = tmp_path / "libmixed.so"
    subprocess.run(["cc", "-shared", "-o", str(lib_path), str(tmp_path / "c_op.o"), str(host_blobs["LeakyCustom"]),
                    str(host_blobs["VecAddCustom"]), "-lstdc++"], check=True)
    lib = ctypes.CDLL(str(lib_path), mode=ctypes.RTLD_LOCAL)
    x = [[t("float32", (3,))]]
    h = context("Other", x, x)
    assert tiling(lib, "c_op", h) == GRAPH_SUCCESS and h.block_dim == 5
    h = context("VecAddCustom", x + x, x)
    assert tiling(lib, "vec_add_custom", h) == GRAPH_SUCCESS, h.error
    assert struct.unpack("<II", h.tiling_data()) == (3, 2)
    h = context("LeakyCustom", x, x, [("float", 0.5)], capacity=8)
    assert tiling(lib, "leaky_custom", h) == GRAPH_FAILED
    assert "the tiling function threw" in h.error
