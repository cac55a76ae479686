"""Package discovery (explicit path, ASCEND_CUSTOM_OPP_PATH, ASCEND_OPP_PATH vendors by
load_priority, built-in; resolved per lookup) and the binary index (100,000 binaries, O(1))."""

from __future__ import annotations

import json
import time
import shutil
from pathlib import Path

import numpy as np
import pytest

from opbuild.runtime import AclnnError

from opbuild.runtime.call import executor
from opbuild.runtime.binaries.package import (STAMP_INTERVAL_NS, binary_index, find_op_package, read_load_priority,
                                              search_roots)
from opbuild.runtime.binaries.selection import OpRuntime

SOC = "ascend910b"
CONFIG = Path("op_impl/ai_core/tbe/kernel/config/ascend910b/binary_info_config.json")
ENV = ("ASCEND_CUSTOM_OPP_PATH", "ASCEND_OPP_PATH", "ASCEND_HOME_PATH")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def opp(package, tmp_path) -> Path:
    """An OPP tree: vendors v1 and v2 (both with the sample ops), an empty vendor, a built-in."""
    root = tmp_path / "opp"
    for name in ("vendors/v1", "vendors/v2", "built-in"):
        shutil.copytree(package, root / name, symlinks=True)
    (root / "vendors/empty").mkdir(parents=True)
    (root / "vendors/config.ini").write_text("load_priority=v2,v1\n")
    return root


def test_explicit_path_wins(package, opp, monkeypatch):
    monkeypatch.setenv("ASCEND_CUSTOM_OPP_PATH", str(opp / "vendors/v1"))
    assert search_roots(package) == [package]
    assert find_op_package("AddCustomTemplate", SOC, package)[0] == package


def test_custom_opp_path_in_order(opp, monkeypatch):
    monkeypatch.setenv("ASCEND_CUSTOM_OPP_PATH", f"{opp}/vendors/empty::{opp}/vendors/v1:{opp}/vendors/v2")
    root, roots = find_op_package("AddCustomTemplate", SOC)
    assert root == opp / "vendors/v1"
    assert roots[:3] == [opp / "vendors/empty", opp / "vendors/v1", opp / "vendors/v2"]


def test_opp_path_vendors_by_load_priority_then_built_in(opp, monkeypatch):
    monkeypatch.setenv("ASCEND_OPP_PATH", str(opp))
    assert read_load_priority(opp / "vendors/config.ini") == ["v2", "v1"]
    assert find_op_package("MulCustom", SOC)[0] == opp / "vendors/v2"
    (opp / "vendors/config.ini").write_text("# comment\nload_priority = v1 , v2\n")
    assert find_op_package("MulCustom", SOC)[0] == opp / "vendors/v1"  # re-read on every lookup
    (opp / "vendors/config.ini").write_text("load_priority=empty\n")
    assert find_op_package("MulCustom", SOC)[0] == opp / "built-in"
    home = opp.parent / "home"
    (home / "opp_latest").mkdir(parents=True)
    shutil.copytree(opp / "built-in", home / "opp_latest/built-in", symlinks=True)
    monkeypatch.setenv("ASCEND_HOME_PATH", str(home))
    assert find_op_package("MulCustom", SOC)[0] == home / "opp_latest/built-in"


def test_nothing_found_names_what_was_searched(ops, opp, monkeypatch):
    spec = ops._OPS["AddCustomTemplate"].spec
    op = OpRuntime(spec, None)
    x = np.ones(4, np.float32)
    with pytest.raises(AclnnError) as err:
        executor.get_workspace_size(op, (x, x), (), (np.empty_like(x),))
    assert "ASCEND_CUSTOM_OPP_PATH" in err.value.message
    monkeypatch.setenv("ASCEND_CUSTOM_OPP_PATH", str(opp / "vendors/empty"))
    with pytest.raises(AclnnError) as err:
        executor.get_workspace_size(op, (x, x), (), (np.empty_like(x),))
    assert str(opp / "vendors/empty") in err.value.message and "AddCustomTemplate" in err.value.message


def test_package_is_resolved_per_lookup(ops, opp, monkeypatch):
    """An op bound to no package follows the environment, changed after import, call by call
    (its cache entries are keyed by the search environment)."""
    op = OpRuntime(ops._OPS["AddCustomTemplate"].spec, None)
    x = np.ones(4, np.float32)

    def selected() -> Path:
        z = np.empty_like(x)
        size, ex = executor.get_workspace_size(op, (x, x), (), (z,))
        executor.execute(None, size, ex)
        np.testing.assert_array_equal(z, 2 * x)
        return ex.plan.selection.package

    monkeypatch.setenv("ASCEND_OPP_PATH", str(opp))
    assert selected() == opp / "vendors/v2"
    monkeypatch.setenv("ASCEND_CUSTOM_OPP_PATH", str(opp / "vendors/v1"))
    assert selected() == opp / "vendors/v1"
    monkeypatch.delenv("ASCEND_CUSTOM_OPP_PATH")
    assert selected() == opp / "vendors/v2"
    shutil.rmtree(opp / "vendors/v2")
    (opp / "vendors/config.ini").write_text("load_priority=v2\n")
    monkeypatch.setenv("ASCEND_OPP_PATH", str(opp))  # same value: the index is checked again anyway
    executor.clear_cache()
    assert selected() == opp / "built-in"


# ---- the sample OPP tree: the custom vendor package and the built-in package -------------------

@pytest.fixture
def sample_copy(sample_opp, tmp_path) -> Path:
    """A private copy of the sample build's OPP root (vendors/customize, built-in, config.ini)."""
    root = tmp_path / "sample_opp"
    shutil.copytree(sample_opp, root, symlinks=True)
    return root


def _discovered(spec, *inputs, attrs=(), outputs, deterministic=None):
    """Run an op bound to no package (so found by discovery); its Selection."""
    op = OpRuntime(spec, None)
    size, ex = executor.get_workspace_size(op, inputs, attrs, outputs, deterministic)
    executor.execute(np.empty(size, np.uint8) if size else None, size, ex)
    return ex.plan.selection


def test_sample_opp_search_order_is_the_custom_vendor_then_built_in(sample_copy, monkeypatch):
    monkeypatch.setenv("ASCEND_OPP_PATH", str(sample_copy))
    assert read_load_priority(sample_copy / "vendors/config.ini") == ["customize"]
    assert search_roots() == [sample_copy / "vendors/customize", sample_copy / "built-in"]


def test_custom_mul_wins_over_the_built_in_one(sample_copy, ops, builtin_ops, monkeypatch):
    """MulCustom is in both packages: discovery takes the custom vendor's, searched first."""
    monkeypatch.setenv("ASCEND_OPP_PATH", str(sample_copy))
    custom, builtin = sample_copy / "vendors/customize", sample_copy / "built-in"
    root, roots = find_op_package("MulCustom", SOC)
    assert root == custom and roots == [custom, builtin]
    assert "MulCustom" in binary_index(builtin, SOC).keys_by_op  # the built-in one is there, and loses
    x, y = np.arange(12, dtype=np.float32).reshape(3, 4), np.full(4, 3, np.float32)
    z = np.empty_like(x)
    selection = _discovered(ops._OPS["MulCustom"].spec, x, y, outputs=(z,))
    np.testing.assert_array_equal(z, x * y)
    assert selection.package == custom and selection.entry.name == "MulCustom_FP32"
    bin_path = selection.entry.checked_bin_path()
    assert bin_path.is_relative_to(custom) and not bin_path.is_relative_to(builtin)
    assert bin_path == custom / "op_impl/ai_core/tbe/kernel/ascend910b/mul_custom/MulCustom_FP32.so"
    # without the custom vendor (load_priority names none), the built-in MulCustom (ops_math) runs
    (sample_copy / "vendors/config.ini").write_text("load_priority=\n")
    executor.clear_cache()
    z[:] = 0
    selection = _discovered(builtin_ops._OPS["MulCustom"].spec, x, y, outputs=(z,))
    np.testing.assert_array_equal(z, x * y)
    assert selection.package == builtin
    assert selection.entry.checked_bin_path() == \
        builtin / "op_impl/ai_core/tbe/kernel/ascend910b/ops_math/mul_custom/MulCustom_FP32.so"


@pytest.mark.parametrize("op, domain", [("ReduceSumCustom", "math"), ("LeakyReluCustom", "nn")])
def test_built_in_only_ops_are_found_in_built_in(sample_copy, builtin_ops, monkeypatch, op, domain):
    monkeypatch.setenv("ASCEND_OPP_PATH", str(sample_copy))
    builtin = sample_copy / "built-in"
    root, roots = find_op_package(op, SOC)
    assert root == builtin and roots == [sample_copy / "vendors/customize", builtin]
    index = binary_index(builtin, SOC)
    config = builtin / f"op_impl/ai_core/tbe/kernel/config/ascend910b/ops_{domain}/binary_info_config.json"
    assert config in index.config_files
    for key in index.keys_by_op[op]:  # every binary of the op, from its ops_<domain> sub-package
        entry = index.by_key[key]
        assert entry.checked_bin_path().parent == builtin / f"op_impl/ai_core/tbe/kernel/ascend910b/ops_{domain}" / \
            {"ReduceSumCustom": "reduce_sum_custom", "LeakyReluCustom": "leaky_relu_custom"}[op]
        assert entry.bin_path.is_file() and entry.json_path.is_file()


def test_built_in_reduce_sum_runs_by_discovery(sample_copy, builtin_ops, monkeypatch):
    monkeypatch.setenv("ASCEND_OPP_PATH", str(sample_copy))
    builtin = sample_copy / "built-in"
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    y = np.empty((1, 3, 1), np.float32)
    selection = _discovered(builtin_ops._OPS["ReduceSumCustom"].spec, x, attrs=([0, 2], True), outputs=(y,),
                            deterministic=True)
    np.testing.assert_array_equal(y, x.sum(axis=(0, 2), keepdims=True))
    assert selection.package == builtin and selection.entry.name == "ReduceSumCustom_FP32_Det"
    assert selection.entry.checked_bin_path() == \
        builtin / "op_impl/ai_core/tbe/kernel/ascend910b/ops_math/reduce_sum_custom/ReduceSumCustom_FP32_Det.so"


def test_index_is_reparsed_when_the_config_changes(package_copy):
    index = binary_index(package_copy, SOC)
    assert "AddCustomTemplate/d=0,p=1/custom_fp16" in index.by_key
    assert binary_index(package_copy, SOC) is index  # parsed once
    path = package_copy / CONFIG
    data = json.loads(path.read_text())
    del data["AddCustomTemplate"]
    path.write_text(json.dumps(data))
    stat = path.stat()
    import os

    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    _after_stamp_interval()  # the files are re-stat'ed at most every STAMP_INTERVAL_NS
    assert "AddCustomTemplate/d=0,p=1/custom_fp16" not in binary_index(package_copy, SOC).by_key


def _after_stamp_interval() -> None:
    time.sleep(2 * STAMP_INTERVAL_NS / 1e9)


def test_built_in_index_is_reparsed_when_a_sub_package_changes(builtin_copy):
    import os

    index = binary_index(builtin_copy, SOC)
    assert set(index.keys_by_op) == {"MulCustom", "ReduceSumCustom", "LeakyReluCustom"}
    assert binary_index(builtin_copy, SOC) is index
    config_dir = builtin_copy / "op_impl/ai_core/tbe/kernel/config/ascend910b"
    path = config_dir / "ops_nn/binary_info_config.json"
    data = json.loads(path.read_text())
    del data["LeakyReluCustom"]
    path.write_text(json.dumps(data))
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    _after_stamp_interval()
    assert set(binary_index(builtin_copy, SOC).keys_by_op) == {"MulCustom", "ReduceSumCustom"}
    # a sub-package removed
    shutil.rmtree(config_dir / "ops_math")
    stat = config_dir.stat()
    os.utime(config_dir, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    _after_stamp_interval()
    assert set(binary_index(builtin_copy, SOC).keys_by_op) == set()


# ---- 100,000 binaries ---------------------------------------------------------------------------

def _synthetic_package(root: Path, n: int) -> Path:
    config = root / CONFIG
    config.parent.mkdir(parents=True)
    binaries = [{"coreType": 2, "simplifiedKey": [f"Synth/d=0,p=1/k{i}", f"Synth/d=1,p=1/k{i}"],
                 "binPath": f"ascend910b/synth/Synth_{i}.so", "jsonPath": f"ascend910b/synth/Synth_{i}.json"}
                for i in range(n)]
    config.write_text(json.dumps({"Synth": {"dynamicRankSupport": True, "simplifiedKeyMode": 2, "params": {},
                                            "binaryList": binaries}}))
    return root


def test_index_of_100000_binaries_loads_and_looks_up(tmp_path):
    """(Its load time and the O(1) lookup ratio are in bench/micro_bench.py.)"""
    big = _synthetic_package(tmp_path / "big", 100_000)
    index = binary_index(big, SOC)
    assert len(index.by_key) == 200_000 and len(index.keys_by_op["Synth"]) == 200_000
    entry = index.by_key["Synth/d=1,p=1/k99999"]
    assert entry.name == "Synth_99999" and entry.bin_path == big / "op_impl/ai_core/tbe/kernel/ascend910b/synth/Synth_99999.so"
    assert index.by_key["Synth/d=0,p=1/k0"].name == "Synth_0"
    assert "Synth/d=0,p=1/k100000" not in index.by_key


def test_selection_in_a_big_index_names_nearest_keys(tmp_path, ops):
    """A miss in a big op reports the requested key and the nearest existing ones."""
    from opbuild.runtime.binaries.selection import nearest_keys

    keys = tuple(f"Synth/d=0,p=1/k{i}" for i in range(5000))
    near = nearest_keys("Synth/d=0,p=1/k4999x", keys)
    assert near[0] == "Synth/d=0,p=1/k4999"
