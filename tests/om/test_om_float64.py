"""float64 end to end in an .om model (issue 10: the model schema said `double`, so a model could
not name float64). No sample op takes float64, so a test op is built in a temp project: y = scale
* x, computed in double. The model has a float64 input and a float64 weight, is compiled to an .om
(static and dynamic shape), loaded and run, and the results are compared bit for bit with numpy
(values that float32 cannot hold, so a float32 round trip anywhere would show)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))

import pkgbuild  # noqa: E402

from opbuild.om.build import build_om  # noqa: E402
from opbuild.om.loader import load_om, parse_om  # noqa: E402
from opbuild.om.model import load_model  # noqa: E402
from opbuild.om.run import OmRunner  # noqa: E402

pytestmark = pytest.mark.slow

OP_YAML = """\
op: ScaleF64Custom
description: y = scale * x in float64
inputs:
  - {name: x, dtypes: [float64]}
outputs:
  - {name: y, dtypes: [float64], shape: {same_as: x}}
attrs:
  - {name: scale, type: float, default: 2.0}
tiling_data:
  - {name: total_length, type: uint64}
  - {name: block_length, type: uint64}
  - {name: scale, type: double}
kernel: {source: kernel.c, entry: scale_f64_custom}
tiling: {source: tiling.c, function: scale_f64_custom_tiling}
binaries:
  - {name: ScaleF64Custom_FP64, when: {x: float64, y: float64}}
socs: [ascend910b]
"""

KERNEL_C = """\
#include "opbuild/kernel.h"
#include "scale_f64_custom_tiling.h"

_Static_assert(ORIG_DTYPE_X == OPBUILD_DT_DOUBLE, "x is float64");

KERNEL_ENTRY void scale_f64_custom(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
    (void)workspace;
    GET_TILING_DATA(td, tiling);
    uint64_t begin, end;
    if (opbuild_block_span(td.total_length, td.block_length, &begin, &end) <= 0) return;
    const DTYPE_X *xp = (const DTYPE_X *)x;
    DTYPE_Y *yp = (DTYPE_Y *)y;
    for (uint64_t i = begin; i < end; ++i) yp[i] = td.scale * xp[i];
}
"""

TILING_C = """\
#include "opbuild/tiling.h"
#include "scale_f64_custom_tiling.h"

OPBUILD_API uint32_t scale_f64_custom_tiling(TilingContext *ctx) {
    const OpbuildTensorDesc *x = tiling_input(ctx, SCALE_F64_CUSTOM_INPUT_X);
    if (!x || x->dtype != OPBUILD_DT_DOUBLE || tiling_dtype_size(x->dtype) != 8)
        return tiling_fail(ctx, "ScaleF64Custom: x must be float64");
    ScaleF64CustomTilingData *td = TILING_DATA(ctx, ScaleF64CustomTilingData);
    if (!td) return OPBUILD_GRAPH_FAILED;
    td->total_length = (uint64_t)tiling_shape_size(x);
    td->scale = tiling_attr_float(ctx, SCALE_F64_CUSTOM_ATTR_SCALE);
    tiling_set_block_dim(ctx, tiling_split_elementwise(td->total_length, tiling_core_num(ctx), 256, 64,
                                                       &td->block_length));
    tiling_set_tiling_key(ctx, 0);
    tiling_set_workspace_size(ctx, 0);
    return OPBUILD_GRAPH_SUCCESS;
}
"""

MODEL_YAML = """\
name: f64_{kind}
inputs: [{{name: x, dtype: float64, shape: {shape}}}]
weights: [{{name: w, file: w.npy}}]
nodes:
  - {{name: n0, op: ScaleF64Custom, inputs: [x], outputs: [t], attrs: {{scale: 3.0}}}}
  - {{name: n1, op: ScaleF64Custom, inputs: [w], outputs: [u], attrs: {{scale: 0.1}}}}
outputs: [t, u]
"""


@pytest.fixture(scope="module")
def f64_opp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = pkgbuild.new_project(tmp_path_factory.mktemp("f64_project"), ops=())
    op_dir = root / "ops" / "scale_f64_custom"
    op_dir.mkdir(parents=True)
    (op_dir / "op.yaml").write_text(OP_YAML)
    (op_dir / "kernel.c").write_text(KERNEL_C)
    (op_dir / "tiling.c").write_text(TILING_C)
    try:
        pkgbuild.build_project(root)
    except RuntimeError as exc:
        pytest.fail(str(exc))
    return root / "out" / "opp"


def _model(tmp_path: Path, kind: str, shape: list[int], weight: np.ndarray) -> Path:
    np.save(tmp_path / "w.npy", weight)
    path = tmp_path / f"{kind}.yaml"
    path.write_text(MODEL_YAML.format(kind=kind, shape=shape))
    return path


@pytest.mark.parametrize("kind,shape", [("static", [3, 70]), ("dynamic", [-1, 70])])
def test_float64_model_builds_and_runs(f64_opp, tmp_path, kind, shape):
    rng = np.random.default_rng(3)
    w = rng.random((5, 7)) / 3
    om = build_om(load_model(_model(tmp_path, kind, shape, w)), f64_opp)
    parsed = parse_om(om)
    assert parsed.model_def["inputs"] == [{"name": "x", "dtype": "float64", "shape": shape}]
    assert sorted(parsed.kernels) == ["customize:ScaleF64Custom_FP64"]

    x = rng.random((3, 70)) / 3
    assert not np.array_equal(x.astype(np.float32).astype(np.float64), x)  # float32 would lose bits
    out = OmRunner(load_om(om, trust=True)).run({"x": x})
    assert out["t"].dtype == np.float64 and out["u"].dtype == np.float64
    np.testing.assert_array_equal(out["t"], 3.0 * x)
    np.testing.assert_array_equal(out["u"], 0.1 * w)


def test_float64_input_of_another_dtype_is_refused(f64_opp, tmp_path):
    from opbuild.om.errors import OmError

    om = build_om(load_model(_model(tmp_path, "static", [2, 2], np.ones((2, 2)))), f64_opp)
    with pytest.raises(OmError, match="dtype float32, the model wants float64"):
        OmRunner(load_om(om, trust=True)).run({"x": np.ones((2, 2), np.float32)})


def test_float64_single_op(f64_opp):
    from opbuild.om.single_op import build_single_op

    om = build_single_op("ScaleF64Custom", ["x=float64[4,5]"], ["scale=0.5"], f64_opp)
    x = np.arange(20, dtype=np.float64).reshape(4, 5) / 7
    np.testing.assert_array_equal(OmRunner(load_om(om, trust=True)).run({"x": x})["y"], 0.5 * x)
