"""Helpers for the spec tests: small specs written into tmp_path with their C sources.

(Imported by name from the tests of this directory: `from spec_helpers import ...`.)
"""

from __future__ import annotations

import shutil
from pathlib import Path


REPO = Path(__file__).resolve().parents[2]
OPS = REPO / "ops"
SAMPLES = ("add_custom_template", "add_n_custom", "leaky_relu_custom", "mul_custom", "non_zero_custom",
           "reduce_sum_custom", "sort_custom")
AICPU_SAMPLES = ("non_zero_custom", "sort_custom")
"""The samples with `engine: aicpu` (a compute source instead of kernel and tiling)."""

BASE_SPEC = """\
op: TestOp
description: y = x
inputs:
  - name: x
    dtypes: [float16, float32]
outputs:
  - name: y
    dtypes: [float16, float32]
    shape: {same_as: x}
tiling_data:
  - {name: total_length, type: uint64}
kernel: {source: kernel.c, entry: test_op}
tiling: {source: tiling.c, function: test_op_tiling}
binaries:
  - {name: TestOp_FP16, when: {x: float16, y: float16}}
  - {name: TestOp_FP32, when: {x: float32, y: float32}}
"""

TILING_C = """\
#include "opbuild/tiling.h"

uint32_t test_op_tiling(TilingContext *ctx)
{
    return 0;
}

static uint32_t *gen_key(TilingContext *ctx, char *key) {
    return 0;
}

uint32_t declared_only(TilingContext *ctx, char *key);
/* uint32_t commented_out(TilingContext *ctx, char *key) { return 0; } */
"""


def where(text: str, needle: str, nth: int = 1) -> tuple[int, int]:
    """1-based (line, col) of the nth occurrence of `needle` in `text`."""
    pos = -1
    for _ in range(nth):
        pos = text.index(needle, pos + 1)
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return line, col


def write_op(root: Path, text: str, *, dirname: str = "test_op", kernel: str | None = "",
             tiling: str | None = TILING_C, files: dict[str, str] | None = None) -> Path:
    """Write `<root>/<dirname>/op.yaml` (+ kernel.c, tiling.c, extra files); returns the spec path."""
    op_dir = root / dirname
    op_dir.mkdir(parents=True, exist_ok=True)
    (op_dir / "op.yaml").write_text(text)
    if kernel is not None:
        (op_dir / "kernel.c").write_text(kernel)
    if tiling is not None:
        (op_dir / "tiling.c").write_text(tiling)
    for name, content in (files or {}).items():
        (op_dir / name).write_text(content)
    return op_dir / "op.yaml"


def sample_copy(root: Path, name: str) -> Path:
    """ops/<name> copied under `root` (to edit it freely). Returns the copied op.yaml."""
    dest = root / name
    shutil.copytree(OPS / name, dest)
    return dest / "op.yaml"


# An AI CPU op (a data-dependent output, one bool attr) and the compute source it names.
AICPU_SPEC = """\
op: TestOp
engine: aicpu
inputs:
  - name: x
    dtypes: [float32, int32]
outputs:
  - name: y
    dtypes: [int64]
    shape: {data_dependent: true, max: [rank(x), size(x)]}
attrs:
  - {name: flag, type: bool, default: false}
compute: {source: compute.c, entry: test_op_compute}
"""

COMPUTE_C = """\
#include "opbuild/aicpu.h"

uint32_t test_op_compute(AicpuContext *ctx) { return AICPU_OK; }
"""
