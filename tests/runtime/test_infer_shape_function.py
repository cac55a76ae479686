"""`shape: {function: <symbol>}`: the one-shot wrapper asks the op's C infer-shape function for
the output shape (a real scaffolded op, a real tiling library)."""

from __future__ import annotations

import numpy as np
import pytest

import opbuild.runtime as rt
from opbuild.codegen.scaffold import scaffold_op

import pkgbuild

pytestmark = pytest.mark.slow  # builds its own package with `scons ops`

INFER = """
/* Output y: x's shape, flattened to 1-D when the attribute scale is negative (to prove the
 * function, not a same_as rule, decides); fails on rank 0. */
OPBUILD_API uint32_t shaped_custom_infer(TilingContext *ctx, uint32_t output_index, int64_t *dims, uint32_t *dim_num) {
    const OpbuildTensorDesc *x = tiling_input(ctx, 0);
    if (output_index != 0 || x == NULL) return tiling_fail(ctx, "ShapedCustom: bad infer-shape call");
    if (x->dim_num == 0) return tiling_fail(ctx, "ShapedCustom: x must have rank >= 1");
    if (tiling_attr_float(ctx, 0) < 0) {
        dims[0] = tiling_shape_size(x);
        *dim_num = 1;
        return OPBUILD_GRAPH_SUCCESS;
    }
    for (uint32_t i = 0; i < x->dim_num; ++i) dims[i] = x->dims[i];
    *dim_num = x->dim_num;
    return OPBUILD_GRAPH_SUCCESS;
}
"""


@pytest.fixture(scope="module")
def shaped_package(tmp_path_factory):
    root = pkgbuild.new_project(tmp_path_factory.mktemp("shaped_project"), ops=())
    op_dir = scaffold_op("ShapedCustom", root / "ops")
    spec = op_dir / "op.yaml"
    text = spec.read_text()
    assert "shape: {same_as: x}" in text, "the scaffold's op.yaml changed; update this test"
    spec.write_text(text.replace("shape: {same_as: x}", "shape: {function: shaped_custom_infer}"))
    (op_dir / "tiling.c").write_text((op_dir / "tiling.c").read_text() + INFER)
    try:
        return pkgbuild.build_project(root)
    except RuntimeError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="module")
def shaped_ops(shaped_package):
    return rt.import_ops(shaped_package)


def test_one_shot_uses_the_c_infer_shape_function(shaped_ops):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(shaped_ops.shaped_custom(x, scale=2.0), 2 * x)


def test_the_function_decides_the_shape(shaped_ops):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    with pytest.raises(rt.AclnnError):  # the tiling checks y's shape against x's: a flat y is refused
        shaped_ops.shaped_custom(x, scale=-1.0)
    y = np.empty(6, np.float32)
    with pytest.raises(rt.AclnnError):
        shaped_ops.aclnnShapedCustomGetWorkspaceSize(x, -1.0, y)


def test_infer_shape_failure_is_an_inner_error(shaped_ops):
    with pytest.raises(rt.AclnnError) as err:
        shaped_ops.shaped_custom(np.array(1.0, np.float32), scale=2.0)
    assert err.value.status == rt.ACLNN_ERR_INNER
    assert "shaped_custom_infer failed: ShapedCustom: x must have rank >= 1" in err.value.message


def test_op_proto_wraps_the_function(shaped_package):
    """The package's op_proto library links the tiling source's function and calls it."""
    from opbuild.runtime.host.c_callbacks import TilingLibrary
    from opbuild.runtime.host.op_proto import infer_outputs
    from opbuild.abi import package_layout as layout

    op = rt.import_ops(shaped_package)._OPS["ShapedCustom"]
    lib = TilingLibrary(shaped_package / layout.op_proto_lib())
    x = [[("float32", "ND", (2, 3), None)]]
    kw = {"soc": "ascend910b", "core_num": 40, "ub_size": 196608}
    assert infer_outputs(lib, op.spec, x, [-1.0], **kw) == [((6,), "float32")]
    assert infer_outputs(lib, op.spec, x, [2.0], **kw) == [((2, 3), "float32")]


def test_om_builder_takes_the_shape_from_op_proto(shaped_package):
    """A static .om of the op: its node's output shape is what the C function says (through the
    package's op_proto library: opbuild has no other implementation of the rules)."""
    from opbuild.om.loader import load_om
    from opbuild.om.run import OmRunner
    from opbuild.om.single_op import build_single_op

    opp = shaped_package.parent.parent
    data = build_single_op("ShapedCustom", ["x=float32[3,4]"], ["scale=2.0"], opp)
    model = load_om(data, trust=True)
    node = model.model_def["nodes"][0]
    assert node["output_shapes"] == [[3, 4]] and node["output_dtypes"] == ["float32"]
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = OmRunner(model).run({"x": x})
    np.testing.assert_array_equal(next(iter(out.values())), 2 * x)
