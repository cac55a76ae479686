"""Ascend C ops end to end: the in-house lookalike ops of tests/ascendc/ops (the samples' APIs:
TPipe/TQue/DataCopy/Add, a float attr through the tiling class, a dynamic input read with
ListTensorDesc, tiling keys named by #define with level-0 WholeReduceSum in normal and counter
mask mode) built by `scons ops` into a temporary project, then run through Python one-shot,
two-phase and the C ABI, against numpy."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import opbuild.runtime as rt

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests" / "runtime"))

import pkgbuild  # noqa: E402

pytestmark = pytest.mark.slow

LOOKALIKES = ("add_ascendc", "leaky_ascendc", "addn_ascendc", "reduce_ascendc")


@pytest.fixture(scope="module")
def ascendc_package(tmp_path_factory) -> Path:
    root = pkgbuild.new_project(tmp_path_factory.mktemp("ascendc_project"), ops=())
    for name in LOOKALIKES:
        shutil.copytree(HERE / "ops" / name, root / "ops" / name)
    try:
        return pkgbuild.build_project(root)
    except RuntimeError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="module")
def ops(ascendc_package):
    return rt.import_ops(ascendc_package)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_add_one_shot_and_two_phase(ops, dtype):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 2048)).astype(dtype)
    y = rng.standard_normal((8, 2048)).astype(dtype)
    np.testing.assert_array_equal(ops.add_ascendc(x, y), x + y)
    z = np.empty_like(x)
    size, executor = ops.aclnnAddAscendcGetWorkspaceSize(x, y, z)
    suffix = "fp16" if dtype == np.float16 else "fp32"
    assert executor.binary_name == f"AddAscendc_{suffix}"
    ops.aclnnAddAscendc(rt.malloc(size) if size else None, size, executor, None)
    np.testing.assert_array_equal(z, x + y)


def test_add_tiling_failure_is_an_error(ops):
    x = np.ones(10, np.float16)  # not whole 32-byte tiles: the tiling function refuses
    with pytest.raises(rt.AclnnError) as info:
        ops.add_ascendc(x, x)
    assert "AddAscendc" in str(info.value)


@pytest.mark.parametrize("slope", [0.0, 0.25, -1.5])
def test_leaky_float_attr_through_the_tiling_class(ops, slope):
    x = np.linspace(-4, 4, 4 * 4 * 2 * 64, dtype=np.float32)
    want = np.where(x >= 0, x, np.float32(slope) * x).astype(np.float32)
    np.testing.assert_allclose(ops.leaky_ascendc(x, negative_slope=slope), want, rtol=0, atol=1e-6)


def test_leaky_attr_default(ops):
    x = np.linspace(-1, 1, 512, dtype=np.float32)
    np.testing.assert_array_equal(ops.leaky_ascendc(x), np.maximum(x, 0))


def test_addn_dynamic_input(ops):
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal(1024).astype(np.float16) for _ in range(3)]
    want = ((xs[0] + xs[1]) + xs[2])
    np.testing.assert_array_equal(ops.addn_ascendc(xs), want)


@pytest.mark.parametrize("n", [8, 48, 64, 72, 1000, 4096])
def test_reduce_tiling_keys(ops, n):
    x = (np.arange(n, dtype=np.float32) % 7) - 3
    z = ops.reduce_ascendc(x)
    assert z.shape == (8,)
    assert z[0] == pytest.approx(float(x.sum()), abs=1e-3)
    assert np.all(z[1:] == 0)


def test_kernel_json_from_the_sources(ascendc_package):
    kernels = ascendc_package / "op_impl/ai_core/tbe/kernel/ascend910b"
    leaky = json.loads((kernels / "leaky_ascendc/LeakyAscendc_fp32.json").read_text())
    assert leaky["opParaSize"] == 16  # 3 four-byte fields, rounded up to 8 as CANN does
    reduce = json.loads((kernels / "reduce_ascendc/ReduceAscendc_fp32.json").read_text())
    assert [k["kernelName"].rsplit("_", 1)[1] for k in reduce["kernelList"]] == ["1", "2"]


def test_the_tiling_library_exports_only_the_bridges(ascendc_package):
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("no nm")
    from opbuild.abi import package_layout

    lib = ascendc_package / package_layout.tiling_lib()
    out = subprocess.run([nm, "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True).stdout
    names = {line.split()[-1] for line in out.splitlines() if line.strip()}
    ours = {n for n in names if "opbuild" in n}
    assert {f"{op}_opbuild_tiling" for op in LOOKALIKES} <= ours
    # two host sources define optiling::TilingData; neither's inline members leak into the export table
    assert not any("TilingData" in n for n in names), sorted(n for n in names if "TilingData" in n)



def test_c_abi_app_built_with_opbuild_config(ascendc_package, tmp_path):
    """A C++ app written like the samples' AclNNInvocationNaive main.cpp, compiled with the flags
    `opbuild config --cflags --libs --package` prints, run with the environment `opbuild env` prints."""
    from capp import build_and_run

    run = build_and_run(HERE / "apps" / "add_naive.cpp", ascendc_package, tmp_path, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip().splitlines()[-1] == "test pass"


def test_an_edited_tiling_header_is_checked_again(tmp_path):
    """The checked spec of an Ascend C op depends on its host headers too: adding a field to the
    tiling class (in op_host/*_tiling.h, not named in op.yaml) changes opParaSize at the next build."""
    root = pkgbuild.new_project(tmp_path / "project", ops=())
    shutil.copytree(HERE / "ops" / "leaky_ascendc", root / "ops" / "leaky_ascendc")
    package = pkgbuild.build_project(root)
    desc = package / "op_impl/ai_core/tbe/kernel/ascend910b/leaky_ascendc/LeakyAscendc_fp32.json"
    assert json.loads(desc.read_text())["opParaSize"] == 16
    header = root / "ops/leaky_ascendc/op_host/leaky_ascendc_tiling.h"
    header.write_text(header.read_text().replace("TILING_DATA_FIELD_DEF(float, slope);",
                                                 "TILING_DATA_FIELD_DEF(float, slope);\nTILING_DATA_FIELD_DEF(uint64_t, extra);"))
    pkgbuild.build_project(root)
    assert json.loads(desc.read_text())["opParaSize"] == 24


def _summary(stdout: str) -> tuple[int, int]:
    import re

    m = re.search(r"^opbuild: ok: .*\((\d+) compiled, (\d+) from cache", stdout, re.M)
    assert m, stdout[-2000:]
    return int(m.group(1)), int(m.group(2))


def test_a_second_checkout_at_another_path_compiles_nothing(tmp_path):
    """Ascend C ops are cached and path-independent like C ops: with the first project's
    OPBUILD_CACHE_DIR, the same ops at another path compile nothing, and the packages are equal."""
    import os

    env = {**{k: v for k, v in os.environ.items() if k != "SCONSFLAGS"}, "OPBUILD_CACHE_DIR": str(tmp_path / "cache"),
           "OPBUILD_VALIDATE_CACHE": str(tmp_path / "validate")}
    outs = []
    for where in ("a", "checkout-two/b"):
        root = pkgbuild.new_project(tmp_path / where, ops=())
        for name in ("add_ascendc", "leaky_ascendc"):
            shutil.copytree(HERE / "ops" / name, root / "ops" / name)
        proc = subprocess.run([sys.executable, "-m", "SCons", "-Q", "-j2", "ops"], cwd=root, env=env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        outs.append((root, _summary(proc.stdout)))
    (first, (compiled_a, _)), (second, (compiled_b, _)) = outs
    assert compiled_a > 0 and compiled_b == 0
    files = sorted(p.relative_to(first / "out/opp") for p in (first / "out/opp").rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second / "out/opp") for p in (second / "out/opp").rglob("*") if p.is_file())
    for rel in files:
        assert (first / "out/opp" / rel).read_bytes() == (second / "out/opp" / rel).read_bytes(), rel
        assert os.fsencode(str(first)) not in (first / "out/opp" / rel).read_bytes(), rel


def test_a_cpu_twin_check_names_op_binary_block_api_and_numbers(ops):
    """Through the runtime, a failed CPU-twin check is AclnnError 361001 naming op, binary, block, API
    and the numbers: 128 elements give LeakyAscendc's tiles of 4 floats, a DataCopy of 16 bytes."""
    with pytest.raises(rt.AclnnError) as info:
        ops.leaky_ascendc(np.ones(128, np.float32), negative_slope=0.5)
    assert info.value.status == 361001
    assert re.search(r"^\[ACLNN_ERR_RUNTIME_ERROR 361001\] LeakyAscendc: kernel LeakyAscendc_fp32 failed: block \d+: "
                     r"DataCopy: 4 elements of 4 bytes = 16 bytes, not a multiple of 32 \(use DataCopyPad\)",
                     str(info.value)), str(info.value)
