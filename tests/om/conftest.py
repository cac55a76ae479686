"""Fixtures of the .om tests: the sample ops built once per session (tests/runtime/pkgbuild.py),
a private copy of that OPP tree, and a few models built from it."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))

import pkgbuild  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from omtools import build, model_dict  # noqa: E402

from opbuild.abi import package_layout as layout  # noqa: E402


@pytest.fixture(scope="session")
def opp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private copy of the sample OPP tree (out/opp): tests may delete it."""
    try:
        built = pkgbuild.sample_opp(tmp_path_factory.getbasetemp())
    except RuntimeError as exc:
        pytest.fail(str(exc))
    copy = tmp_path_factory.mktemp("om_opp") / "opp"
    shutil.copytree(built, copy, symlinks=True)
    return copy


@pytest.fixture(scope="session")
def fused_so(opp: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An 'autofuse' kernel: a MulCustom float32 kernel under another name."""
    src = opp / "vendors/customize" / layout.kernel_binary("ascend910b", "mul_custom", "MulCustom_FP32", ".so")
    dst = tmp_path_factory.mktemp("fused") / "fused_mul.so"
    shutil.copy2(src, dst)
    return dst


@pytest.fixture(scope="session")
def static_om(opp: Path) -> bytes:
    return build(opp, model_dict("static3", [16, 1024]))


@pytest.fixture(scope="session")
def dynamic_om(opp: Path, fused_so: Path) -> bytes:
    return build(opp, model_dict("dyn3", [-1, 1024], preprocess=True, autofuse=fused_so))


@pytest.fixture
def inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {"x": (rng.random((16, 1024), np.float32) - 0.5), "y": rng.random((16, 1024), np.float32)}
