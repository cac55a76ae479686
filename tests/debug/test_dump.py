"""The data dump on every call path: Python two-phase calls (their C fast-path hits too), one-shot
calls, created streams, AI CPU tasks, `.om` models, torch, the aclnn C ABI with aclInit(acl.json)
(its native cache hits too), OPBUILD_DUMP; and what it writes (one directory per launch, .npy
tensors equal to what ran, the JSON index)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import opbuild.runtime as rt
from opbuild.runtime import device
from opbuild.runtime.call import launch
from opbuild.runtime.debug import dump

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def _launches(path: Path) -> list[tuple[str, dict]]:
    return [(p.parent.name, json.loads(p.read_text())) for p in sorted(path.glob("*/launch.json"))]


def _tensor(path: Path, launch_dir: str, entry: dict) -> np.ndarray:
    return np.load(path / launch_dir / entry["file"])


def test_two_phase_fast_path_hits_and_one_shot_are_each_dumped(buggy_ops, tmp_path):
    """Three two-phase calls (a miss, then C fast-path hits: they decline while dumping) and one
    one-shot call: four launches, each with its inputs and outputs as they were, in order."""
    x = np.arange(2048, dtype=np.float32)
    y = np.full_like(x, 0.5)
    with rt.dump(tmp_path, mode="all"):
        for k in range(3):
            z = np.empty_like(x)
            size, ex = buggy_ops.aclnnBuggyAddGetWorkspaceSize(x + k, y, 0, z)
            buggy_ops.aclnnBuggyAdd(None, size, ex, None)
        buggy_ops.buggy_add(x, y, bug=1)
    got = _launches(tmp_path)
    assert [name for name, _ in got] == [f"{i:06d}.BuggyAdd" for i in range(4)]
    for i, (name, index) in enumerate(got):
        assert index["op"] == "BuggyAdd" and index["binary"] == "BuggyAdd_FP32" and index["engine"] == "aicore"
        assert index["simplified_key"].startswith("BuggyAdd/d=0,p=1/") and index["sequence"] == i
        assert index["block_dim"] >= 1 and index["tiling_key"] == 0 and index["stream"] == "default"
        assert index["attrs"] == {"bug": 1 if i == 3 else 0} and index["status"] == "ok"
        assert [e["name"] for e in index["inputs"]] == ["x", "y"] and [e["name"] for e in index["outputs"]] == ["z"]
        assert index["outputs"][0] == {"name": "z", "file": "output.0.z.npy", "shape": [2048], "dtype": "float32"}
        xin = _tensor(tmp_path, name, index["inputs"][0])
        np.testing.assert_array_equal(xin, x + (i if i < 3 else 0))
        want = xin + y
        if i == 3:
            want[37] += 1  # the planted bug: the dump shows what the kernel wrote
        np.testing.assert_array_equal(_tensor(tmp_path, name, index["outputs"][0]), want)
    assert not launch.LAUNCH_OBSERVERS  # off again: the hit paths take their native branch


def test_mode_and_op_selection(buggy_ops, tmp_path):
    """mode output writes no inputs; ops= selects by op type (an AI CPU op here, at its real,
    data-dependent output shape)."""
    x = np.array([0, 3, 0, 5], np.float32)
    with rt.dump(tmp_path / "out", mode="output"):
        buggy_ops.buggy_add(x, x)
    [(_, index)] = _launches(tmp_path / "out")
    assert index["inputs"] == [] and len(index["outputs"]) == 1
    with rt.dump(tmp_path / "sel", mode="all", ops=["NonZeroCustom"]):
        buggy_ops.buggy_add(x, x)
        buggy_ops.non_zero_custom(x)
    [(name, index)] = _launches(tmp_path / "sel")
    assert name == "000001.NonZeroCustom" and index["engine"] == "aicpu" and index["block_dim"] == 1
    assert index["binary"] == "libcust_aicpu_kernels.so" and index["tiling_key"] is None
    np.testing.assert_array_equal(_tensor(tmp_path / "sel", name, index["outputs"][0]), [[1, 3]])


def test_created_stream_dumps_what_the_launch_read_and_wrote(buggy_ops, tmp_path):
    """On a created stream the inputs are read when the stream reaches the launch: the second
    launch's input is the first one's output, not the buffer's content at enqueue time."""
    x = np.arange(256, dtype=np.float32)
    z1, z2 = np.zeros_like(x), np.zeros_like(x)
    stream = device.Stream()
    try:
        with rt.dump(tmp_path, mode="all"):
            for a, out in ((x, z1), (z1, z2)):
                size, ex = buggy_ops.aclnnBuggyAddGetWorkspaceSize(a, x, 0, out)
                buggy_ops.aclnnBuggyAdd(None, size, ex, stream)
            stream.synchronize()
    finally:
        stream.destroy()
    (n1, first), (n2, second) = _launches(tmp_path)
    assert first["stream"] == second["stream"] != "default"
    np.testing.assert_array_equal(_tensor(tmp_path, n2, second["inputs"][0]), 2 * x)
    np.testing.assert_array_equal(_tensor(tmp_path, n2, second["outputs"][0]), 3 * x)


def test_om_model_launches_name_model_and_node(buggy_package, tmp_path):
    """An .om's node launches are dumped with the model and node; acl.json's model_name selects."""
    from opbuild.om.loader import load_om
    from opbuild.om.run import OmRunner
    from opbuild.om.single_op import build_single_op

    data = build_single_op("BuggyAdd", ["x=float32[64]", "y=float32[64]"], [], buggy_package.parents[1])
    runner = OmRunner(load_om(data, trust=True), trust=True)
    x = np.arange(64, dtype=np.float32)
    config = dump.parse_dump_object({"dump_path": str(tmp_path / "m"), "dump_list": [{"model_name": "other"}]}, "t.json")
    dump.start(config)
    runner.run({"x": x, "y": x})
    dump.stop()
    assert _launches(tmp_path / "m") == []
    dump.start(dump.parse_dump_object({"dump_path": str(tmp_path / "m"), "dump_list": [
        {"model_name": "buggy_add", "layer": ["buggy_add"]}]}, "t.json"))
    runner.run({"x": x, "y": x})
    rt.import_ops(buggy_package).buggy_add(x, x)  # a single op: not in dump_list, dump_op_switch off
    dump.stop()
    [(_, index)] = _launches(tmp_path / "m")
    assert index["model"] == "buggy_add" and index["node"] == "buggy_add" and index["op"] == "BuggyAdd"


def test_torch_calls_are_dumped(buggy_package, tmp_path):
    torch = pytest.importorskip("torch")
    ops = rt.import_ops(buggy_package)
    ops.register_torch()
    x = torch.arange(128, dtype=torch.float32)
    with rt.dump(tmp_path, mode="all"):
        got = torch.ops.debugging.buggy_add(x, x)
    [(name, index)] = _launches(tmp_path)
    np.testing.assert_array_equal(_tensor(tmp_path, name, index["outputs"][0]), got.numpy())


def test_opbuild_dump_environment(buggy_package, tmp_path):
    """OPBUILD_DUMP=<dir> (+ _MODE, _OPS) turns the dump on for the whole process."""
    code = ("import numpy as np, sys, opbuild.runtime as rt\n"
            "ops = rt.import_ops(sys.argv[1])\nx = np.ones(64, np.float32)\n"
            "for _ in range(3): ops.buggy_add(x, x)\nops.non_zero_custom(x)\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "OPBUILD_DUMP": str(tmp_path), "OPBUILD_DUMP_MODE": "input",
           "OPBUILD_DUMP_OPS": "BuggyAdd"}
    r = subprocess.run([sys.executable, "-c", code, str(buggy_package)], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    got = _launches(tmp_path)
    assert [n for n, _ in got] == ["000000.BuggyAdd", "000001.BuggyAdd", "000002.BuggyAdd"]
    assert all(i["outputs"] == [] and len(i["inputs"]) == 2 for _, i in got)


# ---- the aclnn C ABI: aclInit(acl.json) --------------------------------------------------------------

@pytest.fixture(scope="module")
def dump_app(buggy_package, tmp_path_factory) -> Path:
    from opbuild.abi.native_libs import app_flags

    cc = shutil.which(os.environ.get("CC", "cc")) or "gcc"
    exe = tmp_path_factory.mktemp("dump_app") / "sample_dump"
    subprocess.run([cc, "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-pthread", "-o", str(exe),
                    str(HERE / "sample_dump.c"), *app_flags(buggy_package)], check=True)
    return exe


def _run_app(exe: Path, config: Path, calls: int = 3) -> subprocess.CompletedProcess:
    # a clean environment, but this checkout's opbuild for the embedded interpreter
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), "PYTHONPATH": str(REPO)}
    return subprocess.run([str(exe), str(config), str(calls)], capture_output=True, text=True, env=env, timeout=120,
                          cwd=config.parent)


def test_acl_json_dumps_every_c_call_native_hits_included(dump_app, tmp_path):
    """A C program's aclInit(acl.json): every call is dumped, the native cache's hits too (they
    decline while dumping: four launches, not one); a relative dump_path is the app's directory's."""
    config = tmp_path / "acl.json"
    config.write_text(json.dumps({"dump": {"dump_path": "dumped", "dump_mode": "all",
                                           "dump_list": [{"layer": ["BuggyAdd"]}]}}))
    r = _run_app(dump_app, config, calls=4)
    assert r.returncode == 0 and r.stdout.strip() == "done", r.stdout + r.stderr
    got = _launches(tmp_path / "dumped")
    assert len(got) == 4 and all(i["attrs"] == {"bug": 1} for _, i in got)
    name, index = got[-1]
    x = _tensor(tmp_path / "dumped", name, index["inputs"][0])
    z = _tensor(tmp_path / "dumped", name, index["outputs"][0])
    want = x + _tensor(tmp_path / "dumped", name, index["inputs"][1])
    want[37] += 1
    np.testing.assert_array_equal(z, want)


BAD_CONFIGS = [
    ({"dump_mode": "all", "dump_list": []}, "dump.dump_path is required"),
    ({"dump_path": "d", "dump_mode": "both", "dump_list": []}, "dump.dump_mode must be one of input, output, all, not 'both'"),
    ({"dump_path": "d"}, "dump.dump_list is required"),
    ({"dump_path": "d", "dump_list": [{"layer": "BuggyAdd"}]}, "dump.dump_list[0].layer must be a list of op names"),
    ({"dump_path": "d", "dump_list": [{"model": "m"}]}, "dump.dump_list[0].model is not a dump_list field"),
    ({"dump_path": "d", "dump_list": [], "dump_op_switch": "yes"}, "dump.dump_op_switch must be \"on\" or \"off\""),
    ({"dump_path": "d", "dump_list": [], "dump_data": "stats"}, "dump.dump_data must be \"tensor\""),
    ([], "dump must be an object"),
]


@pytest.mark.parametrize("dump_value, message", BAD_CONFIGS, ids=[m.split(" ")[0] for _, m in BAD_CONFIGS])
def test_bad_dump_config_is_100009_naming_file_and_field(dump_app, tmp_path, dump_value, message):
    config = tmp_path / "acl.json"
    config.write_text(json.dumps({"dump": dump_value}))
    r = _run_app(dump_app, config)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stdout.startswith(f"aclInit: 100009 aclInit: {config}: {message}"), r.stdout
    assert len(r.stdout.strip().splitlines()) == 1
    assert not (tmp_path / "d").exists()
