"""Generate N synthetic ops into a project directory (for the build benchmarks).

    python bench/gen_ops.py DIR N [--keys table|default|mixed] [--binaries 1..4]

Writes DIR/SConstruct (the repository's) and DIR/ops/synth_op_<i>/{op.yaml,kernel.c,tiling.c}.
Every op is `z = x + y` elementwise with 4 binaries (float16, float32, int32, int16; `--binaries K`:
the first K of them), a C kernel that serves them all through the DTYPE_* macros, and a C tiling function. Simplified keys are a
customized table (even ops) and default mode (odd ops) by default (`--keys mixed`).
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

DTYPES = (("FP16", "float16"), ("FP32", "float32"), ("INT32", "int32"), ("INT16", "int16"))

SPEC = """\
# Synthetic benchmark op {index}: z = x + y for {count} dtype(s) ({mode} simplified keys).
op: {op}
description: synthetic elementwise add {index}
inputs:
  - name: x
    dtypes: [{dtypes}]
  - name: y
    dtypes: [{dtypes}]
outputs:
  - name: z
    dtypes: [{dtypes}]
    shape: {{same_as: x}}
tiling_data:
  - {{name: total_length, type: uint64}}
  - {{name: block_length, type: uint64}}
kernel: {{source: kernel.c, entry: {snake}}}
tiling: {{source: tiling.c, function: {snake}_tiling}}
{key_rule}binaries:
{binaries}socs: [ascend910b]
"""

TABLE_RULE = """\
simplified_key:
  mode: customized
  callback: table
"""

KERNEL = """\
/* Synthetic op {op}: z = x + y, one source for every dtype (DTYPE_X, DTYPE_Z). */
#include "opbuild/kernel.h"
#include "{snake}_tiling.h"

static inline float h2f(half v) {{ return opbuild_half_to_float(v); }}
static inline float f2f(float v) {{ return v; }}
static inline float i2f(int32_t v) {{ return (float)v; }}
static inline float s2f(int16_t v) {{ return (float)v; }}
#define TO_F(v) _Generic((v), half: h2f, float: f2f, int32_t: i2f, int16_t: s2f)(v)

static inline DTYPE_Z add_elem(DTYPE_X a, DTYPE_Y b) {{
#if ORIG_DTYPE_Z == OPBUILD_DT_FLOAT16
    return opbuild_float_to_half(TO_F(a) + TO_F(b));
#else
    return (DTYPE_Z)(a + b);
#endif
}}

KERNEL_ENTRY void {snake}(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR workspace, GM_ADDR tiling) {{
    (void)workspace;
    GET_TILING_DATA(td, tiling);
    uint64_t begin = (uint64_t)GetBlockIdx() * td.block_length;
    if (begin >= td.total_length) return;
    uint64_t end = begin + td.block_length < td.total_length ? begin + td.block_length : td.total_length;
    const DTYPE_X *xp = (const DTYPE_X *)x;
    const DTYPE_Y *yp = (const DTYPE_Y *)y;
    DTYPE_Z *zp = (DTYPE_Z *)z;
    for (uint64_t i = begin; i < end; ++i) zp[i] = add_elem(xp[i], yp[i]);
}}
"""

TILING = """\
/* Synthetic op {op}: tiling splits the elements of x over the cores, 64-element aligned. */
#include "opbuild/tiling.h"
#include "{snake}_tiling.h"

OPBUILD_API uint32_t {snake}_tiling(TilingContext *ctx) {{
    const OpbuildTensorDesc *x = tiling_input(ctx, {prefix}_INPUT_X);
    const OpbuildTensorDesc *y = tiling_input(ctx, {prefix}_INPUT_Y);
    const OpbuildTensorDesc *z = tiling_output(ctx, {prefix}_OUTPUT_Z);
    if (!x || !y || !z) return tiling_fail(ctx, "{op}: x, y and z are required");
    if (y->dtype != x->dtype || z->dtype != x->dtype) return tiling_fail(ctx, "{op}: dtypes differ");
    int64_t total = tiling_shape_size(x);
    if (total < 0) return tiling_fail(ctx, "{op}: unknown dim");
    {op}TilingData *td = TILING_DATA(ctx, {op}TilingData);
    if (!td) return OPBUILD_GRAPH_FAILED;
    uint32_t cores = tiling_core_num(ctx);
    uint64_t len = ((uint64_t)total + cores - 1) / cores;
    len = (len + 63) / 64 * 64;
    if (len == 0) len = 64;
    td->total_length = (uint64_t)total;
    td->block_length = len;
    tiling_set_block_dim(ctx, (uint32_t)(((uint64_t)total + len - 1) / len) ?: 1u);
    tiling_set_tiling_key(ctx, 0);
    tiling_set_workspace_size(ctx, 0);
    return OPBUILD_GRAPH_SUCCESS;
}}
"""


def op_names(index: int) -> tuple[str, str]:
    """(OpType, snake_case directory) of synthetic op `index`."""
    return f"SynthOp{index:04d}", f"synth_op{index:04d}"


def write_op(ops_dir: Path, index: int, table: bool, binary_count: int = len(DTYPES)) -> Path:
    op, snake = op_names(index)
    kinds = DTYPES[:binary_count]
    dtypes = ", ".join(name for _, name in kinds)
    binaries = ""
    for short, name in kinds:
        binaries += f"  - name: {op}_{short}\n    when: {{x: {name}, y: {name}, z: {name}}}\n"
        if table:
            binaries += f"    key: synth_{short.lower()}\n"
    text = SPEC.format(index=index, op=op, snake=snake, dtypes=dtypes, binaries=binaries, count=len(kinds),
                       key_rule=TABLE_RULE if table else "", mode="table" if table else "default")
    d = ops_dir / snake
    d.mkdir(parents=True, exist_ok=True)
    (d / "op.yaml").write_text(text)
    (d / "kernel.c").write_text(KERNEL.format(op=op, snake=snake))
    (d / "tiling.c").write_text(TILING.format(op=op, snake=snake, prefix=snake.upper()))
    return d


def generate(project: Path, n: int, keys: str = "mixed", binaries: int = len(DTYPES)) -> list[Path]:
    """A project at `project` (SConstruct + ops/) with `n` synthetic ops; returns the op dirs."""
    project = Path(project)
    ops_dir = project / "ops"
    if ops_dir.exists():
        shutil.rmtree(ops_dir)
    ops_dir.mkdir(parents=True)
    shutil.copy2(REPO / "SConstruct", project / "SConstruct")
    table_of = {"table": lambda i: True, "default": lambda i: False, "mixed": lambda i: i % 2 == 0}[keys]
    return [write_op(ops_dir, i, table_of(i), binaries) for i in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project", type=Path)
    parser.add_argument("n", type=int)
    parser.add_argument("--keys", choices=("table", "default", "mixed"), default="mixed")
    parser.add_argument("--binaries", type=int, choices=range(1, len(DTYPES) + 1), default=len(DTYPES),
                        help="binaries per op (the first K of float16, float32, int32, int16)")
    args = parser.parse_args()
    dirs = generate(args.project, args.n, args.keys, args.binaries)
    print(f"{len(dirs)} ops under {args.project / 'ops'}")


if __name__ == "__main__":
    main()
