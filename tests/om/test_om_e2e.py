"""Building, loading and running .om models against the sample ops."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from omtools import build, model_dict, reference
from opbuild.om import format as omf
from opbuild.om import so_store
from opbuild.om.errors import OmCompatError, OmError
from opbuild.om.loader import DEVICE_SO, load_om, parse_om
from opbuild.om.run import OmRunner
from opbuild.om.so_store import SoBinType


def _run(data: bytes, inputs):
    return OmRunner(load_om(data, trust=True)).run(inputs)


def test_static_model_matches_package(opp, static_om, inputs):
    import opbuild.runtime as rt

    custom = rt.import_ops(opp / "vendors/customize")
    builtin = rt.import_ops(opp / "built-in")
    t = custom.mul_custom(inputs["x"], inputs["y"])
    t = builtin.leaky_relu_custom(t, negative_slope=0.2)
    want = builtin.reduce_sum_custom(t, axes=[1])
    got = _run(static_om, inputs)["t2"]
    np.testing.assert_allclose(got, want, rtol=1e-6)  # d=0: the reduction order may differ
    m = parse_om(static_om)
    assert m.model_def["so_in_om_flag"] == 0 and m.so_bins == []
    assert m.om.header.need_check_os_cpu_info == 0 and m.om.header.is_unknow_model == 0
    # static: exactly the selected binaries, with precomputed tiling
    assert sorted(m.kernels) == ["built-in:LeakyReluCustom_FP32", "built-in:ReduceSumCustom_FP32", "customize:MulCustom_FP32"]
    assert sorted(m.tilings) == ["act0", "mul0", "sum0"]


def test_dynamic_model_runs_any_batch(dynamic_om):
    runner = OmRunner(load_om(dynamic_om, trust=True))
    rng = np.random.default_rng(1)
    for n in (1, 5, 33):
        x = rng.random((n, 1024), np.float32) - 0.5
        y = rng.random((n, 1024), np.float32)
        np.testing.assert_allclose(runner.run({"x": x, "y": y})["t2"], reference(x, y), rtol=1e-5, atol=1e-3)
    with pytest.raises(OmError, match="shape"):
        runner.run({"x": np.zeros((2, 3), np.float32), "y": np.zeros((2, 3), np.float32)})


def test_two_op_model_packs_exactly_those(opp):
    m = parse_om(build(opp, model_dict("two", [-1, 1024], ops=2)))
    ops = {v["op"] for v in m.model_def["ops"].values()}
    assert ops == {"MulCustom", "LeakyReluCustom"}
    assert {k.split(":")[1].rsplit("_", 1)[0].split("_")[0] for k in m.kernels} == {"MulCustom", "LeakyReluCustom"}
    assert all("ReduceSum" not in k and "AddN" not in k and "AddCustom" not in k for k in m.kernels)
    sr = [(b.vendor, b.type) for b in m.so_bins]
    assert sorted(sr) == [("built-in", SoBinType.SpaceRegistry), ("vendors/customize", SoBinType.SpaceRegistry)]
    assert all(b.name.endswith("_linux_x86_64.so") or not b.name for b in m.so_bins)


@pytest.mark.parametrize("shape,preprocess,autofuse,flag", [
    ([16, 1024], False, False, 0x0000), ([-1, 1024], False, False, 0x8000), ([16, 1024], True, False, 0x4000),
    ([16, 1024], False, True, 0x2000), ([-1, 1024], True, False, 0xC000), ([-1, 1024], False, True, 0xA000),
    ([16, 1024], True, True, 0x6000), ([-1, 1024], True, True, 0xE000)])
def test_flags_per_case(opp, fused_so, inputs, shape, preprocess, autofuse, flag):
    data = build(opp, model_dict(f"f{flag:x}", shape, preprocess=preprocess, autofuse=fused_so if autofuse else None))
    m = parse_om(data)
    assert m.model_def["so_in_om_flag"] == flag
    assert so_store.flag_of(b.type for b in m.so_bins) == flag
    assert m.om.header.need_check_os_cpu_info == (1 if flag else 0)
    np.testing.assert_allclose(_run(data, inputs)["t2"], reference(inputs["x"], inputs["y"]), rtol=1e-5, atol=1e-3)


def _rename_device_so(data: bytes, new_name: str) -> bytes:
    """The same model with its OpMasterDevice .so renamed (and the model renamed)."""
    m = parse_om(data)
    bins = [so_store.OpSoBin(new_name if b.type == SoBinType.OpMasterDevice else b.name, b.vendor, bytes(b.data), b.type)
            for b in m.so_bins]
    parts = []
    for p in m.om.partitions:
        payload = so_store.build(bins) if p.type == omf.SO_BINS else bytes(p.data)
        parts.append((p.type, payload))
    return omf.write_om(parts, name="renamed", ops=m.om.header.ops, need_check_os_cpu_info=True,
                        is_unknow_model=bool(m.om.header.is_unknow_model))


def test_custom_device_so_shared_under_different_names(opp, inputs):
    data = build(opp, {"name": "devA", "inputs": [{"name": "x", "dtype": "float32", "shape": [16, 1024]},
                                                  {"name": "y", "dtype": "float32", "shape": [16, 1024]}],
                       "nodes": [{"name": "m", "op": "MulCustom", "package": "vendors/customize", "inputs": ["x", "y"],
                                  "outputs": ["z"], "preprocess": True}], "outputs": ["z"]})
    other = _rename_device_so(data, "libcust_opmaster_device_other_name.so")
    before = DEVICE_SO.count()
    a, b = load_om(data, trust=True), load_om(other, trust=True)
    assert [x.name for x in b.so_bins if x.type == SoBinType.OpMasterDevice] == ["libcust_opmaster_device_other_name.so"]
    assert DEVICE_SO.count() - before <= 1
    assert a.device["vendors/customize"] is b.device["vendors/customize"]
    for model in (a, b):
        np.testing.assert_allclose(OmRunner(model).run(inputs)["z"], inputs["x"] * inputs["y"])


def test_builtin_device_so_shared_by_name(opp):
    a = load_om(build(opp, model_dict("bA", [16, 1024], preprocess=True, ops=2)), trust=True)
    b = load_om(build(opp, model_dict("bB", [8, 1024], preprocess=True, ops=2)), trust=True)
    assert a.device["built-in"] is b.device["built-in"]


def test_compat_mismatch_is_reported(opp):
    data = build(opp, model_dict("compat", [-1, 1024]), so_info_override={"cpu_info": "aarch64", "opp_version": "opbuild-9"})
    with pytest.raises(OmCompatError) as exc:
        load_om(data, trust=True)
    assert "cpu_info" in str(exc.value) and "aarch64" in str(exc.value) and "opp_version" in str(exc.value)
    data = build(opp, model_dict("compat2", [-1, 1024]), so_info_override={"compiler_version": "ccec-7.0"})
    with pytest.raises(OmCompatError, match="compiler_version"):
        load_om(data, trust=True)


def test_single_op(opp, tmp_path):
    from opbuild.om.single_op import build_single_op

    data = build_single_op("LeakyReluCustom", ["x=float16[16,1024]"], ["negative_slope=0.0"], opp)
    m = parse_om(data)
    assert list(m.kernels) == ["built-in:LeakyReluCustom_Relu_FP16"]
    x = (np.random.default_rng(3).random((16, 1024)) - 0.5).astype(np.float16)
    np.testing.assert_array_equal(OmRunner(load_om(data, trust=True)).run({"x": x})["y"], np.maximum(x, 0))
    data = build_single_op("AddNCustom", ["x=float32[4,8]", "x=float32[4,8]", "x=float32[4,8]"], [], opp)
    xs = [np.full((4, 8), i, np.float32) for i in range(3)]
    out = OmRunner(load_om(data, trust=True)).run({"x0": xs[0], "x1": xs[1], "x2": xs[2]})
    np.testing.assert_array_equal(list(out.values())[0], sum(xs))


def test_run_without_any_package(opp, tmp_path, fused_so):
    """The CLI: build, delete the OPP tree, run with no OPP environment: same outputs as the package."""
    work = tmp_path / "w"
    shutil.copytree(opp, work / "opp", symlinks=True)
    shutil.copy2(fused_so, work / "fused_mul.so")
    model = model_dict("nopkg", [-1, 1024], preprocess=True, autofuse=Path("fused_mul.so"))
    model["deterministic"] = True  # bit-exact comparison of two runs
    (work / "model.yaml").write_text(json.dumps(model))  # JSON is YAML
    rng = np.random.default_rng(5)
    x, y = rng.random((8, 1024), np.float32) - 0.5, rng.random((8, 1024), np.float32)
    np.save(work / "x.npy", x)
    np.save(work / "y.npy", y)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND")}
    cli = [sys.executable, "-m", "opbuild", "om"]
    r = subprocess.run(cli + ["build", "model.yaml", "--opp", "opp", "-o", "model.om"], cwd=work, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # with the package (reference), then without it
    r = subprocess.run(cli + ["run", "model.om", "--input", "x=x.npy", "--input", "y=y.npy", "--output-dir", "with", "--trust"],
                       cwd=work, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    shutil.rmtree(work / "opp")
    (work / "fused_mul.so").unlink()
    r = subprocess.run(cli + ["run", "model.om", "--input", "x=x.npy", "--input", "y=y.npy", "--output-dir", "out", "--trust"],
                       cwd=work, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got = np.load(work / "out" / "t2.npy")
    np.testing.assert_array_equal(got, np.load(work / "with" / "t2.npy"))
    np.testing.assert_allclose(got, reference(x, y), rtol=1e-5, atol=1e-3)
    r = subprocess.run(cli + ["inspect", "model.om"], cwd=work, env=env, capture_output=True, text=True)
    assert r.returncode == 0 and "so_in_om_flag: 0xe000" in r.stdout and "sha256=" in r.stdout
    (work / "bad.om").write_bytes((work / "model.om").read_bytes()[:1000])
    for sub in (["inspect", "bad.om"], ["run", "bad.om", "--output-dir", "o2"]):
        r = subprocess.run(cli + sub, cwd=work, env=env, capture_output=True, text=True)
        assert r.returncode == 1 and "model_length @184" in r.stderr, r.stderr


def test_model_errors(opp, tmp_path):
    from opbuild.om.model import model_from_dict

    bad = model_dict("bad", [4, 4])
    bad["nodes"][0]["inputs"] = ["x", "nope"]
    with pytest.raises(OmError, match="nope"):
        model_from_dict(bad, tmp_path)
    with pytest.raises(OmError, match="invalid model"):
        model_from_dict({"name": "x"}, tmp_path)
    bad = model_dict("bad", [4, 4], ops=1)
    bad["nodes"][0]["attrs"] = {"zzz": 1}
    with pytest.raises(OmError, match="zzz"):
        build(opp, bad)
