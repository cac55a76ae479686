"""Spec loading at scale: `opbuild validate` of 10,000 generated ops (bench/gen_ops.py) beside a
baseline of 1,000 in the same run; per-op time of each and their ratio (linear: about 1; issue 25
found loading quadratic, 2,000 ops 48 s of CPU). Goal: 10,000 ops validate in <= 30 s.

    python bench/validate_scale_bench.py [--ops 10000] [--baseline 1000]

Each measure is one fresh `python -m opbuild.cli validate DIR/ops` process: wall time, and its
CPU time from `resource.getrusage(RUSAGE_CHILDREN)`.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from gen_ops import generate  # noqa: E402

GOAL_SECONDS = 30.0


def validate(project: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one `opbuild validate project/ops`; exits if it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "opbuild.cli", "validate", str(project / "ops")],
                          capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"validate of {project} failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=10_000)
    parser.add_argument("--baseline", type=int, default=1_000)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (args.baseline, args.ops):
            project = Path(tmp) / f"p{n}"
            generate(project, n)
            wall, cpu = validate(project)
            rows.append((n, wall, cpu))
    print(f"{'ops':>7} {'wall s':>8} {'cpu s':>8} {'ms/op':>7}")
    for n, wall, cpu in rows:
        print(f"{n:7d} {wall:8.2f} {cpu:8.2f} {1000 * wall / n:7.3f}")
    (nb, wb, _), (n, w, _) = rows
    print(f"per-op time ratio ({n} vs {nb} ops): {(w / n) / (wb / nb):.2f}; "
          f"{n} ops in {w:.1f} s (goal <= {GOAL_SECONDS:.0f} s: {'met' if w <= GOAL_SECONDS else 'NOT met'})")


if __name__ == "__main__":
    main()
