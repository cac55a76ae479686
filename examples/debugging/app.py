"""The debugging example's application: z = x + y on 16384 float32 elements with BuggyAdd, three
times, checked against numpy. `--bug N` plants BuggyAdd's bug N (ops/buggy_add/op.yaml): 1 a
wrong element, 2 a slow block, 3 a write past the end of z. Run from examples/debugging after
`scons ops` (docs/debugging.md)."""

import argparse

import numpy as np

import opbuild.runtime as rt

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--bug", type=int, default=0)
args = parser.parse_args()
ops = rt.import_ops("out/opp/vendors/customize")
x = np.arange(16384, dtype=np.float32)
y = np.full_like(x, 0.5)
try:
    for _ in range(3):
        z = ops.buggy_add(x, y, bug=args.bug)
except rt.AclnnError as exc:
    raise SystemExit(f"error: {exc.message}") from None
wrong = np.flatnonzero(z != x + y)
print(f"{wrong.size} wrong elements" + (f", the first at {wrong[0]}" if wrong.size else ""))
