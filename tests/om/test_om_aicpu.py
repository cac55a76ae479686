"""AI CPU nodes in .om models: libcust_aicpu_kernels.so in CUST_AICPU_KERNELS (GE KernelStore
layout, once per package), a model mixing AI Core and AI CPU nodes run without any package, trust,
and the partition's checks."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from opbuild.om import format as omf
from opbuild.om import kernel_store
from opbuild.om.so_store import SoBinType
from opbuild.om.errors import OmError
from opbuild.om.loader import parse_om
from omtools import build

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "models"


def _reference(x: np.ndarray) -> dict[str, np.ndarray]:
    """examples/models/mixed_aicpu.yaml in numpy."""
    t = x * np.load(EXAMPLES / "scale.npy")
    t1 = np.where(t > 0, t, np.float32(0.0) * t)
    order = np.argsort(-t1, axis=-1, kind="stable")
    return {"sorted": np.take_along_axis(t1, order, -1), "order": order, "nonzero": np.array(np.nonzero(t1))}


def test_mixed_model_runs_without_any_package(opp, tmp_path):
    """The CLI: build the mixed example, delete the OPP tree, run with no OPP environment."""
    work = tmp_path / "w"
    shutil.copytree(opp, work / "opp", symlinks=True)
    shutil.copy2(EXAMPLES / "mixed_aicpu.yaml", work / "model.yaml")
    shutil.copy2(EXAMPLES / "scale.npy", work / "scale.npy")
    x = np.random.default_rng(7).standard_normal((4, 1024)).astype(np.float32)
    np.save(work / "x.npy", x)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND")}
    cli = [sys.executable, "-m", "opbuild", "om"]
    r = subprocess.run(cli + ["build", "model.yaml", "--opp", "opp", "-o", "model.om"], cwd=work, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    shutil.rmtree(work / "opp")
    run = cli + ["run", "model.om", "--input", "x=x.npy", "--output-dir", "out"]
    r = subprocess.run(run, cwd=work, env=env, capture_output=True, text=True)
    assert r.returncode == 1 and "CUST_AICPU_KERNELS (customize:libcust_aicpu_kernels.so)" in r.stderr, r.stderr
    r = subprocess.run(run + ["--trust"], cwd=work, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for name, want in _reference(x).items():
        got = np.load(work / "out" / f"{name}.npy")
        assert got.shape == want.shape, name
        np.testing.assert_array_equal(got, want)


def test_the_kernel_library_is_packed_once_per_package(opp):
    data = build(opp, {
        "name": "two_aicpu", "inputs": [{"name": "x", "dtype": "int32", "shape": [3, 5]}],
        "nodes": [{"name": "s0", "op": "SortCustom", "inputs": ["x"], "outputs": ["v", "i"]},
                  {"name": "n0", "op": "NonZeroCustom", "inputs": ["v"], "outputs": ["nz"]},
                  {"name": "n1", "op": "NonZeroCustom", "inputs": ["i"], "outputs": ["nz2"]}],
        "outputs": ["nz", "nz2"]})
    m = parse_om(data)
    assert [p.type for p in m.om.partitions] == [omf.MODEL_DEF, omf.TBE_KERNELS, omf.CUST_AICPU_KERNELS, omf.SO_BINS]
    # SO_BINS: the package's inference (for the outputs' bounds at run time), its tiling library
    assert [(b.type, b.vendor) for b in m.so_bins] == [(SoBinType.SpaceRegistry, "vendors/customize")]
    library = (opp / "vendors/customize/op_impl/cpu/aicpu_kernel/impl/libcust_aicpu_kernels.so").read_bytes()
    assert {k: bytes(v) for k, v in m.aicpu_kernels.items()} == {"customize:libcust_aicpu_kernels.so": library}
    assert m.kernels == {} and all(n["selected"] is None for n in m.model_def["nodes"])
    from opbuild.om.run import OmRunner

    x = np.array([[0, 3, 1, 0, 2]] * 3, np.int32)
    out = OmRunner(m, trust=True).run({"x": x})
    np.testing.assert_array_equal(out["nz"], np.nonzero(np.sort(x, -1)))
    np.testing.assert_array_equal(out["nz2"], np.nonzero(np.argsort(x, -1, kind="stable")))


def test_an_ai_core_node_may_not_read_a_data_dependent_shape_in_a_static_model(opp):
    with pytest.raises(OmError, match="input.s. nz have a data-dependent shape"):
        build(opp, {
            "name": "bad", "inputs": [{"name": "x", "dtype": "float32", "shape": [8]}],
            "nodes": [{"name": "n0", "op": "NonZeroCustom", "inputs": ["x"], "outputs": ["nz"]},
                      {"name": "m0", "op": "MulCustom", "inputs": ["nz", "nz"], "outputs": ["y"]}],
            "outputs": ["y"]})


def test_kernel_store_layout_and_checks():
    """CUST_AICPU_KERNELS: the KernelStore layout of TBE_KERNELS (one implementation), named in messages."""
    def load(data, base=0):
        return kernel_store.load(data, base, lambda name: None, "CUST_AICPU_KERNELS")

    data = b"".join(kernel_store.build([("a:libcust_aicpu_kernels.so", b"\x7fELF1"),
                                        ("b:libcust_aicpu_kernels.so", b"\x7fELF2")], "CUST_AICPU_KERNELS"))
    assert data[:12] == bytes.fromhex("fd6e775d") + (26).to_bytes(4, "little") + (5).to_bytes(4, "little")
    items = load(data)
    assert {k: bytes(v) for k, v in items.items()} == {"a:libcust_aicpu_kernels.so": b"\x7fELF1",
                                                       "b:libcust_aicpu_kernels.so": b"\x7fELF2"}
    with pytest.raises(OmError, match=r"CUST_AICPU_KERNELS item 0.magic @100"):
        load(b"\0" + data[1:], base=100)
    with pytest.raises(OmError, match=r"item 1.bin_len"):
        load(data[:-1])
    with pytest.raises(OmError, match=r"2 bytes left"):
        load(data + b"\0\0")
    with pytest.raises(OmError, match="appears twice"):
        load(data[:43] + data[:43])
