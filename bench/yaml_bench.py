"""YAML bounds: how long and how much memory `opbuild validate` takes to refuse a 2 KB alias bomb,
beside validating a sample op.yaml in the same run (the ratio is what to watch; issue 10 item 7
asks for < 1 s and < 200 MB for the bomb).

    python bench/yaml_bench.py [--runs 5]

Each run is a fresh `python -m opbuild.cli validate` process; its peak RSS comes from
`resource.getrusage(RUSAGE_CHILDREN)` (Linux: KB).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "spec"))

from test_spec_yaml_bounds import alias_bomb  # noqa: E402


def run(spec: Path) -> tuple[float, float, int]:
    """(seconds, peak RSS MB, exit code) of one validate process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "opbuild.cli", "validate", str(spec)], capture_output=True)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # max over the children so far
    return seconds, max(peak, before) / 1024, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bomb = Path(tmp) / "op.yaml"
        bomb.write_text(alias_bomb())
        sample = REPO / "ops" / "add_custom_template" / "op.yaml"
        rows = []
        for name, spec in (("sample op.yaml", sample), (f"alias bomb ({bomb.stat().st_size} B)", bomb)):
            times, codes = [], set()
            for _ in range(args.runs):
                seconds, _, code = run(spec)
                times.append(seconds)
                codes.add(code)
            rows.append((name, min(times), codes))
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"{'input':28} {'best s':>8} {'exit':>6}")
    for name, best, codes in rows:
        print(f"{name:28} {best:8.3f} {','.join(map(str, sorted(codes))):>6}")
    print(f"bomb / sample time ratio: {rows[1][1] / rows[0][1]:.2f}; peak RSS of any validate process: {peak:.0f} MB")


if __name__ == "__main__":
    main()
