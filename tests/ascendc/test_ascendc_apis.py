"""The rest of the kernel API against its documented formulas: DataCopy with DataCopyParams,
DataCopyPad (ext and pad params), Cast with every RoundMode, Compare/CompareScalar + Select,
level-2 math and reductions, SetAtomicAdd across blocks, SyncAll with GetUserWorkspace, printf
and DumpTensor, DivCeil/CeilDiv/AlignUp, ASCEND_IS_AIV, GetSystemCycle. One kernel; the tiling
key picks the API, p0..p5 / f0 its parameters."""

from __future__ import annotations

import numpy as np
import pytest

import ackit

KERNEL = r"""
#include "kernel_operator.h"
using namespace AscendC;

namespace {
struct Args { GM_ADDR a, b, out, ws; };

template <class T>
LocalTensor<T> ub(TPipe &pipe, TBuf<TPosition::VECCALC> &buf, uint32_t n) {
    pipe.InitBuffer(buf, n * sizeof(T));
    return buf.Get<T>();
}
}  // namespace

extern "C" __global__ __aicore__ void apis(GM_ADDR a, GM_ADDR b, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling) {
    GET_TILING_DATA(t, tiling);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b0, b1, b2;
    GlobalTensor<float> ga, gb, gout;
    ga.SetGlobalBuffer((__gm__ float *)a, t.n);
    gb.SetGlobalBuffer((__gm__ float *)b, t.n);
    gout.SetGlobalBuffer((__gm__ float *)out, t.n);
    if (TILING_KEY_IS(1)) {  // DataCopy GM -> UB with DataCopyParams, UB prefilled with -1
        LocalTensor<float> u = ub<float>(pipe, b0, t.n);
        Duplicate(u, -1.0f, t.n);
        DataCopy(u, ga, DataCopyParams(t.p0, t.p1, t.p2, t.p3));
        DataCopy(gout, u, t.n);
    } else if (TILING_KEY_IS(2)) {  // DataCopy UB -> GM with DataCopyParams
        LocalTensor<float> u = ub<float>(pipe, b0, t.n);
        DataCopy(u, ga, t.n);
        DataCopy(gout, u, DataCopyParams(t.p0, t.p1, t.p2, t.p3));
    } else if (TILING_KEY_IS(3)) {  // DataCopyPad GM -> UB
        LocalTensor<float> u = ub<float>(pipe, b0, t.n);
        Duplicate(u, -1.0f, t.n);
        DataCopyExtParams e(t.p0, t.p1, t.p2, t.p3, 0);
        DataCopyPadExtParams<float> pad(t.p4 != 0, (uint8_t)(t.p5 & 0xff), (uint8_t)(t.p5 >> 8), t.f0);
        DataCopyPad(u, ga, e, pad);
        DataCopy(gout, u, t.n);
    } else if (TILING_KEY_IS(4)) {  // DataCopyPad UB -> GM
        LocalTensor<float> u = ub<float>(pipe, b0, t.n);
        DataCopy(u, ga, t.n);
        DataCopyPad(gout, u, DataCopyExtParams(t.p0, t.p1, t.p2, t.p3, 0));
    } else if (TILING_KEY_IS(5) || TILING_KEY_IS(6) || TILING_KEY_IS(7)) {  // Cast float -> half / int32 / bf16
        LocalTensor<float> src = ub<float>(pipe, b0, t.n);
        DataCopy(src, ga, t.n);
        const RoundMode mode = (RoundMode)t.p0;
        if (TILING_KEY_IS(5)) {
            LocalTensor<half> d = ub<half>(pipe, b1, t.n);
            Cast(d, src, mode, t.n);
            GlobalTensor<half> g;
            g.SetGlobalBuffer((__gm__ half *)out, t.n);
            DataCopy(g, d, t.n);
        } else if (TILING_KEY_IS(6)) {
            LocalTensor<int32_t> d = ub<int32_t>(pipe, b1, t.n);
            Cast(d, src, mode, t.n);
            GlobalTensor<int32_t> g;
            g.SetGlobalBuffer((__gm__ int32_t *)out, t.n);
            DataCopy(g, d, t.n);
        } else {
            LocalTensor<bfloat16_t> d = ub<bfloat16_t>(pipe, b1, t.n);
            Cast(d, src, mode, t.n);
            LocalTensor<float> back = ub<float>(pipe, b2, t.n);
            Cast(back, d, RoundMode::CAST_NONE, t.n);  // bf16 -> float is exact
            DataCopy(gout, back, t.n);
        }
    } else if (TILING_KEY_IS(8) || TILING_KEY_IS(9)) {  // Compare(Scalar) + Select
        LocalTensor<float> x = ub<float>(pipe, b0, t.n), y = ub<float>(pipe, b1, t.n);
        LocalTensor<uint8_t> m = ub<uint8_t>(pipe, b2, t.n / 8 < 32 ? 32 : t.n / 8);
        DataCopy(x, ga, t.n);
        DataCopy(y, gb, t.n);
        if (TILING_KEY_IS(8)) {
            Compare(m, x, y, (CMPMODE)t.p0, t.n);
            Select(x, m, x, y, SELMODE::VSEL_TENSOR_TENSOR_MODE, t.n);
        } else {
            CompareScalar(m, x, t.f0, (CMPMODE)t.p0, t.n);
            Select(x, m, y, t.f0, SELMODE::VSEL_TENSOR_SCALAR_MODE, t.n);
        }
        DataCopy(gout, x, t.n);
    } else if (TILING_KEY_IS(10)) {  // level-2 math and reductions
        LocalTensor<float> x = ub<float>(pipe, b0, t.n), y = ub<float>(pipe, b1, t.n), z = ub<float>(pipe, b2, t.n);
        DataCopy(x, ga, t.n);
        DataCopy(y, gb, t.n);
        Duplicate(z, 0.0f, t.n);
        const int32_t n = (int32_t)t.p1;
        switch (t.p0) {
            case 0: Exp(z, x, n); break;
            case 1: Ln(z, x, n); break;
            case 2: Sqrt(z, x, n); break;
            case 3: Abs(z, x, n); break;
            case 4: Reciprocal(z, x, n); break;
            case 5: Sub(z, x, y, n); break;
            case 6: Div(z, x, y, n); break;
            case 7: Min(z, x, y, n); break;
            case 8: ReduceSum(z, x, y, n); break;
            case 9: ReduceMax(z, x, y, n, true); break;
            case 10: ReduceMin(z, x, y, n, true); break;
            case 11: LeakyRelu(z, x, t.f0, n); break;
            case 12: Muls(z, x, t.f0, n); break;
        }
        DataCopy(gout, z, t.n);
    } else if (TILING_KEY_IS(11)) {  // SetAtomicAdd: every block adds a into out
        LocalTensor<float> x = ub<float>(pipe, b0, t.n);
        DataCopy(x, ga, t.n);
        SetAtomicAdd<float>();
        DataCopy(gout, x, t.n);
        SetAtomicNone();
    } else if (TILING_KEY_IS(12)) {  // SyncAll over a workspace table
        __gm__ int32_t *table = (__gm__ int32_t *)GetUserWorkspace(workspace);
        __gm__ int32_t *o = (__gm__ int32_t *)out;
        const int64_t me = GetBlockIdx(), blocks = GetBlockNum();
        table[me] = (int32_t)(me * 10);
        SyncAll();
        int32_t s = 0;
        for (int64_t i = 0; i < blocks; ++i) s += table[i];
        o[me] = s;
    } else if (TILING_KEY_IS(13)) {  // printf and DumpTensor
        LocalTensor<float> x = ub<float>(pipe, b0, 8);
        DataCopy(x, ga, 8);
        AscendC::printf("block %lld says %d\n", (long long)GetBlockIdx(), 42);
        DumpTensor(x, 7, 4);
    } else if (TILING_KEY_IS(14)) {  // scalar helpers
        __gm__ int64_t *o = (__gm__ int64_t *)out;
        o[0] = DivCeil(t.p0, t.p1);
        o[1] = CeilDiv(t.p0, t.p1);
        o[2] = AlignUp(t.p0, t.p1);
        o[3] = 0;
        if ASCEND_IS_AIV { o[3] += 1; }
        if ASCEND_IS_AIC { o[3] += 2; }
        int64_t c0 = GetSystemCycle(), c1 = GetSystemCycle();
        o[4] = c1 >= c0;
        o[5] = ONE_BLK_SIZE * 1000 + ONE_REPEAT_BYTE_SIZE;
        o[6] = IsSameType<half, half>::value + 2 * IsSameType<half, float>::value;
        o[7] = (int64_t)(ToFloat(ToBfloat16(2.5f)) * 10) + DEFAULT_REPEAT_STRIDE * 1000;
    }
}
"""

FIELDS = [("uint32_t", f) for f in ("n", "p0", "p1", "p2", "p3", "p4", "p5")] + [("float", "f0")]


@pytest.fixture(scope="module")
def k(tmp_path_factory):
    spec = ackit.KernelSpec("apis", KERNEL, "apis", 5, FIELDS)
    return ackit.build(tmp_path_factory.mktemp("ascendc_apis"), [spec])["apis"]


def run(k, key, a, b=None, out=None, blocks=1, workspace=0, intercore_sync=False, **p):
    n = a.size
    vals = dict(n=n, p0=0, p1=0, p2=0, p3=0, p4=0, p5=0, f0=0.0) | p
    b = np.zeros(n, np.float32) if b is None else b
    out = np.zeros(n, np.float32) if out is None else out
    (got,) = k.run([a, b], [out], blocks, k.tiling(key, **vals), workspace=workspace, intercore_sync=intercore_sync)
    return got


N = 512
A = np.arange(N, dtype=np.float32) + 1


# ---- DataCopy / DataCopyPad ---------------------------------------------------------------------


@pytest.mark.parametrize("count,blen,sgap,dgap", [(1, 1, 0, 0), (3, 2, 1, 0), (4, 1, 0, 2), (2, 3, 2, 1), (5, 1, 3, 3)])
def test_datacopy_params_gm_to_ub(k, count, blen, sgap, dgap):
    check_params_gm_to_ub(k, A, count, blen, sgap, dgap)


def check_params_gm_to_ub(k, a, count, blen, sgap, dgap):
    got = run(k, 1, a, p0=count, p1=blen, p2=sgap, p3=dgap)
    expect = np.full(a.size, -1, np.float32)
    for i in range(count):  # 8 floats per 32-byte unit
        expect[i * (blen + dgap) * 8:][:blen * 8] = a[i * (blen + sgap) * 8:][:blen * 8]
    np.testing.assert_array_equal(got, expect)


@pytest.mark.parametrize("count,blen,sgap,dgap", [(1, 2, 0, 0), (3, 1, 1, 2), (2, 2, 0, 1)])
def test_datacopy_params_ub_to_gm(k, count, blen, sgap, dgap):
    out = np.full(N, 7, np.float32)
    got = run(k, 2, A, out=out, p0=count, p1=blen, p2=sgap, p3=dgap)
    expect = out.copy()
    for i in range(count):
        expect[i * (blen + dgap) * 8:][:blen * 8] = A[i * (blen + sgap) * 8:][:blen * 8]
    np.testing.assert_array_equal(got, expect)


PAD_CASES = [(1, 28, 0, 0, 0, 0, 0), (3, 12, 4, 1, 1, 1 | 2 << 8, 0), (2, 20, 8, 0, 1, 3 << 8, 0), (4, 4, 0, 2, 0, 0, 0),
             (2, 36, 4, 0, 1, 1 | 2 << 8, 0), (1, 32, 0, 0, 1, 0, 0)]


@pytest.mark.parametrize("count,blen,sgap,dgap,is_pad,lr,_", PAD_CASES)
def test_datacopypad_gm_to_ub(k, count, blen, sgap, dgap, is_pad, lr, _):
    check_pad_gm_to_ub(k, A, count, blen, sgap, dgap, is_pad, lr)


def check_pad_gm_to_ub(k, a, count, blen, sgap, dgap, is_pad, lr):
    """In UB each block starts 32-byte aligned, after leftPadding elements; its slot is left +
    blockLen + right rounded up to 32 bytes, then dstStride 32-byte units of gap."""
    left, right, value = lr & 0xFF, lr >> 8, 9.5
    got = run(k, 3, a, p0=count, p1=blen, p2=sgap, p3=dgap, p4=is_pad, p5=lr, f0=value)
    expect = np.full(a.size, -1, np.float32)
    slot = -(-(4 * left + blen + 4 * right) // 32) * 32
    for i in range(count):
        row = i * (slot + dgap * 32) // 4
        src = i * (blen + sgap) // 4
        expect[row + left:row + left + blen // 4] = a[src:src + blen // 4]
        if is_pad:
            expect[row:row + left] = value
            expect[row + left + blen // 4:row + left + blen // 4 + right] = value
    np.testing.assert_array_equal(got, expect)


# GM -> UB copies of 4096 bytes and more read their source as four streams (kernel_copy.h, copy_in):
# whole and partial 128-byte rounds, through each form of the copy.
BIG = np.arange(4096, dtype=np.float32) + 1


@pytest.mark.parametrize("n", [1024, 1032, 4104, 12000])
def test_datacopy_large_contiguous(k, n):
    a = np.arange(n, dtype=np.float32) + 1
    np.testing.assert_array_equal(run(k, 2, a, p0=1, p1=n // 8), a)


@pytest.mark.parametrize("count,blen,sgap,dgap", [(2, 200, 3, 1), (1, 129, 0, 0)])
def test_datacopy_params_large_gm_to_ub(k, count, blen, sgap, dgap):
    check_params_gm_to_ub(k, BIG, count, blen, sgap, dgap)


@pytest.mark.parametrize("count,blen,sgap,dgap,is_pad,lr", [(2, 4100, 8, 1, 1, 1 | 2 << 8), (1, 8000, 0, 0, 0, 0)])
def test_datacopypad_large_gm_to_ub(k, count, blen, sgap, dgap, is_pad, lr):
    check_pad_gm_to_ub(k, BIG, count, blen, sgap, dgap, is_pad, lr)


@pytest.mark.parametrize("count,blen,sgap,dgap", [(1, 28, 0, 0), (3, 12, 1, 4), (2, 40, 0, 8), (4, 4, 2, 0)])
def test_datacopypad_ub_to_gm(k, count, blen, sgap, dgap):
    """UB blocks are 32-byte aligned (srcStride: 32-byte units of gap), GM blocks blockLen bytes
    apart plus dstStride bytes."""
    out = np.full(N, 7, np.float32)
    got = run(k, 4, A, out=out, p0=count, p1=blen, p2=sgap, p3=dgap)
    expect = out.copy()
    slot = -(-blen // 32) * 32
    for i in range(count):
        dst, src = i * (blen + dgap) // 4, i * (slot + sgap * 32) // 4
        expect[dst:dst + blen // 4] = A[src:src + blen // 4]
    np.testing.assert_array_equal(got, expect)


# ---- Cast ---------------------------------------------------------------------------------------

MODES = {"CAST_NONE": 0, "CAST_RINT": 1, "CAST_FLOOR": 2, "CAST_CEIL": 3, "CAST_ROUND": 4, "CAST_TRUNC": 5, "CAST_ODD": 6}


def round_to(x: np.ndarray, mode: str, to) -> np.ndarray:
    """The reference: neighbours lo <= x <= hi in `to` (a numpy float type or 'int32')."""
    x64 = x.astype(np.float64)
    if to == "int32":
        f = {"CAST_NONE": np.rint, "CAST_RINT": np.rint, "CAST_FLOOR": np.floor, "CAST_CEIL": np.ceil,
             "CAST_ROUND": lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5), "CAST_TRUNC": np.trunc,
             "CAST_ODD": np.rint}[mode]
        return np.clip(f(x64), -2**31, 2**31 - 1).astype(np.int32)
    near = x64.astype(to)
    up = np.where(near.astype(np.float64) < x64, np.nextafter(near, to(np.inf)), near)
    dn = np.where(near.astype(np.float64) > x64, np.nextafter(near, to(-np.inf)), near)
    if mode in ("CAST_NONE", "CAST_RINT"):
        return near
    if mode == "CAST_FLOOR":
        return dn
    if mode == "CAST_CEIL":
        return up
    if mode == "CAST_TRUNC":
        return np.where(x64 > 0, dn, up)
    if mode == "CAST_ODD":
        bits = dn.view(np.uint16 if to == np.float16 else np.uint32)
        return np.where(dn == up, near, np.where(bits & 1 == 1, dn, up))
    tie = (x64 - dn.astype(np.float64)) == (up.astype(np.float64) - x64)
    return np.where(tie & (dn != up), np.where(x64 > 0, up, dn), near)


def cast_inputs() -> np.ndarray:
    rng = np.random.default_rng(3)
    halves = np.arange(-8, 8, 0.25, dtype=np.float32)  # exact ties for int rounding
    h16 = np.float16(1.0) + np.arange(64, dtype=np.float16) * np.finfo(np.float16).eps
    mids = ((h16[:-1].astype(np.float32) + h16[1:].astype(np.float32)) / 2)  # exact ties for half
    x = np.concatenate([halves, mids, -mids, rng.standard_normal(N).astype(np.float32) * 100,
                        np.float32([65504, 65520, 1e-8, -1e-8, 0])])
    return x[:N] if x.size >= N else np.pad(x, (0, N - x.size))


@pytest.mark.parametrize("mode", MODES)
def test_cast_float_to_half(k, mode):
    x = cast_inputs()
    got = run(k, 5, x, p0=MODES[mode]).view(np.float16)[:N]
    np.testing.assert_array_equal(got.view(np.uint16), round_to(x, mode, np.float16).view(np.uint16))


@pytest.mark.parametrize("mode", MODES)
def test_cast_float_to_int32(k, mode):
    x = np.concatenate([cast_inputs()[:N - 4], np.float32([3e9, -3e9, np.nan, 2.5])])
    got = run(k, 6, x, p0=MODES[mode]).view(np.int32)
    expect = round_to(np.nan_to_num(x, nan=0.0), mode, "int32")
    np.testing.assert_array_equal(got, expect)


def test_cast_float_to_bf16_rint_and_trunc(k):
    x = cast_inputs()
    rint = run(k, 7, x, p0=MODES["CAST_RINT"])
    u = x.view(np.uint32).astype(np.uint64)
    np.testing.assert_array_equal(rint.view(np.uint32), ((u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16).astype(np.uint32))
    trunc = run(k, 7, x, p0=MODES["CAST_TRUNC"])
    np.testing.assert_array_equal(trunc.view(np.uint32), x.view(np.uint32) & 0xFFFF0000)


# ---- Compare / Select ---------------------------------------------------------------------------

CMP = {"LT": np.less, "GT": np.greater, "EQ": np.equal, "LE": np.less_equal, "GE": np.greater_equal, "NE": np.not_equal}


@pytest.mark.parametrize("mode", CMP)
def test_compare_select(k, mode):
    rng = np.random.default_rng(4)
    x = rng.integers(-3, 3, N).astype(np.float32)
    y = rng.integers(-3, 3, N).astype(np.float32)
    got = run(k, 8, x, y, p0=list(CMP).index(mode))
    np.testing.assert_array_equal(got, np.where(CMP[mode](x, y), x, y))
    got = run(k, 9, x, y, p0=list(CMP).index(mode), f0=1.0)
    np.testing.assert_array_equal(got, np.where(CMP[mode](x, np.float32(1)), y, np.float32(1)))


# ---- level-2 math and reductions ----------------------------------------------------------------


@pytest.mark.parametrize("op,fn", [(0, np.exp), (1, np.log), (2, np.sqrt), (3, np.abs), (4, lambda x: 1 / x)])
def test_unary_math(k, op, fn):
    x = np.random.default_rng(op).uniform(0.1, 5, N).astype(np.float32) * (1 if op != 3 else -1)
    n = 200
    got = run(k, 10, x, p0=op, p1=n)
    np.testing.assert_allclose(got[:n], fn(x[:n]).astype(np.float32), rtol=2e-7)
    assert (got[n:] == 0).all()


@pytest.mark.parametrize("op,fn", [(5, np.subtract), (6, np.divide), (7, np.minimum)])
def test_binary_math(k, op, fn):
    rng = np.random.default_rng(op)
    x, y = rng.uniform(-5, 5, N).astype(np.float32), rng.uniform(0.5, 5, N).astype(np.float32)
    got = run(k, 10, x, y, p0=op, p1=N)
    np.testing.assert_array_equal(got, fn(x, y))


@pytest.mark.parametrize("n", [1, 64, 100, 512])
def test_reduce_sum_max_min(k, n):
    x = np.random.default_rng(n).standard_normal(N).astype(np.float32)
    got = run(k, 10, x, p0=8, p1=n)
    np.testing.assert_allclose(got[0], x[:n].astype(np.float64).sum(), rtol=1e-6)
    for op, arg in ((9, np.argmax), (10, np.argmin)):
        got = run(k, 10, x, p0=op, p1=n)
        i = int(arg(x[:n]))
        assert got[0] == x[i] and got[1:2].view(np.uint32)[0] == i


def test_leaky_relu_and_muls(k):
    x = np.random.default_rng(9).standard_normal(N).astype(np.float32)
    got = run(k, 10, x, p0=11, p1=N, f0=0.25)
    np.testing.assert_array_equal(got, np.where(x >= 0, x, x * np.float32(0.25)))
    got = run(k, 10, x, p0=12, p1=N, f0=-3.0)
    np.testing.assert_array_equal(got, x * np.float32(-3))


# ---- atomics, sync, workspace, debug, helpers ---------------------------------------------------


@pytest.mark.parametrize("blocks", [1, 5, 8])
def test_atomic_add_across_blocks(k, blocks):
    out = np.full(N, 0.5, np.float32)
    got = run(k, 11, A, out=out, blocks=blocks)
    np.testing.assert_array_equal(got, out + blocks * A)


def test_sync_all_and_user_workspace(k):
    blocks = 6
    got = run(k, 12, A, blocks=blocks, workspace=4 * blocks, intercore_sync=True).view(np.int32)
    assert got[:blocks].tolist() == [10 * sum(range(blocks))] * blocks


def test_printf_and_dump_tensor(k, capfd):
    run(k, 13, A, blocks=2)
    out = capfd.readouterr().out
    assert "block 0 says 42" in out and "block 1 says 42" in out
    assert "DumpTensor: block 1, desc 7, UB, 4 elements: 1 2 3 4" in out


def test_scalar_helpers(k):
    got = run(k, 14, A, p0=70, p1=32).view(np.int64)
    assert got[:8].tolist() == [3, 3, 96, 1, 1, 32256, 1, 8025]
