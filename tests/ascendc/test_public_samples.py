"""Opt-in: the public Ascend samples' Ascend C ops, unchanged, through opbuild.

Set OPBUILD_ASCENDC_SAMPLES to a checkout of the samples' `operator/ascendc` (the directory
holding `0_introduction/`). Each sample op project is imported with `opbuild import ascendc`
(its op_host/ and op_kernel/ copied byte for byte), built by `scons ops` in a temporary project,
and run through Python one-shot and two-phase against numpy; where the sample has an
`AclNNInvocationNaive/main.cpp`, that file is compiled unchanged with the flags `opbuild config
--cflags --libs --package` prints and must print "test pass". Nothing of the samples is
committed here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import opbuild.runtime as rt
from opbuild.spec.naming import snake_case

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[0] / "runtime"))

import pkgbuild  # noqa: E402

ROOT = os.environ.get("OPBUILD_ASCENDC_SAMPLES")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not ROOT, reason="OPBUILD_ASCENDC_SAMPLES is not set")]

SAMPLES = {  # op -> (sample directory under 0_introduction, op project directory)
    "AddCustom": ("1_add_frameworklaunch", "AddCustom"),
    "LeakyReluCustom": ("9_leakyrelu_frameworklaunch", "LeakyReluCustom"),
    "AddnCustom": ("4_addn_frameworklaunch", "AddnCustom"),
    "ReduceCustom": ("14_reduce_frameworklaunch", "ReduceCustom"),
}


def _intro() -> Path:
    base = Path(ROOT)
    for candidate in (base / "0_introduction", base / "operator" / "ascendc" / "0_introduction"):
        if candidate.is_dir():
            return candidate
    pytest.fail(f"OPBUILD_ASCENDC_SAMPLES={ROOT} holds no 0_introduction/")


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    intro = _intro()
    root = pkgbuild.new_project(tmp_path_factory.mktemp("samples_project"), ops=())
    for op, (sample, project) in SAMPLES.items():
        proc = subprocess.run([sys.executable, "-m", "opbuild", "import", "ascendc", str(intro / sample / project),
                               "-o", str(root / "ops")], capture_output=True, text=True)
        assert proc.returncode == 0, f"{op}: {proc.stdout}{proc.stderr}"
    try:
        package = pkgbuild.build_project(root)
    except RuntimeError as exc:
        pytest.fail(str(exc))
    return intro, package, rt.import_ops(package)


def test_imported_sources_are_unchanged(samples):
    intro, package, _ = samples
    project = package.parents[3]
    for op, (sample, name) in SAMPLES.items():
        snake = snake_case(op)
        for sub in ("op_host", "op_kernel"):
            for original in (intro / sample / name / sub).iterdir():
                copied = project / "ops" / snake / sub / original.name
                assert copied.read_bytes() == original.read_bytes(), copied


def test_add_custom(samples):
    _, _, ops = samples
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 2048)).astype(np.float16)
    y = rng.standard_normal((8, 2048)).astype(np.float16)
    np.testing.assert_array_equal(ops.add_custom(x, y), x + y)
    z = np.empty_like(x)
    size, executor = ops.aclnnAddCustomGetWorkspaceSize(x, y, z)
    ops.aclnnAddCustom(rt.malloc(size) if size else None, size, executor, None)
    np.testing.assert_array_equal(z, x + y)


def test_leaky_relu_custom(samples):
    _, _, ops = samples
    x = np.random.default_rng(1).standard_normal((8, 200, 1024)).astype(np.float32)
    for slope in (0.0, 0.1):
        want = np.where(x >= 0, x, np.float32(slope) * x)
        np.testing.assert_allclose(ops.leaky_relu_custom(x, negative_slope=slope), want, rtol=0, atol=1e-6)


def test_addn_custom(samples):
    _, _, ops = samples
    rng = np.random.default_rng(2)
    x = rng.standard_normal((8, 2048)).astype(np.float16)
    y = rng.standard_normal((8, 2048)).astype(np.float16)
    np.testing.assert_array_equal(ops.addn_custom([x, y]), x + y)


@pytest.mark.parametrize("n", [64, 256, 512, 2000, 4096])  # tiling keys 1, 2, 2, 3, 3
def test_reduce_custom(samples, n):
    _, _, ops = samples
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    z = ops.reduce_custom(x)
    assert z.shape == (32,)
    assert float(z[0]) == pytest.approx(float(x.astype(np.float64).sum()), rel=1e-5, abs=1e-4)


@pytest.mark.parametrize("op", ["AddCustom", "ReduceCustom"])
def test_aclnn_invocation_naive_main_cpp(samples, tmp_path, op):
    intro, package, _ = samples
    from capp import build_and_run

    run = build_and_run(intro / SAMPLES[op][0] / "AclNNInvocationNaive" / "main.cpp", package, tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "test pass" in run.stdout, run.stdout
