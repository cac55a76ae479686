"""Opt-in: the public Ascend C samples' op_host sources compile UNCHANGED against opbuild's host
headers, describe themselves, and tile through the bridge.

Set OPBUILD_ASCENDC_SAMPLES to a directory laid out like the samples' `operator/ascendc` (it
contains `0_introduction/`); the samples are not part of opbuild.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from opbuild.abi import vocabulary
from opbuild.runtime.host.tiling_context import GRAPH_SUCCESS, build_tiling_context
from opbuild.ascendc import host

ROOT = os.environ.get("OPBUILD_ASCENDC_SAMPLES")
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not ROOT, reason="OPBUILD_ASCENDC_SAMPLES is not set")]

SAMPLES = {
    # op type: (snake, op_host dir under 0_introduction, input dtypes, attrs (name, type, default),
    #           socs, tiling class size)
    "AddCustom": ("add_custom", "1_add_frameworklaunch/AddCustom", [("x", "required", ("float16",)),
                  ("y", "required", ("float16",))], [], ("ascend910", "ascend310p", "ascend310b", "ascend910b"), 8),
    "LeakyReluCustom": ("leaky_relu_custom", "9_leakyrelu_frameworklaunch/LeakyReluCustom",
                        [("x", "required", ("float32",))], [("negative_slope", "float", 0.0)],
                        ("ascend910", "ascend310p", "ascend310b", "ascend910b"), 16),
    "AddnCustom": ("addn_custom", "4_addn_frameworklaunch/AddnCustom", [("srcList", "dynamic", ("float16",))], [],
                   ("ascend310p", "ascend910b"), 8),
    "ReduceCustom": ("reduce_custom", "14_reduce_frameworklaunch/ReduceCustom",
                     [("x", "required", ("float16", "float32"))], [], ("ascend310p", "ascend910b"), 8),
}

# op_host directories that use host APIs opbuild does not provide yet (matmul_tiling, the
# AscendC:: library tiling helpers, template tiling keys)
NOT_YET = ("matmul", "broadcast", "addtemplate")


def host_sources(op_dir: str) -> list[Path]:
    return sorted((Path(ROOT) / "0_introduction" / op_dir / "op_host").glob("*.cpp"))


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("samples")
    blobs = [host.build_blob(host_sources(d), snake, op, work / snake) for op, (snake, d, *_) in SAMPLES.items()]
    return host.link_shared(blobs, work / "libsamples.so")


@pytest.mark.parametrize("op", SAMPLES)
def test_sample_describes_itself(library, op):
    snake, op_dir, inputs, attrs, socs, size = SAMPLES[op]
    desc = host.describe_library(library, snake, [str(s) for s in host_sources(op_dir)])
    assert [o.op for o in desc.ops] == [op]
    assert [(p.name, p.param_type, p.dtypes) for p in desc.op.inputs] == inputs
    assert [(a.name, a.type, a.default) for a in desc.op.attrs] == attrs
    assert desc.op.socs == socs
    assert desc.classes_of(op)[""].size == size
    assert "#define OPBUILD_ASCENDC_TILING_TYPE TilingData" in host.kernel_tiling_header(desc)


def test_sample_tiling_through_the_bridge(library):
    import ctypes

    soc = vocabulary.SOC["ascend910b"]
    lib = ctypes.CDLL(str(library), mode=ctypes.RTLD_LOCAL)
    fn = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_void_p)
    x = ("float32", "ND", (8, 256), None)
    h = build_tiling_context("LeakyReluCustom", [[x]], [[x]], [("float", 0.1)], soc.name, soc.core_num, soc.ub_size)
    assert fn(ctypes.cast(lib.leaky_relu_custom_opbuild_tiling, ctypes.c_void_p).value)(h.ptr) == GRAPH_SUCCESS, h.error
    total, tiles, slope = struct.unpack("<IIf4x", h.tiling_data())
    assert (total, tiles, h.block_dim) == (2048, 16, 8)
    assert slope == pytest.approx(0.1)
    x = ("float16", "ND", (100,), None)
    h = build_tiling_context("ReduceCustom", [[x]], [[x]], [], soc.name, soc.core_num, soc.ub_size)
    assert fn(ctypes.cast(lib.reduce_custom_opbuild_tiling, ctypes.c_void_p).value)(h.ptr) == GRAPH_SUCCESS, h.error
    assert h.tiling_key == 1  # at most 128 halves: the WholeReduceSum-only variant


def _other_op_hosts() -> list[str]:
    if not ROOT:
        return []
    base = Path(ROOT) / "0_introduction"
    dirs = sorted(p.parent for p in base.glob("*_frameworklaunch*/**/op_host/*.cpp"))
    return sorted({str(d.relative_to(base)) for d in dirs})


@pytest.mark.parametrize("op_host", _other_op_hosts())
def test_other_samples_compile(op_host, tmp_path):
    if any(word in op_host.lower() for word in NOT_YET):
        pytest.skip("uses host tiling APIs opbuild does not provide yet")
    src = sorted((Path(ROOT) / "0_introduction" / op_host).glob("*.cpp"))
    host.build_blob(src, "sample_op", "SampleOp", tmp_path)
