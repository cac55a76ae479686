"""The consistency check between a key rule and the declared binaries."""

from __future__ import annotations

import pytest

from opbuild.keys import attr_samples, check_key_consistency, make_fragment_fn
from opbuild.spec.model import Binary, KeyRule
from opbuild_spec_factory import SAMPLES, make_spec, sample_spec, when


def _c_stand_in(spec):
    """AddN's C callback, simulated: the fragment from the first list element's dtype."""
    table = {b.choice("x").dtype: b.key for b in spec.binaries}

    def gen(ctx):
        return table[ctx.input_dtype(0)]

    return gen


@pytest.mark.parametrize("name", SAMPLES)
def test_samples_pass(name):
    spec = sample_spec(name)
    c = _c_stand_in(spec) if spec.key_rule.callback == "c" else None
    assert check_key_consistency(spec, make_fragment_fn(spec, c)) == []


def _table_spec(binaries, **kw):
    return make_spec("AddCustomTemplate", key_rule=KeyRule("customized", "table"), binaries=binaries, **kw)


def test_missing_binary_is_a_miss():
    spec = _table_spec([Binary("AddCustomTemplate_FP16", when(x="float16", y="float16", z="float16"), key="custom_fp16")])
    msgs = check_key_consistency(spec, make_fragment_fn(spec))
    # the fp32 column finds no table entry: one message per d and p
    assert len(msgs) == 4
    assert all("x=float32/ND, y=float32/ND, z=float32/ND" in m for m in msgs)
    assert any("d=1, p=0" in m for m in msgs)


def test_wrong_callback_key_and_unreachable_binary():
    spec = make_spec(
        "AddCustomTemplate", key_rule=KeyRule("customized", "python", py_module="k", py_function="f"),
        binaries=[Binary("AddCustomTemplate_FP16", when(x="float16", y="float16", z="float16"), key="custom_fp16"),
                  Binary("AddCustomTemplate_FP32", when(x="float32", y="float32", z="float32"), key="custom_fp32")],
    )

    def typo(ctx):
        return {"float16": "custom_fp16", "float32": "custom_f32"}[ctx.input_dtype(0)]

    msgs = check_key_consistency(spec, typo)
    assert ("AddCustomTemplate: a call with x=float32/ND, y=float32/ND, z=float32/ND, d=0, p=1 gives key "
            "'AddCustomTemplate/d=0,p=1/custom_f32' which no binary has") in msgs
    unreachable = [m for m in msgs if "reached by no declared combination" in m]
    assert len(unreachable) == 1
    assert unreachable[0].startswith("AddCustomTemplate: binary AddCustomTemplate_FP32 (keys "
                                     "AddCustomTemplate/d=0,p=1/custom_fp32, ")
    assert len(msgs) == 5  # 4 misses (d x p) + 1 unreachable


def test_callback_only_reading_first_input_misses_mixed_column():
    # the seeds' warning: a rule that reads only x sends the mixed fp16 x fp32 call to the fp16 binary
    spec = sample_spec("mul_custom")
    spec = make_spec("MulCustom", inputs=[("x", list(spec.inputs[0].dtypes)), ("y", list(spec.inputs[1].dtypes))],
                     outputs=[("z", list(spec.outputs[0].dtypes))],
                     key_rule=KeyRule("customized", "python", py_module="k", py_function="f"),
                     binaries=[Binary(b.name, b.when, key=b.name.lower()) for b in spec.binaries])

    def first_only(ctx):
        return {"float16": "mulcustom_fp16", "float32": "mulcustom_fp32", "int32": "mulcustom_int32"}[ctx.input_dtype(0)]

    msgs = check_key_consistency(spec, first_only)
    assert any("binary MulCustom_FP16_FP32" in m and "reached by no" in m for m in msgs)


def test_raising_callback_and_invalid_fragment_are_reported():
    spec = _table_spec([Binary("A", when(x="float16", y="float16", z="float16"), key="a"),
                        Binary("B", when(x="float32", y="float32", z="float32"), key="b")])

    def gen(ctx):
        if ctx.input_dtype(0) == "float32":
            raise RuntimeError("boom")
        return "a b"

    msgs = check_key_consistency(spec, gen)
    assert any("GenSimplifiedKey failed for a call with x=float32/ND" in m and "RuntimeError: boom" in m for m in msgs)
    assert any("invalid fragment" in m and "whitespace" in m for m in msgs)


def test_deterministic_only_binary_is_a_miss_for_d0():
    spec = make_spec("Det", inputs=[("x", ["float32"])], outputs=[("y", ["float32"])],
                     binaries=[Binary("Det_FP32", when(x="float32", y="float32"), deterministic="true")])
    msgs = check_key_consistency(spec, make_fragment_fn(spec))
    assert msgs and all("d=0" in m and "which no binary has" in m for m in msgs)


def test_duplicate_keys_reported():
    spec = _table_spec([Binary("A", when(x="float16", y="float16", z="float16"), key="same"),
                        Binary("B", when(x="float32", y="float32", z="float32"), key="same")])
    msgs = check_key_consistency(spec, make_fragment_fn(spec))
    assert any("belongs to several binaries: A, B" in m for m in msgs)


def test_attr_samples():
    spec = sample_spec("leaky_relu_custom")
    assert attr_samples(spec, spec.attrs[0]) == [0.01, 0.0, 1.51]
    rs = sample_spec("reduce_sum_custom")
    assert [list(v) if isinstance(v, tuple) else v for v in attr_samples(rs, rs.attrs[0])] == [[]]
    assert attr_samples(rs, rs.attrs[1]) == [False, True]
    ispec = make_spec("I", attrs=[("n", "int", 2)],
                      binaries=[Binary("B", when(x="float16", y="float16", z="float16"), (("n", 7),))])
    assert attr_samples(ispec, ispec.attrs[0]) == [2, 7, 8]


def test_attr_rule_that_ignores_the_attr_leaves_binary_unreachable():
    spec = sample_spec("leaky_relu_custom")

    def no_relu(ctx):
        return "leaky_" + {"float16": "fp16", "float32": "fp32", "bfloat16": "bf16"}[ctx.input_dtype(0)]

    msgs = check_key_consistency(spec, no_relu)
    assert sorted(m.split(" (keys")[0] for m in msgs) == [
        "LeakyReluCustom: binary LeakyReluCustom_Relu_BF16",
        "LeakyReluCustom: binary LeakyReluCustom_Relu_FP16",
        "LeakyReluCustom: binary LeakyReluCustom_Relu_FP32",
    ]


def test_optional_input_cannot_split_default_mode_binaries():
    """A default-mode key has no group for an optional input, so two binaries that differ only in
    it share every key: the check reports the conflict (a table rule can tell them apart)."""
    spec = make_spec(
        "Opt", inputs=[("x", ["float32"]), ("bias", ["float32"], "optional")], outputs=[("y", ["float32"])],
        binaries=[Binary("WithBias", when(x="float32", bias="float32", y="float32")),
                  Binary("NoBias", when(x="float32", y="float32"))],
    )
    msgs = check_key_consistency(spec, make_fragment_fn(spec))
    assert "Opt: key 'Opt/d=0,p=1/0,2/0,2' belongs to several binaries: WithBias, NoBias" in msgs
    one = make_spec(
        "Opt", inputs=[("x", ["float32"]), ("bias", ["float32"], "optional")], outputs=[("y", ["float32"])],
        binaries=[Binary("Any", when(x="float32", y="float32"))],
    )
    assert check_key_consistency(one, make_fragment_fn(one)) == []


def test_add_n_real_c_callback(tmp_path):
    """AddN's real C GenSimplifiedKey, compiled from ops/add_n_custom/tiling.c and called through
    the ABI's ctypes wrapper (skipped while either is not there)."""
    import shutil
    import subprocess

    c_callbacks = pytest.importorskip("opbuild.runtime.host.c_callbacks")
    from opbuild_spec_factory import REPO

    spec = sample_spec("add_n_custom")
    src = REPO / "ops" / "add_n_custom" / spec.tiling.source
    if not src.exists() or shutil.which("gcc") is None:
        pytest.skip("needs ops/add_n_custom/tiling.c and gcc")
    from opbuild.codegen import render_tiling_header, tiling_header_name

    (tmp_path / tiling_header_name(spec)).write_text(render_tiling_header(spec))
    lib = tmp_path / "libtiling.so"
    r = subprocess.run(["gcc", "-std=gnu11", "-Wall", "-O1", "-fPIC", "-shared", "-fvisibility=hidden",
                        f"-I{REPO / 'opbuild/runtime/native/include'}", f"-I{tmp_path}", f"-I{src.parent}", str(src),
                        "-o", str(lib)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    import inspect

    third = list(inspect.signature(c_callbacks.CKeyCallback).parameters)[2]
    callback = c_callbacks.CKeyCallback(c_callbacks.TilingLibrary(lib), spec.key_rule.c_symbol,
                                        spec if third == "spec" else spec.op)
    fn = make_fragment_fn(spec, c_callback=callback)
    assert check_key_consistency(spec, fn) == []
