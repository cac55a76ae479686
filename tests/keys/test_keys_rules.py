"""Key rules: binary keys, KeyContext, the table rule, Python callbacks, default tails."""

from __future__ import annotations

import os

import pytest

from opbuild.keys import (
    KeyContext,
    KeyRuleError,
    binary_full_keys,
    context_for_choices,
    default_tail,
    full_key_of,
    load_python_callback,
    make_fragment_fn,
    table_fragment,
)
from opbuild.spec.model import Binary, KeyRule, TensorChoice
from opbuild_spec_factory import make_spec, sample_spec, when

F16, F32 = TensorChoice("float16", "ND"), TensorChoice("float32", "ND")


def ctx_of(spec, attrs=None, d=0, p=1, **tensors):
    return context_for_choices(spec, {k: TensorChoice(*v.split("/")) for k, v in tensors.items()}, attrs, d, p,
                               "ascend910b")


# ---- the seeds' table 1 and the samples ----------------------------------------------------

def test_add_custom_template_table1():
    spec = sample_spec("add_custom_template")
    fp16, fp32 = spec.binaries
    assert "AddCustomTemplate/d=0,p=1/custom_fp16" in binary_full_keys(spec, fp16)
    assert "AddCustomTemplate/d=0,p=1/custom_fp32" in binary_full_keys(spec, fp32)
    fn = make_fragment_fn(spec)
    ctx = ctx_of(spec, x="float16", y="float16", z="float16")
    assert full_key_of(spec, ctx, fn) == "AddCustomTemplate/d=0,p=1/custom_fp16"
    ctx = ctx_of(spec, x="float32", y="float32", z="float32")
    assert full_key_of(spec, ctx, fn) == "AddCustomTemplate/d=0,p=1/custom_fp32"


def test_key_order_d_then_p():
    """asc_opc's order (opbase's QuantBatchMatmulV3 mock): d=0,p=1; d=0,p=0; d=1,p=1; d=1,p=0."""
    spec = sample_spec("add_custom_template")
    assert binary_full_keys(spec, spec.binaries[0]) == [
        "AddCustomTemplate/d=0,p=1/custom_fp16",
        "AddCustomTemplate/d=0,p=0/custom_fp16",
        "AddCustomTemplate/d=1,p=1/custom_fp16",
        "AddCustomTemplate/d=1,p=0/custom_fp16",
    ]


def test_mul_custom_default_mode_keys():
    spec = sample_spec("mul_custom")
    keys = {b.name: binary_full_keys(spec, b) for b in spec.binaries}
    assert "MulCustom/d=0,p=1/1,2/0,2/0,2" in keys["MulCustom_FP16_FP32"]
    assert "MulCustom/d=0,p=1/1,2/1,2/1,2" in keys["MulCustom_FP16"]
    assert "MulCustom/d=1,p=0/3,2/3,2/3,2" in keys["MulCustom_INT32"]
    fn = make_fragment_fn(spec)
    ctx = ctx_of(spec, x="float16", y="float32", z="float32")
    assert full_key_of(spec, ctx, fn) == "MulCustom/d=0,p=1/1,2/0,2/0,2"


def test_reduce_sum_det_binary_only_d1():
    spec = sample_spec("reduce_sum_custom")
    for b in spec.binaries:
        keys = binary_full_keys(spec, b)
        want = "d=1" if b.name.endswith("_Det") else "d=0"
        assert keys and all(f"/{want}," in k for k in keys), (b.name, keys)


def test_add_n_keys_and_dynamic_context():
    spec = sample_spec("add_n_custom")
    assert binary_full_keys(spec, spec.binaries[0])[0] == "AddNCustom/d=0,p=1/diy,addn,1"
    ctx = context_for_choices(spec, {"x": F16, "y": F16}, list_len=3)
    assert ctx.input_count(0) == 3 and ctx.input_dtype(0, 2) == "float16"
    assert default_tail(spec, ctx) == "1,2/1,2"  # a list counts once
    with pytest.raises(KeyRuleError, match="c_callback"):
        make_fragment_fn(spec)
    frag = make_fragment_fn(spec, c_callback=lambda c: "diy,addn,1")
    assert frag(ctx) == "diy,addn,1"
    bad = make_fragment_fn(spec, c_callback=lambda c: "")
    with pytest.raises(KeyRuleError, match="add_n_custom_gen_simplified_key.*empty"):
        bad(ctx)


def test_leaky_relu_python_callback():
    spec = sample_spec("leaky_relu_custom")
    fn = make_fragment_fn(spec)
    assert fn(ctx_of(spec, {"negative_slope": 0.01}, x="float16", y="float16")) == "leaky_fp16"
    assert fn(ctx_of(spec, {"negative_slope": 0.0}, x="bfloat16", y="bfloat16")) == "relu_bf16"
    with pytest.raises(KeyRuleError, match=r"key_rule.py:gen_simplified_key raised ValueError.*int32"):
        fn(ctx_of(spec, {"negative_slope": 0.0}, x="int32", y="int32"))


# ---- the table rule --------------------------------------------------------------------------

def _leaky_table_spec():
    return make_spec(
        "Leaky", inputs=[("x", ["float16", "float32"])], outputs=[("y", ["float16", "float32"])],
        attrs=[("slope", "float", 0.01)], key_rule=KeyRule("customized", "table"),
        binaries=[
            Binary("L16", when(x="float16", y="float16"), key="l16"),
            Binary("R16", when(x="float16", y="float16"), (("slope", 0.0),), key="r16"),
            Binary("L32", when(x="float32", y="float32"), key="l32"),
        ],
    )


def test_table_prefers_more_attr_conditions():
    spec = _leaky_table_spec()
    assert table_fragment(spec, ctx_of(spec, {"slope": 0.0}, x="float16", y="float16")) == "r16"
    assert table_fragment(spec, ctx_of(spec, {"slope": 0.5}, x="float16", y="float16")) == "l16"
    assert table_fragment(spec, ctx_of(spec, {"slope": 0.0}, x="float32", y="float32")) == "l32"
    # attributes not given take their default
    assert table_fragment(spec, context_for_choices(spec, {"x": F16, "y": F16})) == "l16"


def test_table_no_entry_names_the_call():
    spec = _leaky_table_spec()
    with pytest.raises(KeyRuleError) as e:
        table_fragment(spec, ctx_of(spec, {"slope": 0.5}, x="float16", y="float32"))
    msg = str(e.value)
    assert "Leaky" in msg and "x=float16/ND, y=float32/ND, slope=0.5, d=0, p=1" in msg
    assert "l16 (x=float16, y=float16)" in msg and "r16 (x=float16, y=float16, slope=0.0)" in msg


def test_table_pinned_formats_and_determinism():
    spec = make_spec(
        "Fmt", inputs=[("x", ["float16", "float16"], "required", ["ND", "NCHW"])],
        outputs=[("y", ["float16", "float16"], "required", ["ND", "NCHW"])],
        key_rule=KeyRule("customized", "table"),
        binaries=[
            Binary("ND", when(x="float16/ND", y="float16/ND"), key="nd"),
            Binary("NCHW_DET", when(x="float16/NCHW", y="float16/NCHW"), key="nchw_det", deterministic="true"),
            Binary("NCHW", when(x="float16/NCHW", y="float16/NCHW"), key="nchw", deterministic="false"),
        ],
    )
    assert table_fragment(spec, ctx_of(spec, x="float16/ND", y="float16/ND")) == "nd"
    assert table_fragment(spec, ctx_of(spec, d=1, x="float16/NCHW", y="float16/NCHW")) == "nchw_det"
    assert table_fragment(spec, ctx_of(spec, d=0, x="float16/NCHW", y="float16/NCHW")) == "nchw"


def test_default_mode_formats_from_columns():
    spec = make_spec(
        "Fmt", inputs=[("x", ["float16", "float16"], "required", ["ND", "NCHW"])],
        outputs=[("y", ["float16"], "required", ["ND", "NCHW"])],
        binaries=[Binary("Any", when(x="float16", y="float16"), impl_modes=("default",), deterministic="false"),
                  Binary("Pinned", when(x="float16/NCHW", y="float16/NCHW"), impl_modes=("high_precision",))],
    )
    assert binary_full_keys(spec, spec.binaries[0]) == ["Fmt/d=0,p=0/1,2/1,2", "Fmt/d=0,p=0/1,0/1,0"]
    assert binary_full_keys(spec, spec.binaries[1]) == ["Fmt/d=0,p=2/1,0/1,0", "Fmt/d=1,p=2/1,0/1,0"]


def test_optional_input_has_no_group():
    """nnopbase leaves optional parameters out of a default-mode key, present or absent."""
    spec = make_spec(
        "Opt", inputs=[("x", ["float32"]), ("bias", ["float32"], "optional")], outputs=[("y", ["float32"])],
        binaries=[Binary("Any", when(x="float32", y="float32"))],
    )
    assert binary_full_keys(spec, spec.binaries[0])[0] == "Opt/d=0,p=1/0,2/0,2"
    absent = context_for_choices(spec, {"x": F32, "y": F32})
    present = context_for_choices(spec, {"x": F32, "bias": F16, "y": F32})
    assert absent.input_count(1) == 0 and absent.input_dtype(1) is None
    assert default_tail(spec, absent) == default_tail(spec, present) == "0,2/0,2"


# ---- KeyContext ------------------------------------------------------------------------------

def test_key_context_accessors():
    ctx = KeyContext(
        [[("float16", "ND", (2, 3))], [], [("int32", "ND", (4,)), ("int32", "ND", (5,))]],
        [[("float32", "NCHW", (1, 2, 3, 4))]],
        {"alpha": 1.5}, deterministic=True, impl_mode=2, soc="ascend910b",
    )
    assert ctx.input_dtype(0) == "float16" and ctx.input_format(0) == "ND" and ctx.input_shape(0) == (2, 3)
    assert ctx.input_count(1) == 0 and ctx.input_dtype(1) is None and ctx.input_shape(1) is None
    assert ctx.input_count(2) == 2 and ctx.input_shape(2, 1) == (5,)
    assert ctx.output_dtype(0) == "float32" and ctx.output_format(0) == "NCHW"
    assert ctx.attr("alpha") == 1.5
    assert (ctx.deterministic, ctx.impl_mode, ctx.soc) == (1, 2, "ascend910b")
    with pytest.raises(KeyError, match="alpha"):
        ctx.attr("beta")
    with pytest.raises(IndexError, match="3 inputs"):
        ctx.input_dtype(3)
    with pytest.raises(AttributeError):
        ctx.extra = 1  # slots: no stray attributes
    assert ctx.inputs[2][1] == ("int32", "ND", (5,)) and ctx.outputs[0][0][1] == "NCHW"
    assert ctx.typed_attrs() == [("float", 1.5)]


def test_typed_attrs():
    spec = make_spec("T", attrs=[("slope", "float", 0.5), ("axes", "list_int", ()), ("k", "bool", False),
                                 ("name", "str", "a"), ("n", "int", 3)])
    ctx = context_for_choices(spec, {}, {"slope": 0})
    assert ctx.typed_attrs() == [("float", 0), ("list_int", ()), ("bool", False), ("str", "a"), ("int", 3)]
    bare = KeyContext([], [], {"a": 0.5, "b": [1, 2], "c": [True], "d": [0.5], "e": True, "f": "s", "g": 2})
    assert [t for t, _ in bare.typed_attrs()] == ["float", "list_int", "list_bool", "list_float", "bool", "str", "int"]


# ---- Python callbacks ------------------------------------------------------------------------

def _py_spec(tmp_path, body, module="rule", function="gen"):
    op_dir = tmp_path / "py_op"
    op_dir.mkdir(exist_ok=True)
    if body is not None:
        (op_dir / f"{module}.py").write_text(body)
    return make_spec(
        "PyOp", inputs=[("x", ["float16"])], outputs=[("y", ["float16"])], op_dir=op_dir,
        key_rule=KeyRule("customized", "python", py_module=module, py_function=function),
        binaries=[Binary("B", when(x="float16", y="float16"), key="k1")],
    )


def test_python_callback_errors(tmp_path):
    with pytest.raises(KeyRuleError, match=r"PyOp.*rule.py:gen.*cannot read"):
        load_python_callback(_py_spec(tmp_path, None))
    with pytest.raises(KeyRuleError, match=r"defines no function 'gen'"):
        load_python_callback(_py_spec(tmp_path, "def other(ctx):\n    return 'k1'\n"))
    with pytest.raises(KeyRuleError, match=r"'gen' is not callable"):
        load_python_callback(_py_spec(tmp_path, "gen = 3\n", module="rule2"))
    with pytest.raises(KeyRuleError, match=r"importing .*rule3.py failed: ZeroDivisionError"):
        load_python_callback(_py_spec(tmp_path, "1/0\n", module="rule3"))
    spec = _py_spec(tmp_path, "def gen(ctx):\n    return 'has space'\n", module="rule4")
    with pytest.raises(KeyRuleError, match="invalid fragment.*whitespace"):
        make_fragment_fn(spec)(context_for_choices(spec, {"x": TensorChoice("float16"), "y": TensorChoice("float16")}))


def test_python_callback_cached_and_reloaded(tmp_path):
    spec = _py_spec(tmp_path, "def gen(ctx):\n    return 'k1'\n")
    f1 = load_python_callback(spec)
    assert load_python_callback(spec) is f1
    path = spec.op_dir / "rule.py"
    path.write_text("def gen(ctx):\n    return 'k2'\n")
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    f2 = load_python_callback(spec)
    assert f2 is not f1 and f2(None) == "k2"


def test_python_callback_modules_do_not_clash(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = _py_spec(tmp_path / "a", "def gen(ctx):\n    return 'from_a'\n")
    b = _py_spec(tmp_path / "b", "def gen(ctx):\n    return 'from_b'\n")
    assert load_python_callback(a)(None) == "from_a"
    assert load_python_callback(b)(None) == "from_b"
    assert load_python_callback(a).__module__ != load_python_callback(b).__module__
    assert load_python_callback(a).__module__.startswith("opbuild_keyrule_py_op_")


def test_table_fn_answers_the_table_key():
    spec = make_spec("T", inputs=[("x", ["float16"])], outputs=[("y", ["float16"])],
                     key_rule=KeyRule("customized", "table"),
                     binaries=[Binary("B", when(x="float16", y="float16"), key="k")])
    fn = make_fragment_fn(spec)
    ctx = context_for_choices(spec, {"x": F16, "y": F16})
    assert fn(ctx) == "k"  # its cost per call: bench/micro_bench.py
