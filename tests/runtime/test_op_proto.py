"""op_proto of a built package: op_proto/inc/op_proto.h and
op_proto/lib/linux/<arch>/libcust_opsproto_rt2.0.so, its symbols resolved with ctypes and called
with a real TilingContext (the inference the runtime and the .om builder use)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import opbuild.runtime as rt
from opbuild.abi import package_layout as layout
from opbuild.runtime.host.tiling_context import TensorDesc, build_tiling_context

pytestmark = pytest.mark.slow  # the session's sample package

INFER_INVALID = 1  # opbuild/infer.h


def _call(lib, symbol: str, op: str, inputs, attrs=(), n_outputs: int = 1):
    fn = getattr(lib, symbol)
    fn.restype, fn.argtypes = ctypes.c_uint32, [ctypes.c_void_p, ctypes.c_void_p]
    holder = build_tiling_context(op, inputs, [[] for _ in range(n_outputs)], list(attrs), "ascend910b", 40, 196608)
    outputs = (TensorDesc * n_outputs)()
    status = fn(holder.ptr, ctypes.addressof(outputs))
    return status, [list(o.dims[:o.dim_num]) for o in outputs], [o.dtype for o in outputs], holder.error


def test_paths_and_header(package, builtin_package):
    for root in (package, builtin_package):
        header = (root / layout.op_proto_header()).read_text()
        assert (root / layout.op_proto_lib()).is_file()
        assert '#include "opbuild/infer.h"' in header
    header = (package / layout.op_proto_header()).read_text()
    assert "OPBUILD_API uint32_t MulCustomInferShape(TilingContext *ctx, OpbuildTensorDesc *outputs);" in header
    assert "OPBUILD_API uint32_t MulCustomInferDataType(TilingContext *ctx, OpbuildTensorDesc *outputs);" in header
    assert str(package.parent.parent.parent) not in header  # no build-machine path


def test_header_compiles_with_the_library(package, tmp_path):
    """A C program includes op_proto.h, links libcust_opsproto_rt2.0.so and calls MulCustomInferShape."""
    import shutil
    import subprocess

    from opbuild.runtime_paths import native_include_dir

    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    lib = package / layout.op_proto_lib()
    (tmp_path / "main.c").write_text(
        '#include "op_proto.h"\n'
        "int main(void) {\n"
        "    uint32_t start[2] = {0, 1}, count[2] = {1, 1}, none = 0;\n"
        "    OpbuildTensorDesc in[2] = {{.dtype = OPBUILD_DT_FLOAT, .dim_num = 2, .dims = {3, 1}},\n"
        "                               {.dtype = OPBUILD_DT_FLOAT, .dim_num = 1, .dims = {4}}};\n"
        "    TilingContext ctx = {.abi_version = OPBUILD_TILING_ABI_VERSION, .input_num = 2, .output_num = 1,\n"
        "                         .input_start = start, .input_count = count, .input_descs = in,\n"
        "                         .output_start = &none, .output_count = &none, .op_type = \"MulCustom\"};\n"
        "    OpbuildTensorDesc out[1] = {{0}};\n"
        "    if (MulCustomInferShape(&ctx, out) != 0) return 1;\n"
        "    printf(\"%u %lld %lld\\n\", out[0].dim_num, (long long)out[0].dims[0], (long long)out[0].dims[1]);\n"
        "    return 0;\n"
        "}\n")
    exe = tmp_path / "main"
    subprocess.run(["cc", "-std=c11", f"-I{native_include_dir()}", f"-I{package / 'op_proto/inc'}", "-o", str(exe),
                    str(tmp_path / "main.c"), str(lib), f"-Wl,-rpath,{lib.parent}"], check=True)
    assert subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split() == ["2", "3", "4"]


def test_symbols_resolved_and_called(package, builtin_package):
    lib = ctypes.CDLL(str(package / layout.op_proto_lib()))
    status, shapes, dtypes, _ = _call(lib, "MulCustomInferShape", "MulCustom",
                                      [[("float16", "ND", (4, 1, 3), None)], [("float32", "ND", (5, 1), None)]])
    assert status == 0 and shapes == [[4, 5, 3]]
    status, _, dtypes, _ = _call(lib, "MulCustomInferDataType", "MulCustom",
                                 [[("float16", "ND", (2,), None)], [("float32", "ND", (2,), None)]])
    assert status == 0 and dtypes == [0]  # ge::DT_FLOAT: the declared (float16, float32) -> float32 column
    status, _, _, error = _call(lib, "MulCustomInferShape", "MulCustom",
                                [[("float32", "ND", (2, 3), None)], [("float32", "ND", (4,), None)]])
    assert status == INFER_INVALID and error == "MulCustom: shapes do not broadcast: x[2, 3], y[4]"

    builtin = ctypes.CDLL(str(builtin_package / layout.op_proto_lib()))
    axes_keep = [("list_int", (0, -1)), ("bool", True)]
    status, shapes, _, _ = _call(builtin, "ReduceSumCustomInferShape", "ReduceSumCustom",
                                 [[("float32", "ND", (2, 3, 4), None)]], axes_keep)
    assert status == 0 and shapes == [[1, 3, 1]]
    status, _, _, error = _call(builtin, "ReduceSumCustomInferShape", "ReduceSumCustom",
                                [[("float32", "ND", (2, 3), None)]], [("list_int", (5,)), ("bool", False)])
    assert status == INFER_INVALID and "axis 5 is out of range for rank 2" in error
    status, _, _, error = _call(builtin, "ReduceSumCustomInferDataType", "ReduceSumCustom",
                                [[("int32", "ND", (2,), None)]], axes_keep)
    assert status == INFER_INVALID
    assert error == "ReduceSumCustom: no declared dtype combination has x=int32 (declared: x=float32; x=float16)"


def test_tiling_library_carries_the_same_functions(package):
    """What an .om packs (the tiling library as SpaceRegistry) infers too."""
    lib = ctypes.CDLL(str(package / layout.tiling_lib()))
    status, shapes, _, _ = _call(lib, "AddNCustomInferShape", "AddNCustom", [[("int32", "ND", (7, 2), None)] * 3])
    assert status == 0 and shapes == [[7, 2]]


def test_one_shot_allocates_what_op_proto_infers(ops):
    x, y = np.ones((3, 1), np.float16), np.ones((1, 4), np.float32)
    z = ops.mul_custom(x, y)
    assert z.shape == (3, 4) and z.dtype == np.float32
    with pytest.raises(rt.AclnnError, match="shapes do not broadcast: x\\[2, 3\\], y\\[4\\]"):
        ops.mul_custom(np.ones((2, 3), np.float32), np.ones(4, np.float32))
