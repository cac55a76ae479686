"""The profiler: `opbuild prof -o FILE -- cmd`, OPBUILD_PROFILE=FILE and profile.start/stop; the
Chrome trace's structure (launch, phase and per-block "X" events on their threads) and the
summary. No test looks at how long anything took (timings are bench/'s)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from opbuild.runtime import device
from opbuild.runtime.debug import profile

REPO = Path(__file__).resolve().parents[2]
APP = """
import sys
import numpy as np
import opbuild.runtime as rt
ops = rt.import_ops(sys.argv[1])
x = np.arange(16384, dtype=np.float32)
for _ in range(3):
    ops.buggy_add(x, x, bug=2)
ops.non_zero_custom(x[:8])
sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def _check_trace(trace: dict) -> None:
    events = trace["traceEvents"]
    assert all(e["ph"] in ("X", "M") for e in events)
    launches = [e for e in events if e.get("cat") == "launch"]
    assert [e["name"] for e in launches] == ["BuggyAdd"] * 3 + ["NonZeroCustom"]
    blocks = [e for e in events if e.get("cat") == "block"]
    for launch in launches[:3]:
        args = launch["args"]
        assert args["binary"] == "BuggyAdd_FP32" and args["ok"] and args["blocks"] == args["block_dim"] > 1
        mine = [b for b in blocks if b["name"].startswith("BuggyAdd block")
                and launch["ts"] <= b["ts"] <= launch["ts"] + launch["dur"]]
        assert sorted(b["args"]["block"] for b in mine) == list(range(args["block_dim"]))
        assert args["imbalance"] >= 1.0 and args["block_max_us"] >= args["block_mean_us"] > 0
    assert launches[3]["args"]["engine"] == "aicpu" and launches[3]["args"]["blocks"] == 1
    assert all(e["dur"] >= 0 and isinstance(e["tid"], int) and e["pid"] == launches[0]["pid"] for e in events
               if e["ph"] == "X")
    phases = [e["args"]["phase"] for e in events if e.get("cat") == "phase"]
    assert phases.count("phase1 miss") == 1 and phases.count("tiling") == 1  # the first call; then hits
    assert [e["args"].get("phase1") for e in launches] == ["miss", "hit", "hit", None]  # AI CPU: no plan cache


def test_prof_command_writes_a_chrome_trace_and_prints_the_summary(buggy_package, tmp_path):
    app = tmp_path / "app.py"
    app.write_text(APP)
    out = tmp_path / "trace.json"
    page = tmp_path / "report.html"
    r = subprocess.run([sys.executable, "-m", "opbuild", "prof", "-o", str(out), "--html", str(page), "--",
                        sys.executable, str(app), str(buggy_package), "3"], capture_output=True, text=True, env=_env(),
                       timeout=180)
    assert r.returncode == 3, r.stdout + r.stderr  # the command's exit status
    trace = json.loads(out.read_text())
    _check_trace(trace)
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["op", "calls", "misses", "total", "us", "mean", "us", "p50", "us", "p99", "us",
                                "blocks", "imbalance", "slowest", "block"]
    rows = {line.split()[0]: line.split() for line in lines[1:3]}
    assert rows["BuggyAdd"][1:3] == ["3", "1"] and rows["NonZeroCustom"][1:3] == ["1", "0"]
    dims = [e["args"]["block_dim"] for e in trace["traceEvents"] if e.get("cat") == "launch" and e["name"] == "BuggyAdd"]
    assert int(rows["BuggyAdd"][7]) == sum(dims)
    assert lines[-2:] == [f"trace: {out} (1 process); open it in ui.perfetto.dev", f"page: {page}"]
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and '"op": "BuggyAdd"' in text and '"op": "NonZeroCustom"' in text


def test_summary_reads_the_trace(buggy_package, tmp_path):
    """summary(): calls, totals and percentiles from the launch events, the block count, the
    worst launch's imbalance and its slowest block (from the block events)."""
    trace = {"traceEvents": [
        {"name": "Op", "cat": "launch", "ph": "X", "ts": 0, "dur": 10, "pid": 1, "tid": 1,
         "args": {"blocks": 2, "imbalance": 1.5, "phase1": "miss"}},
        {"name": "Op block 0", "cat": "block", "ph": "X", "ts": 1, "dur": 2, "pid": 1, "tid": 5, "args": {"op": "Op", "block": 0}},
        {"name": "Op block 1", "cat": "block", "ph": "X", "ts": 1, "dur": 6, "pid": 1, "tid": 6, "args": {"op": "Op", "block": 1}},
        {"name": "Op", "cat": "launch", "ph": "X", "ts": 20, "dur": 30, "pid": 1, "tid": 1, "args": {"blocks": 2, "imbalance": 1.0}},
    ]}
    trace["traceEvents"][0]["args"]["block_max_us"] = 6
    [row] = profile.summary(trace)
    assert (row.op, row.calls, row.misses, row.total_us, row.mean_us, row.p50_us, row.p99_us, row.blocks) == (
        "Op", 2, 1, 40, 20, 10, 30, 4)
    assert row.imbalance == 1.5 and row.slowest_block == 1
    assert "Op" in profile.format_summary([row]) and "(no launches recorded)" in profile.format_summary([])


def test_opbuild_profile_environment(buggy_package, tmp_path):
    out = tmp_path / "p.json"
    r = subprocess.run([sys.executable, "-c", APP, str(buggy_package)], capture_output=True, text=True, timeout=180,
                       env={**_env(), "OPBUILD_PROFILE": str(out)})
    assert r.returncode == 0, r.stderr
    _check_trace(json.loads(out.read_text()))
    assert f"opbuild: profile written to {out}" in r.stderr and "BuggyAdd" in r.stderr


def test_in_process_start_stop_and_streams(buggy_ops):
    """profile.start()/stop(): launches on a created stream are recorded once the stream ran
    them; nothing is recorded after stop()."""
    x = np.arange(4096, dtype=np.float32)
    z = np.empty_like(x)
    p = profile.start()
    stream = device.Stream()
    try:
        size, ex = buggy_ops.aclnnBuggyAddGetWorkspaceSize(x, x, 0, z)
        buggy_ops.aclnnBuggyAdd(None, size, ex, stream)
        stream.synchronize()
    finally:
        stream.destroy()
        profile.stop()
    buggy_ops.buggy_add(x, x)
    launches = [e for e in p.events if e["cat"] == "launch"]
    assert len(launches) == 1 and launches[0]["args"]["stream"] != "default"
    [wait] = [e for e in p.events if e["name"] == "stream wait"]
    assert wait["args"]["stream"] == launches[0]["args"]["stream"]
    assert len([e for e in p.events if e["cat"] == "block"]) == launches[0]["args"]["block_dim"]


def test_prof_needs_a_command(capsys):
    from opbuild.cli import main

    assert main(["prof", "-o", "x.json"]) == 1
    assert capsys.readouterr().err.startswith("opbuild prof: error: give the command to run after --")
