"""The tiling key reaches the kernel: TILING_KEY_IS(k) / GetTilingKey() (opbuild/kernel.h) see the
value the tiling function set, through the Python runtime, the C fast path and a packed .om."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from pkgbuild import build_project, new_project

import opbuild.runtime as rt
from opbuild.abi.kernel_launch import tiling_argument, tiling_key_offset

pytestmark = pytest.mark.slow  # builds its own package with `scons ops`

SPEC = """\
op: KeyedAdd
description: z = x - y when the tiling key is 7 (fewer than 100 elements), x + y when it is 3
inputs:
  - {name: x, dtypes: [float32]}
  - {name: y, dtypes: [float32]}
outputs:
  - {name: z, dtypes: [float32], shape: {same_as: x}}
tiling_data:
  - {name: total_length, type: uint64}
kernel: {source: kernel.c, entry: keyed_add}
tiling: {source: tiling.c, function: keyed_add_tiling}
binaries:
  - {name: KeyedAdd_FP32, when: {x: float32, y: float32, z: float32}}
socs: [ascend910b]
"""

KERNEL = """\
#include "opbuild/kernel.h"
#include "keyed_add_tiling.h"

KERNEL_ENTRY void keyed_add(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR workspace, GM_ADDR tiling) {
    (void)workspace;
    GET_TILING_DATA(td, tiling);
    const float *xp = (const float *)x, *yp = (const float *)y;
    float *zp = (float *)z;
    if (TILING_KEY_IS(7)) {
        for (uint64_t i = 0; i < td.total_length; ++i) zp[i] = xp[i] - yp[i];
    } else if (TILING_KEY_IS(3)) {
        for (uint64_t i = 0; i < td.total_length; ++i) zp[i] = xp[i] + yp[i];
    } else {
        KERNEL_FAIL("KeyedAdd: unexpected tiling key %llu", (unsigned long long)GetTilingKey());
    }
}
"""

TILING = """\
#include "opbuild/tiling.h"
#include "keyed_add_tiling.h"

OPBUILD_API uint32_t keyed_add_tiling(TilingContext *ctx) {
    const OpbuildTensorDesc *x = tiling_input(ctx, KEYED_ADD_INPUT_X);
    int64_t total = tiling_shape_size(x);
    KeyedAddTilingData *td = TILING_DATA(ctx, KeyedAddTilingData);
    if (!td || total < 0) return OPBUILD_GRAPH_FAILED;
    td->total_length = (uint64_t)total;
    tiling_set_block_dim(ctx, 1);
    tiling_set_tiling_key(ctx, total < 100 ? 7 : 3);
    tiling_set_workspace_size(ctx, 0);
    return OPBUILD_GRAPH_SUCCESS;
}
"""


@pytest.fixture(scope="module")
def keyed_package(tmp_path_factory):
    root = new_project(tmp_path_factory.mktemp("keyed"), ops=())
    op_dir = root / "ops" / "keyed_add"
    op_dir.mkdir(parents=True)
    (op_dir / "op.yaml").write_text(SPEC)
    (op_dir / "kernel.c").write_text(KERNEL)
    (op_dir / "tiling.c").write_text(TILING)
    return build_project(root)


def test_the_tiling_argument_carries_the_key_after_the_data():
    assert tiling_key_offset(0) == 8 and tiling_key_offset(8) == 8 and tiling_key_offset(12) == 16
    arg = tiling_argument(b"\x01\x02\x03", 12, 7)
    assert arg[:3] == b"\x01\x02\x03" and arg[3:16] == bytes(13) and struct.unpack("=Q", arg[16:]) == (7,)
    with pytest.raises(ValueError, match="more than"):
        tiling_argument(bytes(13), 12, 0)


@pytest.mark.parametrize("n, key", [(10, 7), (1000, 3)])
def test_the_kernel_branches_on_the_tiling_key(keyed_package, n, key):
    ops = rt.import_ops(keyed_package)
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    want = x - y if key == 7 else x + y
    for _ in range(3):  # the first call builds the plan; later ones may take the C fast path
        z = np.empty_like(x)
        size, executor = ops.aclnnKeyedAddGetWorkspaceSize(x, y, z)
        assert executor.plan.tiling_key == key
        ops.aclnnKeyedAdd(None, size, executor, None)
        np.testing.assert_array_equal(z, want)
    np.testing.assert_array_equal(ops.keyed_add(x, y), want)  # the one-shot wrapper


def test_a_packed_model_keeps_the_key(keyed_package):
    """A static single-op .om stores the tiling data and the key of its node; the key comes back."""
    from opbuild.om.loader import load_om
    from opbuild.om.run import OmRunner
    from opbuild.om.single_op import build_single_op

    data = build_single_op("KeyedAdd", ["x=float32[10]", "y=float32[10]"], [], keyed_package.parent.parent)
    x, y = np.arange(10, dtype=np.float32), np.ones(10, dtype=np.float32)
    np.testing.assert_array_equal(OmRunner(load_om(data, trust=True)).run({"x": x, "y": y})["z"], x - y)
