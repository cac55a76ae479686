"""Smaller pieces of the kernel API: TQueBind (VECIN -> VECOUT), ReinterpretCast, TPipe::Reset, GetTPipePtr,
events (SetFlag/WaitFlag with FetchEventID), GET_TILING_DATA_PTR_WITH_STRUCT, REGISTER_TILING_DEFAULT,
KERNEL_TASK_TYPE_DEFAULT, bfloat16_t arithmetic, half Compare/Select and WholeReduceMin; a kernel
whose tiling is a plain struct of its own (REGISTER_TILING_DEFAULT + GET_TILING_DATA), with
SetL2CacheHint, DumpTensor with a ShapeInfo and DumpAccChkPoint."""

from __future__ import annotations

import numpy as np
import pytest

import ackit

KERNEL = r"""
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void misc(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
    REGISTER_TILING_DEFAULT(misc_tiling);
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    GET_TILING_DATA_PTR_WITH_STRUCT(misc_tiling, td, tiling);
    const uint32_t n = td->n;
    TPipe pipe;
    GlobalTensor<half> gx, gy;
    gx.SetGlobalBuffer((__gm__ half *)x, n);
    gy.SetGlobalBuffer((__gm__ half *)y, n);
    if (TILING_KEY_IS(1)) {  // TQueBind: the same buffer goes from VECIN to VECOUT; y = x * 2 via bits
        TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> bind;
        pipe.InitBuffer(bind, 1, n * sizeof(half));
        LocalTensor<half> t = bind.AllocTensor<half>();
        DataCopy(t, gx, n);
        event_t ev = pipe.FetchEventID<HardEvent::MTE2_V>();
        SetFlag<HardEvent::MTE2_V>(ev);
        WaitFlag<HardEvent::MTE2_V>(ev);
        bind.EnQue(t);
        t = bind.DeQue<half>();
        LocalTensor<uint16_t> bits = t.ReinterpretCast<uint16_t>();
        ASSERT(bits.GetSize() == n);
        for (uint32_t i = 0; i < n; ++i) {  // +1 in the exponent: * 2 for normal numbers
            uint16_t b = bits.GetValue(i);
            bits.SetValue(i, (uint16_t)(b + 0x0400));
        }
        PipeBarrier<PIPE_ALL>();
        DataCopy(gy, t, n);
        bind.FreeTensor(t);
    } else if (TILING_KEY_IS(2)) {  // TPipe::Reset: the UB can be handed out again; GetTPipePtr
        TBuf<TPosition::VECCALC> a, b;
        pipe.InitBuffer(a, 128 * 1024);
        pipe.Reset();
        GetTPipePtr()->InitBuffer(b, 128 * 1024);
        LocalTensor<half> t = b.Get<half>();
        DataCopy(t, gx, n);
        Adds(t, t, (half)1.0f, n);
        DataCopy(gy, t, n);
    } else if (TILING_KEY_IS(3)) {  // bfloat16_t arithmetic: y (as bf16 bits) = x * 3 - 0.5
        __gm__ bfloat16_t *bx = (__gm__ bfloat16_t *)x, *by = (__gm__ bfloat16_t *)y;
        for (uint32_t i = 0; i < n; ++i) {
            bfloat16_t v = bx[i];
            bfloat16_t r = v * bfloat16_t(3) - 0.5f;
            by[i] = r;
        }
    } else if (TILING_KEY_IS(4)) {  // half Compare + Select: y = max(x, 0.5)
        TBuf<TPosition::VECCALC> a, m;
        pipe.InitBuffer(a, n * sizeof(half));
        pipe.InitBuffer(m, 256);
        LocalTensor<half> t = a.Get<half>();
        LocalTensor<uint8_t> mask = m.Get<uint8_t>();
        DataCopy(t, gx, n);
        CompareScalar(mask, t, (half)0.5f, CMPMODE::GT, n);
        Select(t, mask, t, (half)0.5f, SELMODE::VSEL_TENSOR_SCALAR_MODE, n);
        DataCopy(gy, t, n);
    } else if (TILING_KEY_IS(6)) {  // Gather with byte offsets: y[i] = x[2 + (n - 1 - i) % (n - 2)]; events
        TBuf<TPosition::VECCALC> a, o, idx;
        pipe.InitBuffer(a, n * sizeof(half));
        pipe.InitBuffer(o, n * sizeof(half));
        pipe.InitBuffer(idx, n * sizeof(uint32_t));
        LocalTensor<half> t = a.Get<half>(), r = o.Get<half>();
        LocalTensor<uint32_t> off = idx.Get<uint32_t>();
        DataCopy(t, gx, n);
        for (uint32_t i = 0; i < n; ++i) off.SetValue(i, (n - 1 - i) % (n - 2) * sizeof(half));
        event_t ev = GetTPipePtr()->FetchEventID(HardEvent::S_V);
        SetFlag<HardEvent::S_V>(ev);
        WaitFlag<HardEvent::S_V>(ev);
        TQueSync<PIPE_V, PIPE_MTE3> sync;
        Gather(r, t, off, 2 * sizeof(half), n);
        sync.SetFlag(0);
        sync.WaitFlag(0);
        DataCopy(gy, r, n);
    } else if (TILING_KEY_IS(5)) {  // WholeReduceMin over repeats of 128 halves: (min, index) pairs
        TBuf<TPosition::VECCALC> a, o;
        pipe.InitBuffer(a, n * sizeof(half));
        pipe.InitBuffer(o, n * sizeof(half));
        LocalTensor<half> t = a.Get<half>(), r = o.Get<half>();
        DataCopy(t, gx, n);
        Duplicate(r, (half)0.0f, n);
        WholeReduceMin(r, t, 128, n / 128, 1, 1, 8);
        DataCopy(gy, r, n);
    }
}
"""

OWN_TILING = r"""
#include "kernel_operator.h"

class OwnTiling {  // the kernel's own tiling struct (the force-included header declares another)
public:
    uint32_t n;
    float scale;
};

extern "C" __global__ __aicore__ void own_tiling(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
    REGISTER_TILING_DEFAULT(OwnTiling);
    GET_TILING_DATA(td, tiling);
    AscendC::GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float *)x, td.n);
    gy.SetGlobalBuffer((__gm__ float *)y, td.n);
    gx.SetL2CacheHint(AscendC::CacheMode::CACHE_MODE_DISABLE);
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, td.n * sizeof(float));
    AscendC::LocalTensor<float> t = buf.Get<float>();
    AscendC::DataCopy(t, gx, td.n);
    AscendC::Muls(t, t, td.scale, td.n);
    if (AscendC::GetBlockIdx() == 0) {
        uint32_t shape[2] = {2, 4};
        AscendC::ShapeInfo info(2, shape);
        AscendC::DumpTensor(t, 3, 8, info);
        AscendC::DumpAccChkPoint(t, 4, 2, 3);
    }
    AscendC::DataCopy(gy, t, td.n);
}
"""

N = 512


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    specs = [ackit.KernelSpec("misc", KERNEL, "misc", 4, [("uint32_t", "n")]),
             ackit.KernelSpec("own_tiling", OWN_TILING, "own_tiling", 4, [("uint64_t", "unused")])]
    return ackit.build(tmp_path_factory.mktemp("ascendc_misc"), specs)


@pytest.fixture(scope="module")
def k(kernels):
    return kernels["misc"]


def run(k, key, x):
    (y,) = k.run([x], [np.zeros_like(x)], 2, k.tiling(key, n=x.size))
    return y


def test_que_bind_events_reinterpret(k):
    x = np.random.default_rng(0).uniform(-100, 100, N).astype(np.float16)
    np.testing.assert_array_equal(run(k, 1, x), x * np.float16(2))


def test_pipe_reset(k):
    x = np.random.default_rng(1).standard_normal(N).astype(np.float16)
    np.testing.assert_array_equal(run(k, 2, x), x + np.float16(1))


def _bf16(a: np.ndarray) -> np.ndarray:
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    return (((u + 0x7FFF + ((u >> 16) & 1)) >> 16)).astype(np.uint16)


def test_bfloat16_arithmetic(k):
    x = _bf16(np.random.default_rng(2).standard_normal(N))
    f = (x.astype(np.uint32) << 16).view(np.float32)
    # the expression is float arithmetic (bfloat16_t converts to float), rounded once on assignment
    np.testing.assert_array_equal(run(k, 3, x), _bf16(f * np.float32(3) - np.float32(0.5)))


def test_half_compare_select(k):
    x = np.random.default_rng(3).standard_normal(N).astype(np.float16)
    np.testing.assert_array_equal(run(k, 4, x), np.where(x > np.float16(0.5), x, np.float16(0.5)))


def test_whole_reduce_min_pairs(k):
    x = np.random.default_rng(4).standard_normal(N).astype(np.float16)
    y = run(k, 5, x)
    rows = x.reshape(-1, 128)
    assert y[0:2 * len(rows):2].tolist() == rows.min(axis=1).tolist()
    assert y[1:2 * len(rows):2].view(np.uint16).tolist() == rows.argmin(axis=1).tolist()
    assert (y[2 * len(rows):] == 0).all()


def test_own_tiling_struct_and_dumps(kernels, capfd):
    import struct

    x = np.arange(64, dtype=np.float32)
    tiling = struct.pack("=If", 64, 0.5) + struct.pack("=Q", 0)  # OwnTiling, then the key
    (y,) = kernels["own_tiling"].run([x], [np.zeros_like(x)], 2, tiling)
    np.testing.assert_array_equal(y, x * np.float32(0.5))
    out = capfd.readouterr().out
    assert "DumpTensor: shape (2,4)\nDumpTensor: block 0, desc 3, UB, 8 elements: 0 0.5 1 1.5 2 2.5 3 3.5" in out
    assert "DumpTensor: block 0, desc 4, UB, 3 elements: 1 1.5 2" in out


def test_gather(k):
    x = np.random.default_rng(5).standard_normal(N).astype(np.float16)
    i = np.arange(N)
    np.testing.assert_array_equal(run(k, 6, x), x[2 + (N - 1 - i) % (N - 2)])
