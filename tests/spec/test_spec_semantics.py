"""One failing spec per semantic check: the message and where it points."""

from __future__ import annotations

import pytest

from opbuild.spec import SpecError, load_spec
from spec_helpers import BASE_SPEC, TILING_C, where, write_op

CUSTOMIZED = BASE_SPEC.replace(
    "binaries:\n  - {name: TestOp_FP16, when: {x: float16, y: float16}}\n  - {name: TestOp_FP32, when: {x: float32, y: float32}}\n",
    "simplified_key: {mode: customized, callback: table}\n"
    "binaries:\n  - {name: TestOp_FP16, when: {x: float16, y: float16}, key: k16}\n"
    "  - {name: TestOp_FP32, when: {x: float32, y: float32}, key: k32}\n",
)


def edit(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


def only_problem(tmp_path, text, **kw):
    path = write_op(tmp_path, text, **kw)
    with pytest.raises(SpecError) as exc:
        load_spec(path)
    problems = exc.value.problems
    assert len(problems) == 1, "\n".join(map(str, problems))
    return problems[0]


def at(problem, text, needle, nth=1):
    assert (problem.line, problem.col) == where(text, needle, nth), str(problem)


def test_base_specs_are_valid(tmp_path):
    spec = load_spec(write_op(tmp_path / "a", BASE_SPEC))
    assert spec.key_rule.mode == "default" and [b.key for b in spec.binaries] == [None, None]
    spec = load_spec(write_op(tmp_path / "b", CUSTOMIZED))
    assert spec.key_rule.callback == "table" and [b.key for b in spec.binaries] == ["k16", "k32"]


# ~~~ names ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~

def test_output_reuses_input_name(tmp_path):
    text = edit(BASE_SPEC, "  - name: y\n", "  - name: x\n")
    text = text.replace("y: float16", "").replace("y: float32", "").replace(", }", "}")
    p = only_problem(tmp_path, text)
    assert "duplicate name 'x': input 'x' at line 4 has it already" in p.message
    assert "share one namespace" in p.message and p.json_path == "$.outputs[0].name"
    at(p, text, "x\n", 3)


def test_attr_reuses_tensor_name(tmp_path):
    text = BASE_SPEC + "attrs:\n  - {name: y, type: int, default: 1}\n"
    p = only_problem(tmp_path, text)
    assert p.message.startswith("duplicate name 'y': output 'y'")
    at(p, text, "y, type")


@pytest.mark.parametrize("name,why", [("int", "C or Python keyword"), ("lambda", "C or Python keyword"),
                                      ("workspace", "reserved")])
def test_keyword_and_reserved_names(tmp_path, name, why):
    text = BASE_SPEC + f"attrs:\n  - {{name: {name}, type: int, default: 1}}\n"
    p = only_problem(tmp_path, text)
    assert why in p.message and p.json_path == "$.attrs[0].name"


def test_duplicate_tiling_field(tmp_path):
    text = edit(BASE_SPEC, "  - {name: total_length, type: uint64}\n",
                "  - {name: total_length, type: uint64}\n  - {name: total_length, type: uint32}\n")
    p = only_problem(tmp_path, text)
    assert p.message == "duplicate tiling_data field 'total_length' (first at line 11)"
    at(p, text, "total_length", 2)


# ~~~ tiling keys ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~

TILING_LINE = "tiling: {source: tiling.c, function: test_op_tiling}\n"


def _with_keys(keys: str) -> str:
    return edit(BASE_SPEC, TILING_LINE, f"tiling:\n  source: tiling.c\n  function: test_op_tiling\n  keys: {keys}\n")


def test_tiling_keys_default_and_declared(tmp_path):
    assert load_spec(write_op(tmp_path / "a", BASE_SPEC)).tiling_keys == (0,)
    top = (1 << 64) - 1
    assert load_spec(write_op(tmp_path / "b", _with_keys(f"[7, 0, {top}]"))).tiling_keys == (7, 0, top)


def test_duplicate_tiling_key(tmp_path):
    text = _with_keys("[0, 1,\n         1]")
    p = only_problem(tmp_path, text)
    assert p.message == "duplicate tiling key 1 (first at line 16)" and p.json_path == "$.tiling.keys[2]"
    at(p, text, "1]")


@pytest.mark.parametrize("key, message", [
    ("-1", "tiling key -1 is not a uint64 (0 to 2^64-1)"),
    (str(1 << 64), f"tiling key {1 << 64} is not a uint64 (0 to 2^64-1)"),
    ("1.5", "1.5 is not of type 'integer'"),
    ("true", "True is not of type 'integer'"),
])
def test_tiling_key_out_of_range(tmp_path, key, message):
    text = _with_keys(f"[0, {key}]")
    p = only_problem(tmp_path, text)
    assert p.message == message and p.json_path == "$.tiling.keys[1]"
    at(p, text, f"{key}]")


def test_tiling_keys_not_empty(tmp_path):
    p = only_problem(tmp_path, _with_keys("[]"))
    assert p.json_path == "$.tiling.keys" and "should be non-empty" in p.message


# ~~~ dtype/format combinations ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~

def test_dtype_list_length_mismatch(tmp_path):
    text = edit(BASE_SPEC, "  - name: y\n    dtypes: [float16, float32]", "  - name: y\n    dtypes: [float16, float32, int32]")
    p = only_problem(tmp_path, text)
    assert p.message.startswith("input 'x' lists 2 dtypes, but the op has 3 dtype/format combinations")
    assert p.json_path == "$.inputs[0].dtypes"
    at(p, text, "[float16, float32]")


def test_format_list_length_mismatch(tmp_path):
    text = edit(BASE_SPEC, "    dtypes: [float16, float32]\noutputs",
                "    dtypes: [float16, float32]\n    formats: [ND, NCHW, NHWC]\noutputs")
    with pytest.raises(SpecError) as exc:
        load_spec(write_op(tmp_path, text))
    messages = [p.message for p in exc.value.problems]
    assert any("input 'x' lists 2 dtypes, but the op has 3" in m for m in messages)
    assert any("output 'y' lists 2 dtypes, but the op has 3" in m for m in messages)


def test_single_entry_lists_broadcast_to_every_combination(tmp_path):
    text = edit(BASE_SPEC, "    dtypes: [float16, float32]\noutputs",
                "    dtypes: [float16, float32]\n    formats: [NCHW]\noutputs")
    text = edit(text, "{x: float16, y: float16}", "{x: {dtype: float16, format: NCHW}, y: float16}")
    spec = load_spec(write_op(tmp_path, text))
    assert [c["x"].format for c in spec.combinations()] == ["NCHW", "NCHW"]
    assert spec.binaries[0].choice("x").format == "NCHW" and spec.binaries[1].choice("x").format is None


def test_duplicate_combination(tmp_path):
    text = BASE_SPEC.replace("[float16, float32]", "[float16, float16]")
    text = edit(text, "  - {name: TestOp_FP32, when: {x: float32, y: float32}}\n", "")
    p = only_problem(tmp_path, text)
    assert p.message == "combination 1 (x=float16/ND, y=float16/ND) repeats combination 0"
    assert p.json_path == "$.inputs[0].dtypes[1]"


# ~~~ shape rules ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~

def test_same_as_names_unknown_input(tmp_path):
    text = edit(BASE_SPEC, "{same_as: x}", "{same_as: w}")
    p = only_problem(tmp_path, text)
    assert p.message == "output 'y' shape: 'w' is not an input of the op (inputs: x)"
    at(p, text, "w}")


def test_same_as_names_an_output(tmp_path):
    text = edit(BASE_SPEC, "{same_as: x}", "{same_as: y}")
    p = only_problem(tmp_path, text)
    assert "'y' is not an input of the op" in p.message


def test_broadcast_operand(tmp_path):
    text = edit(BASE_SPEC, "{same_as: x}", "{broadcast: [x, q]}")
    p = only_problem(tmp_path, text)
    assert p.json_path == "$.outputs[0].shape.broadcast[1]" and "'q' is not an input" in p.message
    at(p, text, "q]")


REDUCE = BASE_SPEC.replace("{same_as: x}", "{reduce: x, axes: axes, keep_dims: keep_dims}") + (
    "attrs:\n  - {name: axes, type: list_int, default: []}\n  - {name: keep_dims, type: bool, default: false}\n")


def test_reduce_ok(tmp_path):
    spec = load_spec(write_op(tmp_path, REDUCE))
    shape = spec.outputs[0].shape
    assert (shape.kind, shape.operands, shape.axes_attr, shape.keep_dims_attr) == ("reduce", ("x",), "axes", "keep_dims")


def test_reduce_axes_attr_wrong_type(tmp_path):
    text = edit(REDUCE, "{name: axes, type: list_int, default: []}", "{name: axes, type: int, default: 0}")
    p = only_problem(tmp_path, text)
    assert p.message == "output 'y' shape: reduce axes attr 'axes' must be of type list_int, not int"
    at(p, text, "axes, keep_dims")


def test_reduce_keep_dims_attr_missing(tmp_path):
    text = edit(REDUCE, "keep_dims: keep_dims}", "keep_dims: kd}")
    p = only_problem(tmp_path, text)
    assert p.message.startswith("output 'y' shape: reduce keep_dims 'kd' is not an attr of the op")
    at(p, text, "kd}")


def test_shape_function_must_be_defined_in_tiling(tmp_path):
    text = edit(BASE_SPEC, "{same_as: x}", "{function: infer_y}")
    p = only_problem(tmp_path, text)
    assert p.message == "output 'y' shape function 'infer_y' is not defined in tiling source 'tiling.c'"
    at(p, text, "infer_y")
    spec = load_spec(write_op(tmp_path / "ok", text, tiling=TILING_C + "void infer_y(void *c) { }\n"))
    assert spec.outputs[0].shape.kind == "function" and spec.infer_shape == "infer_y"


# ~~~ attrs ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~

@pytest.mark.parametrize("type_,default,stored", [
    ("float", "1", 1.0), ("float", "0.5", 0.5), ("int", "3", 3), ("bool", "true", True), ("str", "abc", "abc"),
    ("list_int", "[1, 2]", (1, 2)), ("list_float", "[1, 2.5]", (1.0, 2.5)), ("list_bool", "[]", ()),
])
def test_attr_defaults_accepted(tmp_path, type_, default, stored):
    text = BASE_SPEC + f"attrs:\n  - {{name: a, type: {type_}, default: {default}}}\n"
    (attr,) = load_spec(write_op(tmp_path, text)).attrs
    assert attr.default == stored and type(attr.default) is type(stored) and not attr.required


@pytest.mark.parametrize("type_,default", [
    ("int", "true"), ("int", "1.5"), ("float", "false"), ("bool", "0"), ("str", "1"),
    ("list_int", "[1, true]"), ("list_float", "1.0"), ("list_bool", "[1]"),
])
def test_attr_defaults_rejected(tmp_path, type_, default):
    text = BASE_SPEC + f"attrs:\n  - {{name: a, type: {type_}, default: {default}}}\n"
    p = only_problem(tmp_path, text)
    assert p.message.startswith("attr 'a': default ") and p.message.endswith(f"is not a {type_}")
    assert p.json_path == "$.attrs[0].default"
    at(p, text, f"{default}}}")


def test_attr_default_null(tmp_path):
    text = BASE_SPEC + "attrs:\n  - {name: a, type: int, default: null}\n"
    p = only_problem(tmp_path, text)
    assert "default is null; leave `default` out" in p.message


def test_attr_without_default_is_required(tmp_path):
    text = BASE_SPEC + "attrs:\n  - {name: a, type: int}\n"
    (attr,) = load_spec(write_op(tmp_path, text)).attrs
    assert attr.required and attr.index == 0


# ~~~ sources and callbacks ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~

def test_kernel_source_missing(tmp_path):
    p = only_problem(tmp_path, BASE_SPEC, kernel=None)
    assert p.message.startswith("kernel source 'kernel.c' not found (looked for ")
    at(p, BASE_SPEC, "kernel.c")


def test_tiling_source_missing_skips_symbol_checks(tmp_path):
    text = edit(CUSTOMIZED, "callback: table", "callback: 'c:gen_key'")
    p = only_problem(tmp_path, text, tiling=None)
    assert p.message.startswith("tiling source 'tiling.c' not found")


@pytest.mark.parametrize("source,why", [("../kernel.c", "leaves the op directory"),
                                        ("/etc/passwd", "must be a path relative to the op directory")])
def test_source_must_stay_in_op_dir(tmp_path, source, why):
    (tmp_path / "kernel.c").write_text("")
    text = edit(BASE_SPEC, "source: kernel.c", f"source: {source}")
    p = only_problem(tmp_path, text)
    assert why in p.message and p.json_path == "$.kernel.source"


def test_source_in_subdirectory(tmp_path):
    text = edit(BASE_SPEC, "source: kernel.c", "source: src/kernel.c")
    (tmp_path / "test_op" / "src").mkdir(parents=True)
    (tmp_path / "test_op" / "src" / "kernel.c").write_text("")
    assert load_spec(write_op(tmp_path, text)).kernel.source == "src/kernel.c"


def test_c_callback_found(tmp_path):
    text = edit(CUSTOMIZED, "callback: table", "callback: 'c:gen_key'")
    rule = load_spec(write_op(tmp_path, text)).key_rule
    assert (rule.mode, rule.callback, rule.c_symbol, rule.simplified_key_mode) == ("customized", "c", "gen_key", 2)


@pytest.mark.parametrize("symbol", ["declared_only", "commented_out", "nowhere"])
def test_c_callback_not_defined(tmp_path, symbol):
    text = edit(CUSTOMIZED, "callback: table", f"callback: 'c:{symbol}'")
    p = only_problem(tmp_path, text)
    assert p.message.startswith(f"C callback '{symbol}' is not defined in tiling source 'tiling.c'")
    assert p.json_path == "$.simplified_key.callback"
    at(p, text, "'c:")


PY_RULE = "def gen(ctx):\n    return 'k16'\n\nclass X:\n    def nested(self):\n        pass\n"


def test_python_callback_found(tmp_path):
    text = edit(CUSTOMIZED, "callback: table", "callback: python:rule:gen")
    rule = load_spec(write_op(tmp_path, text, files={"rule.py": PY_RULE})).key_rule
    assert (rule.callback, rule.py_module, rule.py_function) == ("python", "rule", "gen")


def test_python_callback_module_missing(tmp_path):
    text = edit(CUSTOMIZED, "callback: table", "callback: python:rule:gen")
    p = only_problem(tmp_path, text)
    assert p.message.startswith("Python callback module rule.py not found in the op directory")
    at(p, text, "python:")


def test_python_callback_function_missing(tmp_path):
    text = edit(CUSTOMIZED, "callback: table", "callback: python:rule:nested")
    p = only_problem(tmp_path, text, files={"rule.py": PY_RULE})
    assert p.message == "Python callback module rule.py defines no top-level function 'nested'"


def test_python_callback_module_syntax_error(tmp_path):
    text = edit(CUSTOMIZED, "callback: table", "callback: python:rule:gen")
    p = only_problem(tmp_path, text, files={"rule.py": "def gen(ctx:\n"})
    assert "rule.py:1:" in p.message and "syntax error" in p.message


def test_callback_needs_customized_mode(tmp_path):
    text = edit(CUSTOMIZED, "mode: customized, ", "")
    text = text.replace(", key: k16", "").replace(", key: k32", "")
    p = only_problem(tmp_path, text)
    assert p.message.startswith("callback 'table' needs mode: customized")


def test_customized_mode_defaults_to_table(tmp_path):
    text = edit(CUSTOMIZED, ", callback: table", "")
    assert load_spec(write_op(tmp_path, text)).key_rule.callback == "table"


# ~~~ binaries: when ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~

def test_when_names_unknown_tensor(tmp_path):
    text = edit(BASE_SPEC, "{x: float16, y: float16}", "{x: float16, y: float16, z: float16}")
    p = only_problem(tmp_path, text)
    assert p.message == "binary 'TestOp_FP16': when names 'z', which is not an input, output or attr of the op"
    at(p, text, "z: float16")


def test_when_misses_a_tensor(tmp_path):
    text = edit(BASE_SPEC, "{x: float16, y: float16}", "{x: float16}")
    p = only_problem(tmp_path, text)
    assert p.message == ("binary 'TestOp_FP16': when must give the dtype of every input and output; missing: y")
    assert p.json_path == "$.binaries[0].when"
    at(p, text, "when: {x: float16}")


def test_when_dtype_not_declared_for_tensor(tmp_path):
    text = edit(BASE_SPEC, "{x: float16, y: float16}", "{x: int8, y: float16}")
    p = only_problem(tmp_path, text)
    assert p.message == "binary 'TestOp_FP16': dtype 'int8' is not declared for input 'x' (declared: float16, float32)"
    at(p, text, "int8")


def test_when_unknown_dtype(tmp_path):
    text = edit(BASE_SPEC, "{x: float16, y: float16}", "{x: fp16, y: float16}")
    p = only_problem(tmp_path, text)
    assert "unknown dtype 'fp16' is not declared for input 'x'" in p.message


def test_when_format_not_declared(tmp_path):
    text = edit(BASE_SPEC, "{x: float16, y: float16}", "{x: {dtype: float16, format: NCHW}, y: float16}")
    p = only_problem(tmp_path, text)
    assert p.message == "binary 'TestOp_FP16': format 'NCHW' is not declared for input 'x' (declared: ND)"
    assert p.json_path == "$.binaries[0].when.x.format"
    at(p, text, "NCHW")


def test_when_tensor_value_must_be_dtype(tmp_path):
    text = edit(BASE_SPEC, "{x: float16, y: float16}", "{x: 16, y: float16}")
    p = only_problem(tmp_path, text)
    assert "give input 'x''s dtype" in p.message


def test_when_combination_not_declared(tmp_path):
    text = edit(BASE_SPEC, "{x: float16, y: float16}", "{x: float16, y: float32}")
    p = only_problem(tmp_path, text)
    assert p.message.startswith("binary 'TestOp_FP16': dtype combination (x=float16, y=float32) is not declared; "
                                "declared combinations: (x=float16/ND, y=float16/ND); (x=float32/ND, y=float32/ND)")
    at(p, text, "when: {x: float16, y: float32}")


def test_when_attr_value_type(tmp_path):
    text = edit(CUSTOMIZED, "{x: float16, y: float16}, key: k16}", "{x: float16, y: float16, a: yes}, key: k16}")
    text += "attrs:\n  - {name: a, type: float, default: 1.0}\n"
    p = only_problem(tmp_path, text)
    assert p.message == "binary 'TestOp_FP16': when a: True is not a float (attr 'a' has type float)"
    at(p, text, "yes")


def test_when_attr_values_are_typed(tmp_path):
    text = edit(CUSTOMIZED, "{x: float16, y: float16}, key: k16}", "{x: float16, y: float16, a: 0, b: [1]}, key: k16}")
    text += "attrs:\n  - {name: b, type: list_float, default: []}\n  - {name: a, type: float, default: 1.0}\n"
    b = load_spec(write_op(tmp_path, text)).binaries[0]
    assert b.attr_when == (("b", (1.0,)), ("a", 0.0))
    assert type(b.attr_when[1][1]) is float


def test_attr_when_needs_customized_mode(tmp_path):
    text = edit(BASE_SPEC, "{x: float16, y: float16}", "{x: float16, y: float16, a: 1}")
    text += "attrs:\n  - {name: a, type: int, default: 0}\n"
    p = only_problem(tmp_path, text)
    assert "attribute conditions in when need simplified_key mode customized" in p.message
    at(p, text, "a: 1")


# ~~~ binaries: names and keys ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~

def test_duplicate_binary_name(tmp_path):
    text = edit(BASE_SPEC, "name: TestOp_FP32", "name: TestOp_FP16")
    p = only_problem(tmp_path, text)
    assert p.message == "duplicate binary name 'TestOp_FP16' (first at line 15)"
    at(p, text, "TestOp_FP16", 2)


def test_customized_mode_needs_key(tmp_path):
    text = edit(CUSTOMIZED, ", key: k32", "")
    p = only_problem(tmp_path, text)
    assert p.message == "binary 'TestOp_FP32' needs a key: simplified_key mode is customized"
    assert p.json_path == "$.binaries[1]"
    at(p, text, "{name: TestOp_FP32")


def test_default_mode_forbids_key(tmp_path):
    text = edit(BASE_SPEC, "{x: float32, y: float32}}", "{x: float32, y: float32}, key: k32}")
    p = only_problem(tmp_path, text)
    assert p.message.startswith("binary 'TestOp_FP32' has a key, but simplified_key mode is default")
    at(p, text, "key: k32")


def test_duplicate_key(tmp_path):
    text = edit(CUSTOMIZED, "key: k32", "key: k16")
    p = only_problem(tmp_path, text)
    assert p.message.startswith("duplicate key 'k16': binary 'TestOp_FP32' and binary 'TestOp_FP16' (line 16) "
                                "both have the full key TestOp/d=0,p=0/k16")
    at(p, text, "k16", 2)


def test_same_key_with_disjoint_deterministic_is_fine(tmp_path):
    text = edit(CUSTOMIZED, "key: k32", "key: k16, deterministic: true")
    text = edit(text, "key: k16}", "key: k16, deterministic: false}")
    spec = load_spec(write_op(tmp_path, text))
    assert [b.d_values for b in spec.binaries] == [(0,), (1,)]


def test_same_key_with_disjoint_impl_modes_is_fine(tmp_path):
    text = edit(CUSTOMIZED, "key: k32", "key: k16, impl_mode: [high_precision]")
    spec = load_spec(write_op(tmp_path, text))
    assert [b.p_values for b in spec.binaries] == [(1, 0), (2,)]


@pytest.mark.parametrize("key,message", [
    ("''", "key is empty"),
    ("'a b'", "key 'a b' contains whitespace"),
    ("\"a\\tb\"", "contains whitespace"),
    ("'" + "k" * 257 + "'", "key is 257 bytes long; GenSimplifiedKey fragments are at most 256 bytes"),
])
def test_bad_fragments(tmp_path, key, message):
    text = edit(CUSTOMIZED, "key: k32", f"key: {key}")
    p = only_problem(tmp_path, text)
    assert message in p.message and p.json_path == "$.binaries[1].key"
    at(p, text, key)


def test_fragment_of_256_multibyte_bytes(tmp_path):
    text = edit(CUSTOMIZED, "key: k32", "key: " + "é" * 128)
    assert len(load_spec(write_op(tmp_path / "ok", text)).binaries[1].key.encode()) == 256
    text = edit(CUSTOMIZED, "key: k32", "key: " + "é" * 129)
    assert "258 bytes" in only_problem(tmp_path, text).message


def test_default_mode_ambiguous_binaries(tmp_path):
    text = edit(BASE_SPEC, "{x: float32, y: float32}}", "{x: float16, y: float16}}")
    p = only_problem(tmp_path, text)
    assert p.message.startswith("binary 'TestOp_FP32' is ambiguous with binary 'TestOp_FP16' (line 15): both "
                                "serve (x=float16/ND, y=float16/ND) with d=0,p=0")
    assert p.json_path == "$.binaries[1]"


def test_table_mode_ambiguous_binaries(tmp_path):
    text = edit(CUSTOMIZED, "{x: float32, y: float32}, key: k32", "{x: float16, y: float16}, key: k32")
    p = only_problem(tmp_path, text)
    assert "is ambiguous with binary 'TestOp_FP16'" in p.message and "the key table" in p.message


def test_table_mode_attr_when_separates_binaries(tmp_path):
    text = edit(CUSTOMIZED, "{x: float32, y: float32}, key: k32", "{x: float16, y: float16, a: 0.0}, key: k32")
    text += "attrs:\n  - {name: a, type: float, default: 1.0}\n"
    assert load_spec(write_op(tmp_path, text)).binaries[1].attr_when == (("a", 0.0),)


def test_c_callback_may_choose_between_same_when(tmp_path):
    text = edit(CUSTOMIZED, "{x: float32, y: float32}, key: k32", "{x: float16, y: float16}, key: k32")
    text = edit(text, "callback: table", "callback: 'c:gen_key'")
    assert len(load_spec(write_op(tmp_path, text)).binaries) == 2


# ~~~ location and package ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~

def test_directory_must_be_snake_case_of_op(tmp_path):
    p = only_problem(tmp_path, BASE_SPEC, dirname="testop")
    assert p.message == "op TestOp must live in a directory named test_op (snake_case of the op), not 'testop'"
    at(p, BASE_SPEC, "TestOp")


def test_domain_only_for_built_in(tmp_path):
    text = BASE_SPEC + "domain: math\n"
    p = only_problem(tmp_path, text)
    assert p.message.startswith("domain is only for package: built-in")
    spec = load_spec(write_op(tmp_path / "ok", text + "package: built-in\n"))
    assert (spec.packages, spec.domain) == (("built-in",), "math")
    both = load_spec(write_op(tmp_path / "both", text + "package: [custom, built-in]\n"))
    assert both.packages == ("custom", "built-in")


# ~~~ many problems at once ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~

def test_all_problems_reported_sorted(tmp_path):
    text = edit(CUSTOMIZED, "{same_as: x}", "{same_as: q}")
    text = edit(text, "key: k32", "key: k16")
    text = edit(text, "{x: float16, y: float16}", "{x: float16, y: int8}")
    text += "attrs:\n  - {name: a, type: bool, default: 1}\n"
    path = write_op(tmp_path, text, kernel=None)
    with pytest.raises(SpecError) as exc:
        load_spec(path)
    problems = exc.value.problems
    assert [p.json_path for p in problems] == [
        "$.outputs[0].shape.same_as", "$.kernel.source", "$.binaries[0].when.y", "$.binaries[1].key",
        "$.attrs[0].default"]
    assert [p.line for p in problems] == sorted(p.line for p in problems)
    lines = str(exc.value).splitlines()
    assert len(lines) == 5 and all(line.startswith(f"{path}:") for line in lines)
    assert lines[0] == f"{path}:{problems[0].line}:{problems[0].col}: {problems[0].message} [$.outputs[0].shape.same_as]"


def test_duplicate_tensor_names_do_not_cascade_into_when_errors(tmp_path):
    text = edit(BASE_SPEC, "  - name: y\n", "  - name: x\n")
    p = only_problem(tmp_path, text)  # the binaries' `y` is not reported as unknown
    assert p.message.startswith("duplicate name 'x'")
