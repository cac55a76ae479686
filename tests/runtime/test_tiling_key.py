"""The tiling key reaches the kernel: TILING_KEY_IS(k) / GetTilingKey() (opbuild/kernel.h) see the
value the tiling function set, through the Python runtime, the C fast path and a packed .om; a key
the spec's `tiling.keys` (the kernel JSON's kernelList) does not declare is an error at the miss,
for a package and an .om alike. The sample AddCustomTemplate branches on keys 0 (whole rows) and 1
(a partial last row)."""

from __future__ import annotations

import json
import re
import struct

import numpy as np
import pytest
from pkgbuild import build_project, new_project

import opbuild.runtime as rt
from opbuild.abi.kernel_launch import kernel_list_keys, tiling_argument, tiling_key_offset
from opbuild.runtime.errors import ACLNN_ERR_INNER, AclnnError

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
tiling: {source: tiling.c, function: keyed_add_tiling, keys: [3, 7]}
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
    tiling_set_tiling_key(ctx, total == 13 ? 9 : total < 100 ? 7 : 3);  /* 9: deliberately undeclared */
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


UNDECLARED = ("KeyedAdd: tiling function keyed_add_tiling set tiling key 9, which the kernel does not declare "
              "(declared tiling keys: 3, 7; spec field tiling.keys)")


def test_the_kernel_json_lists_the_declared_keys(keyed_package):
    desc = json.loads(next(keyed_package.parent.parent.rglob("KeyedAdd_FP32.json")).read_text())
    assert desc["kernelList"] == [{"kernelName": "KeyedAdd_FP32_3"}, {"kernelName": "KeyedAdd_FP32_7"}]
    assert kernel_list_keys(desc) == (3, 7)


def test_explain_shows_the_declared_keys_and_the_chosen_one(keyed_package, capsys):
    from opbuild.cli import main

    def report(n: int) -> tuple[int, dict[str, str]]:
        status = main(["explain", str(keyed_package), "KeyedAdd", "-i", f"x=float32[{n}]", "-i", f"y=float32[{n}]"])
        lines = capsys.readouterr().out.splitlines()
        return status, {k: v.strip() for k, _, v in (line.partition(":") for line in lines)}

    status, fields = report(1000)
    assert status == 0 and fields["kernel"] == "tiling keys 3, 7 (the kernelList of KeyedAdd_FP32.json)"
    assert fields["tiling"] == "keyed_add_tiling chose tiling key 3 (block_dim 1, workspace 0 bytes)"
    status, fields = report(13)
    assert status == 1 and fields["tiling"].startswith("keyed_add_tiling chose tiling key 9 ")
    assert fields["refused"] == UNDECLARED  # what the runtime says at the miss


def test_an_undeclared_tiling_key_is_an_error_at_the_miss(keyed_package):
    ops = rt.import_ops(keyed_package)
    x = np.ones(13, dtype=np.float32)
    for _ in range(2):  # no plan is cached: the second call fails the same way
        with pytest.raises(AclnnError) as exc:
            ops.aclnnKeyedAddGetWorkspaceSize(x, x, np.empty_like(x))
        assert exc.value.status == ACLNN_ERR_INNER and exc.value.message == UNDECLARED
    np.testing.assert_array_equal(ops.keyed_add(x[:12], x[:12]), np.zeros(12, np.float32))  # key 7 still serves


def test_a_dynamic_model_checks_the_keys_its_kernel_json_declares(keyed_package):
    """A dynamic .om runs tiling at run time against the kernel JSON it packed: same keys, same error."""
    from opbuild.om.loader import load_om
    from opbuild.om.run import OmRunner
    from opbuild.om.single_op import build_single_op

    data = build_single_op("KeyedAdd", ["x=float32[-1]", "y=float32[-1]"], [], keyed_package.parent.parent)
    runner = OmRunner(load_om(data, trust=True))
    x = np.arange(1000, dtype=np.float32)
    np.testing.assert_array_equal(runner.run({"x": x, "y": x})["z"], x + x)  # key 3
    with pytest.raises(Exception, match=re.escape(UNDECLARED)):
        runner.run({"x": x[:13], "y": x[:13]})


def test_a_package_whose_kernel_list_lacks_the_key_fails_the_same_way(package_copy):
    """The declared keys come from the kernel JSON alone: drop key 1 from the sample's kernelList
    and a call whose tiling sets key 1 fails."""
    path = next(package_copy.rglob("AddCustomTemplate_FP32.json"))
    desc = json.loads(path.read_text())
    desc["kernelList"] = desc["kernelList"][:1]
    path.write_text(json.dumps(desc))
    ops = rt.import_ops(package_copy)
    x = np.ones(64, dtype=np.float32)
    np.testing.assert_array_equal(ops.add_custom_template(x, x), x + x)  # key 0 is declared
    with pytest.raises(AclnnError, match=r"AddCustomTemplate: tiling function add_custom_template_tiling set tiling "
                                         r"key 1, which the kernel does not declare \(declared tiling keys: 0;"):
        ops.add_custom_template(x[:63], x[:63])


@pytest.mark.parametrize("desc, message", [
    ({"kernelName": "A"}, "kernelList is None"),
    ({"kernelName": "A", "kernelList": []}, "kernelList is []"),
    ({"kernelName": "A", "kernelList": [{"kernelName": "B_0"}]}, "kernelList[0] kernelName 'B_0' is not A_<tiling key>"),
    ({"kernelName": "A", "kernelList": [{"kernelName": "A_x"}]}, "kernelList[0] kernelName 'A_x' is not A_<tiling key>"),
    ({"kernelName": "A", "kernelList": [{"kernelName": "A_1"}, {"kernelName": "A_1"}]}, "kernelList[1] repeats tiling key 1"),
    ({"kernelName": "A", "kernelList": [{"kernelName": f"A_{1 << 64}"}]}, f"kernelList[0] tiling key {1 << 64} is not a uint64"),
    ({"kernelName": "A", "kernelList": [{"kernelName": "A_1", "tilingKey": True}]}, "kernelList[0] tiling key True is not"),
])
def test_malformed_kernel_lists(desc, message):
    with pytest.raises(ValueError) as exc:
        kernel_list_keys(desc)
    assert str(exc.value).startswith(message)


def test_a_mix_kernel_list_entry_gives_its_tiling_key():
    """asc_opc's MIX entries (taskRation "tilingKey") carry `tilingKey` next to the name (opbase's
    QuantBatchMatmulV3 mock); the key comes from there."""
    desc = {"kernelName": "Q", "kernelList": [{"tilingKey": 10, "kernelType": "MIX_AIC", "kernelName": "Q_10"},
                                              {"kernelName": "Q_1"}]}
    assert kernel_list_keys(desc) == (10, 1)


@pytest.mark.parametrize("n, key", [(64, 0), (3 * 4096 * 8, 0), (10, 1), (4096 * 5 + 7, 1)])
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_the_sample_runs_both_of_its_tiling_keys(ops, n, key, dtype):
    """AddCustomTemplate (ops/add_custom_template, tiling.keys [0, 1]): key 0 for whole 64-element
    rows, key 1 when the last row is partial (its kernel's tail path); both add exactly."""
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    z = np.empty_like(x)
    size, executor = ops.aclnnAddCustomTemplateGetWorkspaceSize(x, y, z)
    assert executor.plan.tiling_key == key and executor.plan.block_dim >= (2 if n > 8192 else 1)
    ops.aclnnAddCustomTemplate(None, size, executor, None)
    np.testing.assert_array_equal(z, x + y)
