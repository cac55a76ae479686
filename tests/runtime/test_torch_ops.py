"""The sample packages' ops as torch.ops.<vendor>.<op_snake> (the optional torch extra): results
equal to torch's own ops, torch.compile(fullgraph=True) without graph breaks, the runtime's errors."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from opbuild.runtime.errors import AclnnError  # noqa: E402
from opbuild.runtime.torch_ops import namespace_of, schema  # noqa: E402


@pytest.fixture(scope="module")
def tops(ops, builtin_ops):
    """torch.ops.customize (the custom package) and torch.ops.built_in, registered once."""
    assert ops.register_torch() is ops.register_torch()  # registering again is a no-op
    builtin_ops.register_torch()
    return torch.ops.customize, torch.ops.built_in


def test_schemas_come_from_the_specs(ops, builtin_ops):
    assert schema(ops._OPS["AddCustomTemplate"].spec) == "(Tensor x, Tensor y) -> Tensor"
    assert schema(ops._OPS["AddNCustom"].spec) == "(Tensor[] x) -> Tensor"
    assert schema(builtin_ops._OPS["ReduceSumCustom"].spec) == "(Tensor x, int[] axes=[], bool keep_dims=False) -> Tensor"
    assert schema(builtin_ops._OPS["LeakyReluCustom"].spec) == "(Tensor x, float negative_slope=0.01) -> Tensor"
    assert namespace_of(ops._OPS["AddCustomTemplate"].package) == "customize"


def test_results_equal_torch(tops):
    custom, builtin = tops
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(4, 33, generator=g), torch.randn(4, 33, generator=g)
    assert torch.equal(custom.add_custom_template(x, y), x + y)
    assert torch.equal(custom.add_custom_template(x.half(), y.half()), x.half() + y.half())
    assert torch.equal(custom.mul_custom(x, y[:1]), x * y[:1])  # broadcasting
    assert torch.equal(custom.add_n_custom([x, y, x]), x + y + x)
    torch.testing.assert_close(builtin.leaky_relu_custom(x, negative_slope=0.3),
                               torch.nn.functional.leaky_relu(x, 0.3))
    torch.testing.assert_close(builtin.leaky_relu_custom(x.bfloat16()), torch.nn.functional.leaky_relu(x.bfloat16()))
    torch.testing.assert_close(builtin.reduce_sum_custom(x, [1], True), x.sum(1, keepdim=True))
    out = custom.add_custom_template(x[:, ::2], y[:, ::2])  # strided views go in as they are
    assert out.dtype == torch.float32 and torch.equal(out, x[:, ::2] + y[:, ::2])


def test_tensors_are_shared_not_copied(tops):
    from opbuild.runtime.torch_ops import _to_numpy, _to_torch

    for dtype in (torch.float32, torch.bfloat16):
        t = torch.ones(3, 5, dtype=dtype)
        a = _to_numpy(torch, t, "t")
        assert a.__array_interface__["data"][0] == t.data_ptr()
        assert _to_torch(torch, a).data_ptr() == t.data_ptr()


def _f(a, b):
    custom, builtin = torch.ops.customize, torch.ops.built_in
    t = custom.mul_custom(custom.add_custom_template(a, b), b)
    return builtin.reduce_sum_custom(builtin.leaky_relu_custom(t + 1.0, negative_slope=0.1), [1], False)


def test_compile_traces_without_graph_breaks(tops):
    x, y = torch.randn(8, 16), torch.randn(8, 16)
    explained = torch._dynamo.explain(_f)(x, y)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    compiled = torch.compile(_f, fullgraph=True, backend="aot_eager")  # aot_eager runs the fake kernels too
    want = torch.nn.functional.leaky_relu((x + y) * y + 1.0, 0.1).sum(1)
    torch.testing.assert_close(compiled(x, y), want)
    torch.testing.assert_close(compiled(x[:3], y[:3]), want[:3])


def test_unsupported_dtype_raises_the_runtime_error(tops):
    custom, _ = tops
    x = torch.ones(2, 3, dtype=torch.float64)
    with pytest.raises(AclnnError, match="AddCustomTemplate: no declared dtype combination has x=float64"):
        custom.add_custom_template(x, x)
    # traced: the fake kernel raises it; dynamo wraps it, the runtime's error is the cause
    with pytest.raises(Exception, match="AddCustomTemplate: no declared dtype combination has x=float64") as exc:
        torch.compile(lambda a: custom.add_custom_template(a, a), fullgraph=True, backend="aot_eager")(x)
    causes = [exc.value]
    while (causes[-1].__cause__ or causes[-1].__context__) is not None:
        causes.append(causes[-1].__cause__ or causes[-1].__context__)
    assert any(isinstance(c, AclnnError) for c in causes)
    with pytest.raises(AclnnError, match="ReduceSumCustom: axis 5 is out of range for rank 2"):
        tops[1].reduce_sum_custom(torch.ones(2, 3), [5])


def test_a_tensor_numpy_cannot_view_is_a_161002(tops):
    """An expanded view of more than 2^63 bytes (2^62 float32 elements, stride 0): the runtime's
    161002 naming the input (before, numpy's raw ValueError)."""
    custom, _ = tops
    huge = torch.zeros(1).expand(2 ** 60, 4)
    with pytest.raises(AclnnError, match=r"AddCustomTemplate input 'x': a tensor of shape \[1152921504606846976, 4\] "
                                         r"\(torch.float32\) has no numpy view") as exc:
        custom.add_custom_template(huge, huge)
    assert exc.value.status == 161002


def test_shapes_the_tiling_function_rejects_are_a_161002(tops, ops):
    """AddCustomTemplate's tiling returns OPBUILD_GRAPH_PARAM_INVALID for shapes that differ: the
    caller's error, 161002, through torch as through the runtime (before, 561000 as for an
    internal failure)."""
    custom, _ = tops
    for call in (lambda: custom.add_custom_template(torch.ones(2, 3), torch.ones(3, 2)),
                 lambda: ops.add_custom_template(np.ones((2, 3), np.float32), np.ones(3, np.float32))):
        with pytest.raises(AclnnError, match=r"tiling function add_custom_template_tiling rejected the call: "
                                             r"AddCustomTemplate: shapes differ") as exc:
            call()
        assert exc.value.status == 161002


def test_the_runtime_cache_serves_repeated_calls(tops):
    custom, _ = tops
    x = torch.arange(6, dtype=torch.float32)
    for _ in range(3):
        assert torch.equal(custom.add_custom_template(x, x), x * 2)
    np.testing.assert_array_equal(custom.mul_custom(x, x).numpy(), (x * x).numpy())


def test_ai_cpu_ops_eager_and_fake(tops):
    """AI CPU ops through torch: eager results equal torch's; under fake tensors a data-dependent
    output has unbacked sizes (its real shape is known only after the run), as torch.nonzero's."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    custom, _ = tops
    x = torch.tensor([[0.0, 1.5, 0.0], [2.0, 0.0, -3.0]])
    assert torch.equal(custom.non_zero_custom(x), torch.nonzero(x).T)
    assert custom.non_zero_custom(torch.zeros(0)).shape == (1, 0)
    values, indices = custom.sort_custom(x, descending=True)
    want = torch.sort(x, stable=True, dim=-1, descending=True)
    assert torch.equal(values, want.values) and torch.equal(indices, want.indices)
    with FakeTensorMode(shape_env=ShapeEnv()) as mode:
        y = custom.non_zero_custom(mode.from_tensor(x))
        assert y.dtype == torch.int64 and y.dim() == 2
        assert all(isinstance(d, torch.SymInt) for d in y.shape)
        v, i = custom.sort_custom(mode.from_tensor(x))
        assert tuple(v.shape) == (2, 3) and i.dtype == torch.int64


def test_a_backward_through_an_op_is_an_error_naming_it(tops):
    """torch alone would warn and leave x.grad None (a silently wrong training step)."""
    custom, builtin = tops
    x = torch.ones(4, requires_grad=True)
    y = torch.ones(4)
    loss = (custom.add_custom_template(x, y) * 2).sum()
    with pytest.raises(RuntimeError) as err:
        loss.backward()
    assert str(err.value) == ("customize::add_custom_template (AddCustomTemplate) has no backward: opbuild ops are "
                              "forward-only, so no gradient flows through it. Call it under torch.no_grad(), or on "
                              "detached inputs, when no gradient is needed")
    with torch.no_grad():  # the forward runs as before
        assert torch.equal(custom.add_custom_template(x, y), torch.full((4,), 2.0))
    z = builtin.leaky_relu_custom(-x.detach())
    assert not z.requires_grad and torch.equal(z, torch.full((4,), -0.01))
