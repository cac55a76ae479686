"""Instructions per cache hit (callgrind), the machine-independent measure of the hit path.

    scons ops && python bench/hit_ir.py [--package out/opp/vendors/customize] [--n 10000]
    python bench/hit_ir.py --miss [--n 1000]     # the cache miss instead (runtime_bench's row)

Counts, with valgrind's callgrind, the instructions (Ir) of one two-phase cache hit of the
1-element fp32 AddCustomTemplate on the default stream:
  Python  `size, ex = ops.aclnnAddCustomTemplateGetWorkspaceSize(x, y, z);
           ops.aclnnAddCustomTemplate(None, size, ex, None)` (bench/runtime_bench.py's row), counted
          from after a warm-up (valgrind --instr-atstart=no, then callgrind_control -i on)
  C ABI   the same two calls from a C program (bench/capi_bench.c hits), and on a created
          stream with a synchronize per 1,000 (capi_bench stream_hits; the stream's thread runs
          the kernels: its instructions count too; a wakeup's cost is mostly outside Ir)
With --miss: `rt.clear_op_cache()` before each such Python call, the cache miss row of
bench/runtime_bench.py (inference and tiling of a known call signature and the plan: in C since
session 14, native/src/signature_miss.c).
Each is run with N and 2N hits; (Ir(2N) - Ir(N)) / N is the cost of one hit, start-up and
warm-up cancelled. Wall-clock times on a shared machine swing 2x; the Python count repeats to
the instruction, the C one within ~1-2% (its process's other threads are counted too). Needs valgrind; OPENBLAS_NUM_THREADS=1 is set (numpy's BLAS threads would count).
Takes a few minutes (six runs under valgrind; the C program starts the embedded interpreter
for its first call).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WARM_UP = 300


def child(package: str, n: int, miss: bool) -> None:
    """Run under callgrind: warm up uninstrumented, switch instrumentation on, run n hits (or
    misses)."""
    import numpy as np

    import opbuild.runtime as rt

    ops = rt.import_ops(package)
    x, y, z = np.ones(1, np.float32), np.ones(1, np.float32), np.empty(1, np.float32)
    phase1, phase2 = ops.aclnnAddCustomTemplateGetWorkspaceSize, ops.aclnnAddCustomTemplate

    def two_phase():
        if miss:
            rt.clear_op_cache()
        size, ex = phase1(x, y, z)
        phase2(None, size, ex, None)

    def loop(k: int) -> None:
        for _ in range(k):
            two_phase()

    loop(WARM_UP)
    subprocess.run(["callgrind_control", "-i", "on", str(os.getpid())], stdout=subprocess.DEVNULL, check=True)
    loop(WARM_UP)  # the instrumented code's own warm-up (the same in both runs)
    loop(n)
    if z[0] != 2.0:
        raise SystemExit(f"wrong result {z[0]}")


def total_ir(cmd: list[str], instr_at_start: bool, env: dict[str, str]) -> int:
    with tempfile.TemporaryDirectory(prefix="hit_ir") as tmp:
        out = Path(tmp) / "callgrind.out"
        run = subprocess.run(["valgrind", "--tool=callgrind", f"--instr-atstart={'yes' if instr_at_start else 'no'}",
                              f"--callgrind-out-file={out}", *cmd], capture_output=True, text=True, env=env)
        if run.returncode:
            raise SystemExit(f"{' '.join(cmd)} failed under valgrind:\n{run.stderr[-2000:]}")
        found = re.search(r"^summary: (\d+)", out.read_text(), re.M)
        if found is None:
            raise SystemExit(f"no summary in {out}")
        return int(found.group(1))


def per_hit(cmd_of, n: int, instr_at_start: bool, env: dict[str, str]) -> float:
    a = total_ir(cmd_of(n), instr_at_start, env)
    b = total_ir(cmd_of(2 * n), instr_at_start, env)
    return (b - a) / n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--package", default=str(REPO / "out/opp/vendors/customize"), help="a built sample package")
    parser.add_argument("--n", type=int, default=10_000, help="hits of the shorter run (the longer one makes 2n)")
    parser.add_argument("--miss", action="store_true", help="the cache miss of a Python two-phase call only (use a smaller --n, e.g. 1000)")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.package, args.child, args.miss)
        return 0
    if not (Path(args.package) / "op_api/python/aclnn_ops.py").is_file():
        print(f"no built package at {args.package}: run `scons ops` first (or pass --package)", file=sys.stderr)
        return 1
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    miss = ["--miss"] if args.miss else []
    python = per_hit(lambda k: [sys.executable, __file__, "--package", args.package, *miss, "--child", str(k)], args.n,
                     False, env)
    if args.miss:
        print(f"cache miss (Python call): {python:8.0f} Ir")
        return 0
    print(f"Python two-phase hit: {python:8.0f} Ir")
    sys.path.insert(0, str(REPO / "bench"))
    from runtime_bench import build_capi_bench

    with tempfile.TemporaryDirectory(prefix="hit_ir") as tmp:
        exe = Path(tmp) / "capi_bench"
        problem = build_capi_bench(Path(args.package), exe)
        if problem:
            print(f"C ABI two-phase hit:  n/a ({problem})")
            return 0
        c_abi = per_hit(lambda k: [str(exe), "hits", str(k)], args.n, True, env)
        c_stream = per_hit(lambda k: [str(exe), "stream_hits", str(k)], args.n, True, env)
    print(f"C ABI two-phase hit:  {c_abi:8.0f} Ir")
    print(f"  on a created stream: {c_stream:7.0f} Ir (both threads: the caller's and the stream's)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
