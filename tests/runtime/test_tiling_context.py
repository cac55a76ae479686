"""build_tiling_context round trips through a compiled tiling function that uses tiling.h."""

from __future__ import annotations

import ctypes

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opbuild.abi import ge_types
from opbuild.abi.platform import platform
from opbuild.runtime.host.tiling_context import (
    GRAPH_FAILED,
    MAX_DIMS,
    ContextHolder,
    TilingContextError,
    build_tiling_context,
    new_key_buffer,
)

TILING_SRC = r"""
#include "opbuild/tiling.h"

typedef struct {
    uint32_t abi, in_num, out_num, attr_num;
    uint32_t x_count, opt_count, dyn_count, rank_x;
    int64_t x_dims[8];
    int64_t x_size;
    int64_t dyn_total;
    int32_t x_dtype, x_format;
    int64_t out_strides[8];
    int64_t a_int; double a_float; uint32_t a_bool; uint32_t str_len;
    char a_str[32];
    uint32_t li_count, lf_count, lb_count, pad;
    int64_t li_sum; double lf_sum; uint32_t lb_sum; uint32_t out_dtype_size;
    char op_type[32];
    char soc[32];
    uint32_t core_num, deterministic, impl_mode, pad2;
    uint64_t ub_size;
} RtTiling;

OPBUILD_API uint32_t rt_tiling(TilingContext *ctx) {
    if (ctx->abi_version != OPBUILD_TILING_ABI_VERSION) return tiling_fail(ctx, "abi %u", ctx->abi_version);
    const OpbuildTensorDesc *x = tiling_input(ctx, 0);
    if (!x) return tiling_fail(ctx, "no x");
    RtTiling *td = TILING_DATA(ctx, RtTiling);
    if (!td) return OPBUILD_GRAPH_FAILED;
    td->abi = ctx->abi_version;
    td->in_num = ctx->input_num; td->out_num = ctx->output_num; td->attr_num = ctx->attr_num;
    td->x_count = tiling_input_count(ctx, 0);
    td->opt_count = tiling_input_count(ctx, 1);
    td->dyn_count = tiling_input_count(ctx, 2);
    if (tiling_input(ctx, 1) != NULL) return tiling_fail(ctx, "optional input present");
    td->rank_x = x->dim_num;
    for (uint32_t i = 0; i < x->dim_num; ++i) td->x_dims[i] = x->dims[i];
    td->x_size = tiling_shape_size(x);
    for (uint32_t k = 0; k < td->dyn_count; ++k) td->dyn_total += tiling_shape_size(tiling_dynamic_input(ctx, 2, k));
    td->x_dtype = x->dtype; td->x_format = x->format;
    const OpbuildTensorDesc *y = tiling_output(ctx, 0);
    for (uint32_t i = 0; i < y->dim_num; ++i) td->out_strides[i] = y->strides[i];
    td->out_dtype_size = tiling_dtype_size(y->dtype);
    td->a_int = tiling_attr_int(ctx, 0);
    td->a_float = tiling_attr_float(ctx, 1);
    td->a_bool = tiling_attr_bool(ctx, 2);
    const char *s = tiling_attr_str(ctx, 3);
    td->str_len = (uint32_t)strlen(s);
    snprintf(td->a_str, sizeof td->a_str, "%s", s);
    uint32_t n;
    const int64_t *li = tiling_attr_list_int(ctx, 4, &n);
    td->li_count = n;
    for (uint32_t i = 0; i < n; ++i) td->li_sum += li[i];
    const double *lf = tiling_attr_list_float(ctx, 5, &n);
    td->lf_count = n;
    for (uint32_t i = 0; i < n; ++i) td->lf_sum += lf[i];
    const uint8_t *lb = tiling_attr_list_bool(ctx, 6, &n);
    td->lb_count = n;
    for (uint32_t i = 0; i < n; ++i) td->lb_sum += lb[i];
    if (tiling_attr(ctx, 7) != NULL) return tiling_fail(ctx, "attr 7 exists");
    snprintf(td->op_type, sizeof td->op_type, "%s", ctx->op_type);
    snprintf(td->soc, sizeof td->soc, "%s", ctx->soc_version);
    td->core_num = tiling_core_num(ctx);
    td->deterministic = tiling_deterministic(ctx);
    td->impl_mode = ctx->impl_mode;
    td->ub_size = tiling_ub_size(ctx);
    tiling_set_block_dim(ctx, tiling_core_num(ctx) / 2);
    tiling_set_tiling_key(ctx, 0x100000001ull);
    tiling_set_workspace_size(ctx, 16u << 20);
    return OPBUILD_GRAPH_SUCCESS;
}

typedef struct { uint8_t bytes[8192]; } TooBig;
OPBUILD_API uint32_t big_tiling(TilingContext *ctx) {
    TooBig *td = TILING_DATA(ctx, TooBig);
    if (!td) return OPBUILD_GRAPH_FAILED;
    return OPBUILD_GRAPH_SUCCESS;
}

OPBUILD_API uint32_t lying_tiling(TilingContext *ctx) {
    ctx->tiling_data_size = ctx->tiling_data_capacity + 1;
    return OPBUILD_GRAPH_SUCCESS;
}

OPBUILD_API uint32_t gen_key(TilingContext *ctx, char *key) {
    const OpbuildTensorDesc *x = tiling_input(ctx, 0);
    return simplified_key_append(ctx, key, x->dtype == OPBUILD_DT_FLOAT16 ? "custom_fp16" : "custom_other");
}

OPBUILD_API uint32_t long_key(TilingContext *ctx, char *key) {
    char chunk[101];
    memset(chunk, 'k', 100);
    chunk[100] = 0;
    for (int i = 0; i < 3; ++i)
        if (simplified_key_append(ctx, key, chunk) != OPBUILD_GRAPH_SUCCESS) return OPBUILD_GRAPH_FAILED;
    return OPBUILD_GRAPH_SUCCESS;
}

/* Echo every tensor instance: per instance dtype, format, rank, dims[8], strides[8] as int64. */
OPBUILD_API uint32_t echo_tiling(TilingContext *ctx) {
    int64_t *out = (int64_t *)ctx->tiling_data;
    uint64_t k = 0, cap = ctx->tiling_data_capacity / 8;
    for (int side = 0; side < 2; ++side) {
        uint32_t num = side ? ctx->output_num : ctx->input_num;
        for (uint32_t ir = 0; ir < num; ++ir) {
            uint32_t cnt = side ? ctx->output_count[ir] : ctx->input_count[ir];
            uint32_t start = side ? ctx->output_start[ir] : ctx->input_start[ir];
            const OpbuildTensorDesc *descs = side ? ctx->output_descs : ctx->input_descs;
            out[k++] = cnt;
            for (uint32_t j = 0; j < cnt; ++j) {
                const OpbuildTensorDesc *d = &descs[start + j];
                if (k + 19 > cap) return tiling_fail(ctx, "echo buffer too small");
                out[k++] = d->dtype; out[k++] = d->format; out[k++] = d->dim_num;
                for (int i = 0; i < 8; ++i) out[k++] = d->dims[i];
                for (int i = 0; i < 8; ++i) out[k++] = d->strides[i];
            }
        }
    }
    ctx->tiling_data_size = k * 8;
    return OPBUILD_GRAPH_SUCCESS;
}
"""


class RtTiling(ctypes.Structure):
    _fields_ = [
        ("abi", ctypes.c_uint32), ("in_num", ctypes.c_uint32), ("out_num", ctypes.c_uint32),
        ("attr_num", ctypes.c_uint32), ("x_count", ctypes.c_uint32), ("opt_count", ctypes.c_uint32),
        ("dyn_count", ctypes.c_uint32), ("rank_x", ctypes.c_uint32), ("x_dims", ctypes.c_int64 * 8),
        ("x_size", ctypes.c_int64), ("dyn_total", ctypes.c_int64), ("x_dtype", ctypes.c_int32),
        ("x_format", ctypes.c_int32), ("out_strides", ctypes.c_int64 * 8), ("a_int", ctypes.c_int64),
        ("a_float", ctypes.c_double), ("a_bool", ctypes.c_uint32), ("str_len", ctypes.c_uint32),
        ("a_str", ctypes.c_char * 32), ("li_count", ctypes.c_uint32), ("lf_count", ctypes.c_uint32),
        ("lb_count", ctypes.c_uint32), ("pad", ctypes.c_uint32), ("li_sum", ctypes.c_int64),
        ("lf_sum", ctypes.c_double), ("lb_sum", ctypes.c_uint32), ("out_dtype_size", ctypes.c_uint32),
        ("op_type", ctypes.c_char * 32), ("soc", ctypes.c_char * 32), ("core_num", ctypes.c_uint32),
        ("deterministic", ctypes.c_uint32), ("impl_mode", ctypes.c_uint32), ("pad2", ctypes.c_uint32),
        ("ub_size", ctypes.c_uint64),
    ]


@pytest.fixture(scope="module")
def lib(cc):
    dll = ctypes.CDLL(str(cc.shared(TILING_SRC, "tiling")))
    for name in ("rt_tiling", "big_tiling", "lying_tiling", "echo_tiling"):
        fn = getattr(dll, name)
        fn.restype, fn.argtypes = ctypes.c_uint32, [ctypes.c_void_p]
    for name in ("gen_key", "long_key"):
        fn = getattr(dll, name)
        fn.restype, fn.argtypes = ctypes.c_uint32, [ctypes.c_void_p, ctypes.c_char_p]
    return dll


def _context(x_dtype="float16", **kw) -> ContextHolder:
    p = platform("ascend910b")
    args = dict(
        op_type="RoundTrip",
        inputs=[
            [(x_dtype, "ND", (4, 5, 6), None)],
            [],  # absent optional input
            [("float32", "ND", (3,), None), ("float32", "NHWC", (2, 2), None), ("float32", "ND", (), None)],
        ],
        outputs=[[("float32", "NCHW", (2, 3, 4, 5), (120, 40, 10, 2))]],
        attrs=[
            ("int", -7),
            ("float", 2.5),
            ("bool", True),
            ("str", "héllo"),
            ("list_int", [1, 2, 3, 2**40]),
            ("list_float", [0.5, 0.25]),
            ("list_bool", [True, False, True]),
        ],
        soc_version=p.soc,
        core_num=p.core_num,
        ub_size=p.ub_size,
        deterministic=True,
        impl_mode="high_performance",
        tiling_capacity=4096,
    )
    args.update(kw)
    return build_tiling_context(**args)


def test_round_trip(lib):
    h = _context()
    assert lib.rt_tiling(h.ptr) == 0, h.error
    assert h.error == ""
    assert (h.block_dim, h.tiling_key, h.workspace_size) == (20, 0x100000001, 16 << 20)
    data = h.tiling_data()
    assert len(data) == ctypes.sizeof(RtTiling) == h.tiling_data_size
    td = RtTiling.from_buffer_copy(data)
    assert (td.abi, td.in_num, td.out_num, td.attr_num) == (1, 3, 1, 7)
    assert (td.x_count, td.opt_count, td.dyn_count) == (1, 0, 3)
    assert td.rank_x == 3 and list(td.x_dims[:3]) == [4, 5, 6] and td.x_size == 120
    assert td.dyn_total == 3 + 4 + 1  # a rank-0 tensor has one element
    assert (td.x_dtype, td.x_format) == (ge_types.DTYPE_TO_GE["float16"], ge_types.FORMAT_TO_GE["ND"])
    assert list(td.out_strides[:4]) == [120, 40, 10, 2]
    assert td.out_dtype_size == 4
    assert (td.a_int, td.a_float, td.a_bool) == (-7, 2.5, 1)
    assert td.a_str.decode() == "héllo" and td.str_len == len("héllo".encode())
    assert (td.li_count, td.li_sum) == (4, 6 + 2**40)
    assert (td.lf_count, td.lf_sum) == (2, 0.75)
    assert (td.lb_count, td.lb_sum) == (3, 2)
    assert (td.op_type, td.soc) == (b"RoundTrip", b"ascend910b")
    assert (td.core_num, td.deterministic, td.impl_mode, td.ub_size) == (40, 1, 1, 196608)


def test_python_side_accessors():
    h = _context()
    assert h.input_desc(0).shape == (4, 5, 6)
    assert h.input_desc(0).stride_tuple == (30, 6, 1)  # contiguous strides filled in
    assert h.input_desc(2, 2).shape == ()
    assert h.output_desc(0).stride_tuple == (120, 40, 10, 2)
    with pytest.raises(IndexError):
        h.input_desc(1)
    assert h.ctx.attrs[3].s == "héllo".encode()
    assert h.ctx.attrs[4].list_int[3] == 2**40


def test_too_large_tiling_struct_is_an_error(lib):
    h = _context()
    assert lib.big_tiling(h.ptr) == GRAPH_FAILED
    assert h.error == "tiling data of 8192 bytes exceeds the buffer of 4096 bytes"
    assert h.tiling_data() == b""
    h2 = _context(tiling_capacity=0)
    assert lib.rt_tiling(h2.ptr) == GRAPH_FAILED
    assert "exceeds the buffer of 0 bytes" in h2.error


def test_declared_size_over_capacity_is_an_error(lib):
    h = _context()
    assert lib.lying_tiling(h.ptr) == 0
    with pytest.raises(TilingContextError, match="declared 4097 bytes of tiling data; the buffer has 4096"):
        h.tiling_data()


def test_reset_results(lib):
    h = _context()
    lib.big_tiling(h.ptr)
    assert lib.rt_tiling(h.ptr) == 0
    h.reset_results()
    assert (h.block_dim, h.tiling_key, h.workspace_size, h.tiling_data_size, h.error) == (0, 0, 0, 0, "")
    assert h.ctx.core_num == 40 and h.ctx.tiling_data_capacity == 4096  # inputs untouched


def test_gen_simplified_key(lib):
    for dtype, frag in (("float16", b"custom_fp16"), ("float32", b"custom_other")):
        h = _context(x_dtype=dtype)
        key = new_key_buffer()
        assert lib.gen_key(h.ptr, key) == 0
        assert key.value == frag
    h = _context()
    key = new_key_buffer()
    assert lib.long_key(h.ptr, key) == GRAPH_FAILED
    assert h.error == "simplified key fragment longer than 256 bytes"


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(inputs=[[("float17", "ND", (1,), None)]]), r"input 0 instance 0: unknown dtype 'float17'; known: float32"),
        (dict(inputs=[[], [("float16", "NC1HWC0", (1,), None)]]), r"input 1 instance 0: unknown format 'NC1HWC0'"),
        (dict(outputs=[[("float16", "ND", (1,) * 9, None)]]), r"output 0 instance 0: rank 9 is more than 8"),
        (dict(outputs=[[("float16", "ND", (2, 2), (1,))]]), r"1 strides for a shape of rank 2"),
        (dict(outputs=[[("float16", "ND")]]), r"expected \(dtype, format, shape, strides\)"),
        (dict(attrs=[("tensor", 1)]), r"attr 0: unknown attr type 'tensor'"),
        (dict(attrs=[("int", 1.5)]), r"attr 0 \(int\): bad value"),
        (dict(attrs=[("int", 1), ("list_bool", [1, 2])]), r"attr 1 \(list_bool\): bad value"),
        (dict(attrs=[("float", "x")]), r"attr 0 \(float\): bad value"),
        (dict(attrs=[("int", 2**63)]), r"attr 0 \(int\): bad value"),
        (dict(attrs=[("list_int", [1, -(2**63) - 1])]), r"attr 0 \(list_int\): bad value"),
        (dict(inputs=[[("float16", "ND", (4, 2**62, 4), None)]]), r"shape \(4, 4611686018427387904, 4\) or strides None out"),
        (dict(impl_mode="fast"), r"unknown impl_mode 'fast'"),
        (dict(impl_mode=3), r"impl_mode 3 is not 0, 1 or 2"),
    ],
)
def test_bad_arguments(kw, match):
    with pytest.raises(TilingContextError, match=match):
        _context(**kw)


_tensor = st.tuples(
    st.sampled_from(sorted(ge_types.DTYPE_TO_GE)),
    st.sampled_from(sorted(ge_types.FORMAT_TO_GE)),
    st.lists(st.integers(0, 2**7), max_size=MAX_DIMS),
    st.booleans(),
)
_side = st.lists(st.lists(_tensor, max_size=3), max_size=4)


def _instances(side):
    return [[(d, f, shape, None if contig else [s + 1 for s in shape]) for d, f, shape, contig in p] for p in side]


@settings(max_examples=60, deadline=None)
@given(inputs=_side, outputs=_side)
def test_descriptors_round_trip(lib, inputs, outputs):
    ins, outs = _instances(inputs), _instances(outputs)
    h = build_tiling_context("Echo", ins, outs, [], "ascend910b", 40, 196608, tiling_capacity=8 * 19 * 30 + 64)
    assert lib.echo_tiling(h.ptr) == 0, h.error
    words = list(memoryview(h.tiling_data()).cast("q"))
    expect = []
    for side in (ins, outs):
        for p in side:
            expect.append(len(p))
            for dtype, fmt, shape, strides in p:
                if strides is None:
                    strides, acc = [], 1
                    for d in reversed(shape):
                        strides.insert(0, acc)
                        acc *= max(d, 1)
                pad = [0] * (MAX_DIMS - len(shape))
                expect += [ge_types.DTYPE_TO_GE[dtype], ge_types.FORMAT_TO_GE[fmt], len(shape), *shape, *pad,
                           *strides, *pad]
    assert words == expect


def test_large_dims_with_explicit_strides(lib):
    shape, strides = [2**40, 3, 2**20], [2**62, 2**61, -1]
    h = build_tiling_context("Echo", [[("int8", "ND", shape, strides)]], [], [], "ascend910b", 40, 196608)
    assert lib.echo_tiling(h.ptr) == 0, h.error
    words = list(memoryview(h.tiling_data()).cast("q"))
    assert words[4:7] == shape and words[12:15] == strides


