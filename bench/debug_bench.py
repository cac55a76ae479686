"""What the debugging tools cost a Python two-phase cache hit (1-element fp32 AddCustomTemplate).

    scons ops && python bench/debug_bench.py [--package out/opp/vendors/customize] [--baseline /path/to/other/checkout]

Rows, in one run, round robin (best of N each; nothing is asserted):
  off (never on)       the hit as every program runs it
  off (after on/off)   after a dump was started and stopped: the hit paths are native again
  dump on, not selected   a dump of another op is on: every launch takes the Python path
  dump on, written     the hit dumped (two .npy + launch.json per call, to a temporary directory)
  profile on           every launch recorded (host event + per-block times)
With --baseline, the "off" hit is also timed in subprocesses running the other checkout's opbuild
(e.g. the main branch before the debugging tools) against this one's, alternately: the cost of
"dump off" itself.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]

CHILD = """
import sys, timeit
import numpy as np
import opbuild.runtime as rt
ops = rt.import_ops(sys.argv[1])
x = np.ones(1, np.float32); y = np.ones(1, np.float32); z = np.empty(1, np.float32)
p1, p2 = ops.aclnnAddCustomTemplateGetWorkspaceSize, ops.aclnnAddCustomTemplate
def call():
    size, ex = p1(x, y, z)
    p2(None, size, ex, None)
call()
n = int(sys.argv[2])
print(min(timeit.repeat(call, number=n, repeat=5)) / n)
"""


def _child(checkout: Path, package: Path, number: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    env.pop("OPBUILD_DUMP", None)
    env.pop("OPBUILD_PROFILE", None)
    out = subprocess.run([sys.executable, "-c", CHILD, str(package), str(number)], env=env, capture_output=True,
                         text=True, check=True).stdout
    return float(out.strip())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--package", default=str(REPO / "out/opp/vendors/customize"))
    parser.add_argument("--baseline", help="another checkout of opbuild to time the 'off' hit against")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    package = Path(args.package).resolve()
    if not (package / "op_api/python/aclnn_ops.py").is_file():
        print(f"no built package at {package}: run `scons ops` first (or pass --package)", file=sys.stderr)
        return 1
    sys.path.insert(0, str(REPO))
    import opbuild.runtime as rt
    from opbuild.runtime.debug import profile

    number, repeat = (2_000, 3) if args.quick else (20_000, 7)
    ops = rt.import_ops(package)
    x, y, z = np.ones(1, np.float32), np.ones(1, np.float32), np.empty(1, np.float32)
    p1, p2 = ops.aclnnAddCustomTemplateGetWorkspaceSize, ops.aclnnAddCustomTemplate

    def call():
        size, ex = p1(x, y, z)
        p2(None, size, ex, None)

    call()
    with tempfile.TemporaryDirectory() as tmp:
        def off():
            return call

        def after_on_off():
            rt.dump(Path(tmp) / "x", ops=["NoSuchOp"]).stop()
            return call

        rows = {"off (never on)": off, "off (after on/off)": after_on_off}
        best = {name: float("inf") for name in [*rows, "dump on, not selected", "dump on, written", "profile on"]}
        for _ in range(repeat):
            for name, setup in rows.items():
                fn = setup()
                best[name] = min(best[name], timeit.timeit(fn, number=number) / number)
            with rt.dump(Path(tmp) / "other", ops=["NoSuchOp"]):
                best["dump on, not selected"] = min(best["dump on, not selected"],
                                                    timeit.timeit(call, number=number) / number)
            with rt.dump(Path(tmp) / "all", mode="all"):
                n = max(number // 50, 20)
                best["dump on, written"] = min(best["dump on, written"], timeit.timeit(call, number=n) / n)
            profile.start()
            best["profile on"] = min(best["profile on"], timeit.timeit(call, number=number) / number)
            profile.stop()
    base = best["off (never on)"]
    print(f"Python two-phase cache hit, 1-element fp32 AddCustomTemplate, best of {repeat} (round robin)")
    for name, t in best.items():
        print(f"  {name:<24s} {t * 1e6:9.3f} us  {t / base:6.2f}x")
    if args.baseline:
        runs = {"baseline": float("inf"), "this checkout": float("inf")}
        for _ in range(repeat):
            runs["baseline"] = min(runs["baseline"], _child(Path(args.baseline), package, number))
            runs["this checkout"] = min(runs["this checkout"], _child(REPO, package, number))
        print(f"dump off against {args.baseline} (subprocesses, alternating, best of {repeat})")
        for name, t in runs.items():
            print(f"  {name:<24s} {t * 1e6:9.3f} us  {t / runs['baseline']:6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
