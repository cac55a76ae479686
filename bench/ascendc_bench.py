"""Ascend C vs opbuild's C kernel API vs numpy, in one run (issue 22's speed rows).

1. Throughput of z = x + y over N elements (default 16M), fp16 and fp32: the in-house Ascend C op
   AddAscendc (tests/ascendc/ops/add_ascendc: UB tiles through TPipe/TQue, DataCopy in and out,
   Add), the C-API sample op AddCustomTemplate (ops/add_custom_template: one pass over GM) and
   numpy.add(out=). Each as the best of R one-shot-free two-phase calls (phase 1 once, phase 2
   timed; the three in turn, round by round, so that a change of the machine's load moves all
   three), reported as GB/s of the three tensors and as a ratio to the C-API op (goal >= 0.8x).
   With them, bench/staging_bench.c (no opbuild): the same add as one direct pass vs staged
   through a per-thread UB buffer tile by tile, in plain C, the copies in by memcpy or by the
   twin's four-stream copy -- the ratio an Ascend C kernel that stages every tile can reach
   against the C-API op on this machine at best.
2. Import + first build of one Ascend C op (`opbuild import ascendc` + `scons ops OPS=...`) vs the
   first build of the C-API op alone, each in a fresh project with a fresh validate cache (goal
   <= 3x).

    python bench/ascendc_bench.py [--elements N] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
LOOKALIKE = REPO / "tests" / "ascendc" / "ops" / "add_ascendc"


def _scons(project: Path, *args: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "SCons", "-Q", *args], cwd=project, env=env, capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise SystemExit(f"scons failed in {project}:\n{proc.stdout}\n{proc.stderr}")
    return time.perf_counter() - started


def _project(where: Path) -> Path:
    where.mkdir(parents=True)
    shutil.copy2(REPO / "SConstruct", where / "SConstruct")
    (where / "ops").mkdir()
    return where


def build_times(base: Path) -> tuple[float, float, float]:
    """(C-API first build, Ascend C import, Ascend C first build) in seconds."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPBUILD_CACHE_DIR", "SCONSFLAGS")}
    env["OPBUILD_VALIDATE_CACHE"] = str(base / "validate-c")
    c_project = _project(base / "c")
    shutil.copytree(REPO / "ops" / "add_custom_template", c_project / "ops" / "add_custom_template")
    c_build = _scons(c_project, "ops", env=env)
    env["OPBUILD_VALIDATE_CACHE"] = str(base / "validate-ascendc")
    a_project = _project(base / "ascendc")
    cann = base / "cann_project"
    shutil.copytree(LOOKALIKE / "op_host", cann / "op_host")
    shutil.copytree(LOOKALIKE / "op_kernel", cann / "op_kernel")
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "opbuild", "import", "ascendc", str(cann), "-o",
                           str(a_project / "ops")], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"opbuild import failed:\n{proc.stdout}\n{proc.stderr}")
    imported = time.perf_counter() - started
    a_build = _scons(a_project, "ops", env=env)
    return c_build, imported, a_build


def throughput(base: Path, elements: int, repeat: int) -> list[tuple[str, str, float]]:
    import opbuild.runtime as rt

    env_project = _project(base / "both")
    shutil.copytree(REPO / "ops" / "add_custom_template", env_project / "ops" / "add_custom_template")
    shutil.copytree(LOOKALIKE, env_project / "ops" / "add_ascendc")
    _scons(env_project, "-j2", "ops", env={k: v for k, v in os.environ.items() if k != "OPBUILD_CACHE_DIR"})
    ops = rt.import_ops(env_project / "out/opp/vendors/customize")
    rows = []
    for dtype in (np.float16, np.float32):
        x = np.random.default_rng(0).standard_normal(elements).astype(dtype)
        y = np.random.default_rng(1).standard_normal(elements).astype(dtype)
        z = np.empty_like(x)
        calls = {}
        for name, phase1, phase2 in (("Ascend C AddAscendc", ops.aclnnAddAscendcGetWorkspaceSize, ops.aclnnAddAscendc),
                                     ("C API AddCustomTemplate", ops.aclnnAddCustomTemplateGetWorkspaceSize,
                                      ops.aclnnAddCustomTemplate)):
            size, executor = phase1(x, y, z)
            executor.set_repeatable()
            workspace = rt.malloc(size) if size else None
            calls[name] = lambda phase2=phase2, workspace=workspace, size=size, executor=executor: phase2(
                workspace, size, executor, None)
            calls[name]()
            np.testing.assert_array_equal(z, x + y)
        calls["numpy.add(out=)"] = lambda: np.add(x, y, out=z)
        best = _round_robin(calls, repeat)
        rows += [(name, np.dtype(dtype).name, t) for name, t in best.items()]
    return rows


def _round_robin(calls: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """The best time of each call over `repeat` rounds, each round calling every one once: a change
    of the machine's load moves all of them, not the one that happened to run then."""
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(repeat):
        for name, fn in calls.items():
            t = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t)
    return best


def staging_ceiling(base: Path, elements: int, repeat: int) -> str:
    """bench/staging_bench.c's line (direct and staged times, their ratio), or why it did not run."""
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        return "(no C compiler: staging_bench.c not run)"
    exe = base / "staging_bench"
    subprocess.run([cc, "-O2", "-pthread", str(REPO / "bench" / "staging_bench.c"), "-o", str(exe)], check=True)
    threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    proc = subprocess.run([str(exe), str(elements), str(repeat), str(min(threads, 64))], capture_output=True, text=True,
                          check=True)
    return proc.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=16 << 20)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="opbuild-ascendc-bench-"))
    try:
        rows = throughput(base, args.elements, args.repeat)
        print(f"z = x + y, {args.elements} elements, best of {args.repeat} (phase 2 only)")
        print(f"{'kernel':26} {'dtype':8} {'time':>10} {'GB/s':>7} {'vs C API':>9} {'vs numpy':>9}")
        by = {(n, d): t for n, d, t in rows}
        for name, dtype, t in rows:
            nbytes = 3 * args.elements * np.dtype(dtype).itemsize
            c_api = by[("C API AddCustomTemplate", dtype)]
            numpy_t = by[("numpy.add(out=)", dtype)]
            print(f"{name:26} {dtype:8} {t * 1e3:8.2f}ms {nbytes / t / 1e9:7.2f} {c_api / t:8.2f}x {numpy_t / t:8.2f}x")
        print(f"staging in plain C, float32, {args.elements} elements (bench/staging_bench.c): "
              f"{staging_ceiling(base, args.elements, args.repeat)}")
        c_build, imported, a_build = build_times(base / "builds")
        print(f"\nfirst build, one op: C API {c_build:.2f} s; Ascend C import {imported:.2f} s + build {a_build:.2f} s "
              f"= {imported + a_build:.2f} s ({(imported + a_build) / c_build:.2f}x the C API op's)")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
