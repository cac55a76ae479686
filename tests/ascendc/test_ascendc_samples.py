"""Opt-in: the public Ascend C samples' kernel sources, compiled unchanged with kernel_operator.h
(the four of issue 22 and the unaligned WholeReduceSum one: DataCopyPad with padding, strided
WholeReduceSum).

Set OPBUILD_ASCENDC_SAMPLES to a checkout of the samples' `operator/ascendc` (a directory holding
`0_introduction/`). Each kernel is compiled as the build does (DTYPE_* macros of its binary, a
hand-written kernel-side tiling header with the fields of the sample's tiling class), launched
with the tiling the sample's host code computes, and compared with numpy. The samples are not
part of this repository (see docs/ascendc.md).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import ackit
from opbuild.runtime import device
from opbuild.runtime.device import DeviceError
from test_ascendc_pipeline import list_desc

ROOT = os.environ.get("OPBUILD_ASCENDC_SAMPLES")
pytestmark = pytest.mark.skipif(not ROOT, reason="OPBUILD_ASCENDC_SAMPLES (the samples' operator/ascendc) is not set")

INTRO = Path(ROOT or ".") / "0_introduction"
SOURCES = {
    "add_custom": "1_add_frameworklaunch/AddCustom/op_kernel/add_custom.cpp",
    "leaky_relu_custom": "9_leakyrelu_frameworklaunch/LeakyReluCustom/op_kernel/leaky_relu_custom.cpp",
    "addn_custom": "4_addn_frameworklaunch/AddnCustom/op_kernel/addn_custom.cpp",
    "reduce_custom": "14_reduce_frameworklaunch/ReduceCustom/op_kernel/reduce_custom.cpp",
    "whole_reduce_sum_custom":
        "18_unaligned_wholereduces_frameworklaunch/WholeReduceSumCustom/op_kernel/whole_reduce_sum_custom.cpp",
}
TILE = [("uint32_t", "totalLength"), ("uint32_t", "tileNum")]


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    src = {name: (INTRO / rel).read_text() if (INTRO / rel).is_file() else "" for name, rel in SOURCES.items()}
    specs = [
        ackit.KernelSpec("add_custom_fp16", src["add_custom"], "add_custom", 5, TILE,
                         {"DTYPE_X": "half", "DTYPE_Y": "half", "DTYPE_Z": "half"}),
        ackit.KernelSpec("add_custom_fp32", src["add_custom"], "add_custom", 5, TILE,
                         {"DTYPE_X": "float", "DTYPE_Y": "float", "DTYPE_Z": "float"}),
        ackit.KernelSpec("leaky_relu_custom", src["leaky_relu_custom"], "leaky_relu_custom", 4,
                         TILE + [("float", "negativeSlope")], {"DTYPE_X": "float", "DTYPE_Y": "float"}),
        ackit.KernelSpec("addn_custom", src["addn_custom"], "addn_custom", 4, TILE,
                         {"DTYPE_SRCLIST": "half", "DTYPE_Z": "half"}),
        ackit.KernelSpec("reduce_custom", src["reduce_custom"], "reduce_custom", 4,
                         [("uint32_t", "totalLength"), ("uint32_t", "outLength")],
                         {"DTYPE_X": "float", "DTYPE_Z": "float"}, core_num=40),
        ackit.KernelSpec("whole_reduce_sum_custom", src["whole_reduce_sum_custom"], "whole_reduce_sum_custom", 4,
                         [("uint32_t", "totalLength"), ("uint32_t", "rows"), ("uint32_t", "cols")],
                         {"DTYPE_X": "half", "DTYPE_Y": "half"},
                         include_dirs=[(INTRO / SOURCES["whole_reduce_sum_custom"]).parent]),
    ]
    present = [spec for spec in specs if spec.source]  # a checkout without one sample skips its tests
    return ackit.build(tmp_path_factory.mktemp("ascendc_samples"), present)


def need(kernels, name: str) -> ackit.Kernel:
    if name not in kernels:
        pytest.skip(f"{name}: the sample is not in {INTRO}")
    return kernels[name]


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_add_custom(kernels, dtype):
    total = 8 * 2048  # the sample's shape; BLOCK_DIM 8, TILE_NUM 8
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal(total).astype(dtype) for _ in range(2))
    k = need(kernels, "add_custom_fp16" if dtype == np.float16 else "add_custom_fp32")
    (z,) = k.run([x, y], [np.zeros(total, dtype)], 8, k.tiling(totalLength=total, tileNum=8))
    np.testing.assert_array_equal(z, x + y)


def test_leaky_relu_custom(kernels):
    total, slope = 8 * 2048, 0.1  # BLOCK_DIM 8, TILE_NUM 16
    x = np.random.default_rng(1).standard_normal(total).astype(np.float32)
    k = need(kernels, "leaky_relu_custom")
    (y,) = k.run([x], [np.zeros(total, np.float32)], 8, k.tiling(totalLength=total, tileNum=16, negativeSlope=slope))
    np.testing.assert_array_equal(y, np.maximum(x, 0) + np.float32(slope) * np.minimum(x, 0))


def test_addn_custom(kernels):
    total = 8 * 2048
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal(total).astype(np.float16) for _ in range(2)]
    bufs = [device.upload(x) for x in xs]
    desc = device.upload(list_desc(bufs, [(total,)] * 2))
    k = need(kernels, "addn_custom")
    (z,) = k.run([], [np.zeros(total, np.float16)], 8, k.tiling(totalLength=total, tileNum=8), raw=[desc])
    np.testing.assert_array_equal(z, xs[0] + xs[1])


# the sample's host tiling: key 1 up to 64 floats, 2 up to 512, 3 up to 4096 (its test: 4096)
@pytest.mark.parametrize("key,n", [(1, 64), (2, 512), (2, 104), (3, 4096), (3, 1024)])
def test_reduce_custom(kernels, key, n):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    k = need(kernels, "reduce_custom")
    (z,) = k.run([x], [np.zeros(32, np.float32)], 1, k.tiling(key, totalLength=n, outLength=32))
    np.testing.assert_allclose(z[0], x.astype(np.float64).sum(), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("key,n,message", [
    (4, 10000, r"WholeReduceSum: dst: repeat \d+ lane \d+ reaches element \d+ of a LocalTensor of 32 elements|"
               r"WholeReduceSum: dst: elements \[0, 157\) are outside the LocalTensor of 32 elements"),
    (5, 20000, r"Add: dst: repeat \d+ lane \d+ reaches element \d+ of a LocalTensor of 32 elements"),
])
def test_reduce_custom_single_modes_overrun_their_output(kernels, key, n, message):
    """Keys 4 and 5 (10000 / 20000 elements) write their partial sums into the 32-float output
    buffer: 157 and 10000 elements. The device does not notice (the UB after it is unused); the
    CPU twin fails the block."""
    x = np.ones(n, np.float32)
    k = need(kernels, "reduce_custom")
    with pytest.raises(DeviceError, match=message):
        k.run([x], [np.zeros(32, np.float32)], 1, k.tiling(key, totalLength=n, outLength=32))


@pytest.mark.parametrize("rows,cols", [(13, 123), (4, 16), (7, 1)])  # the sample's test shape first
def test_whole_reduce_sum_custom(kernels, rows, cols):
    x = np.random.default_rng(rows).standard_normal((rows, cols)).astype(np.float16)
    k = need(kernels, "whole_reduce_sum_custom")
    (y,) = k.run([x], [np.zeros((rows, 1), np.float16)], 1, k.tiling(totalLength=x.size, rows=rows, cols=cols))
    np.testing.assert_allclose(y[:, 0], x.astype(np.float64).sum(axis=1), rtol=2e-3, atol=2e-3)
