"""The TilingContext filled in C (native/src/tiling_fill.c) equals the one tiling_context.py
fills itself, field by field, over generated calls; what the C filler leaves to Python gets the
Python builder's errors."""

from __future__ import annotations

import ctypes

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opbuild.runtime.host import tiling_context as tc

pytestmark = pytest.mark.skipif(tc._FILL is None, reason="opbuild.runtime._fastpath is not built")

DTYPES = ["float32", "float16", "int32", "int8", "bfloat16"]
FORMATS = ["ND", "NCHW", "NHWC"]

shape = st.lists(st.integers(0, 2**40), max_size=tc.MAX_DIMS).map(tuple)
tensor = st.builds(lambda d, f, s, strided: (d, f, s, tuple(range(len(s))) if strided else None),
                   st.sampled_from(DTYPES), st.sampled_from(FORMATS), shape, st.booleans())
side = st.lists(st.lists(tensor, max_size=3), max_size=4)
attr = st.one_of(
    st.tuples(st.just("int"), st.integers(-(2**63), 2**63 - 1)),
    st.tuples(st.just("float"), st.one_of(st.floats(allow_nan=False), st.integers(-1000, 1000))),
    st.tuples(st.just("bool"), st.booleans()),
    st.tuples(st.just("str"), st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"),
                                      max_size=20)),
)


def both(*args, **kwargs):
    fast = tc.build_tiling_context(*args, **kwargs)
    saved, tc._FILL = tc._FILL, None
    try:
        slow = tc.build_tiling_context(*args, **kwargs)
    finally:
        tc._FILL = saved
    return fast, slow


def dump(h: tc.ContextHolder) -> dict:
    c = h.ctx
    out = {name: getattr(c, name) for name in ("abi_version", "input_num", "output_num", "attr_num", "core_num",
                                               "deterministic", "impl_mode", "ub_size", "tiling_data_capacity")}
    out["op_type"], out["soc"] = c.op_type, c.soc_version
    for kind, num, desc in (("in", c.input_num, h.input_desc), ("out", c.output_num, h.output_desc)):
        counts = [(c.input_count if kind == "in" else c.output_count)[i] for i in range(num)]
        out[kind] = [[bytes(desc(i, k)) for k in range(n)] for i, n in enumerate(counts)]
    attrs = []
    for i in range(c.attr_num):
        a = c.attrs[i]
        attrs.append((a.type, a.i, a.f, a.s))
    out["attrs"] = attrs
    out["overrun"] = h.overrun()
    out["data"] = bool(c.tiling_data) == bool(h.tiling_capacity)
    return out


@settings(max_examples=60, deadline=None)
@given(side, side, st.lists(attr, max_size=5), st.integers(0, 2), st.booleans(), st.sampled_from([0, 8, 100, 4096]))
def test_c_fill_equals_python_fill(inputs, outputs, attrs, impl_mode, det, capacity):
    args = ("Op", inputs, outputs, attrs, "ascend910b", 40, 196608, det, impl_mode, capacity)
    try:
        fast, slow = both(*args)
    except tc.TilingContextError:  # bad input (e.g. strides out of int64): C left it to Python
        saved, tc._FILL = tc._FILL, None
        try:
            with pytest.raises(tc.TilingContextError):
                tc.build_tiling_context(*args)
        finally:
            tc._FILL = saved
        return
    assert dump(fast) == dump(slow)


def test_c_fill_is_used_and_tiling_writes_land_in_it():
    fast = tc.build_tiling_context("Op", [[("float32", "ND", (4,), None)]], [], [("str", "héllo")], "ascend910b",
                                   1, 1024, 0, 1, 16)
    views = [v for v in (fast.ctx._objects or {}).values() if isinstance(v, memoryview)]
    assert [type(v.obj).__name__ for v in views] == ["TilingBlock"]  # mapped onto the C block
    ctypes.memset(fast.ctx.tiling_data, 7, 16)
    fast.ctx.tiling_data_size = 16
    assert fast.tiling_data() == b"\x07" * 16
    ctypes.memset(fast.ctx.tiling_data, 7, 17)  # one byte past the buffer: the guard sees it
    with pytest.raises(tc.TilingContextError, match="wrote past the end"):
        fast.tiling_data()


@pytest.mark.parametrize("inputs, attrs, message", [
    ([[("float99", "ND", (1,), None)]], [], "unknown dtype"),
    ([[("float32", "ND", (1,) * 9, None)]], [], "rank 9"),
    ([[("float32", "ND", (1, 2), (1,))]], [], "1 strides for a shape of rank 2"),
    ([], [("int", 2**64)], "out of int64 range"),
    ([], [("str", "a\0b")], "NUL"),
])
def test_what_c_leaves_to_python_gets_its_errors(inputs, attrs, message):
    with pytest.raises(tc.TilingContextError, match=message):
        tc.build_tiling_context("Op", inputs, [], attrs, "ascend910b", 1, 1024)


def test_list_attrs_go_through_python():
    h = tc.build_tiling_context("Op", [], [], [("list_int", [1, 2, 3])], "ascend910b", 1, 1024)
    a = h.ctx.attrs[0]
    assert (a.count, [a.list_int[i] for i in range(3)]) == (3, [1, 2, 3])
