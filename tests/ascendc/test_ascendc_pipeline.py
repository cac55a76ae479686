"""Ascend C kernels in the style of the public vector samples, built with kernel_operator.h and
run block-per-thread on the device simulator, checked against numpy.

In-house kernels (not the samples): a double-buffered elementwise add (TPipe, TQue, GlobalTensor,
DataCopy, Add) in fp32/fp16/bf16, a leaky ReLU made of Maxs/Mins/Muls/Add over TBuf temporaries,
an N-input add over a ListTensorDesc list, and a reduction with five tiling keys over level-0
WholeReduceSum/BlockReduceSum/Add in normal and counter mask modes.
"""

from __future__ import annotations


import numpy as np
import pytest

import ackit
from opbuild.abi.tensor_list import tensor_list_words

ELEMWISE = r"""
#include "kernel_operator.h"

namespace {
constexpr int32_t kDepth = 2;

class TileAdd {
public:
    __aicore__ inline void Setup(GM_ADDR a, GM_ADDR b, GM_ADDR c, uint32_t total, uint32_t tiles) {
        per_block_ = total / AscendC::GetBlockNum();
        tiles_ = tiles * kDepth;
        tile_ = per_block_ / tiles_;
        uint64_t first = (uint64_t)per_block_ * AscendC::GetBlockIdx();
        ga_.SetGlobalBuffer((__gm__ DTYPE_X *)a + first, per_block_);
        gb_.SetGlobalBuffer((__gm__ DTYPE_X *)b + first, per_block_);
        gc_.SetGlobalBuffer((__gm__ DTYPE_X *)c + first, per_block_);
        pipe_.InitBuffer(qa_, kDepth, tile_ * sizeof(DTYPE_X));
        pipe_.InitBuffer(qb_, kDepth, tile_ * sizeof(DTYPE_X));
        pipe_.InitBuffer(qc_, kDepth, tile_ * sizeof(DTYPE_X));
    }
    __aicore__ inline void Run() {
        for (uint32_t t = 0; t < tiles_; ++t) {
            Load(t);
            Sum();
            Store(t);
        }
    }

private:
    __aicore__ inline void Load(uint32_t t) {
        AscendC::LocalTensor<DTYPE_X> la = qa_.AllocTensor<DTYPE_X>(), lb = qb_.AllocTensor<DTYPE_X>();
        AscendC::DataCopy(la, ga_[t * tile_], tile_);
        AscendC::DataCopy(lb, gb_[t * tile_], tile_);
        qa_.EnQue(la);
        qb_.EnQue(lb);
    }
    __aicore__ inline void Sum() {
        AscendC::LocalTensor<DTYPE_X> la = qa_.DeQue<DTYPE_X>(), lb = qb_.DeQue<DTYPE_X>();
        AscendC::LocalTensor<DTYPE_X> lc = qc_.AllocTensor<DTYPE_X>();
        AscendC::Add(lc, la, lb, tile_);
        qc_.EnQue<DTYPE_X>(lc);
        qa_.FreeTensor(la);
        qb_.FreeTensor(lb);
    }
    __aicore__ inline void Store(uint32_t t) {
        AscendC::LocalTensor<DTYPE_X> lc = qc_.DeQue<DTYPE_X>();
        AscendC::DataCopy(gc_[t * tile_], lc, tile_);
        qc_.FreeTensor(lc);
    }
    AscendC::TPipe pipe_;
    AscendC::TQue<AscendC::TPosition::VECIN, kDepth> qa_, qb_;
    AscendC::TQue<AscendC::TPosition::VECOUT, kDepth> qc_;
    AscendC::GlobalTensor<DTYPE_X> ga_, gb_, gc_;
    uint32_t per_block_ = 0, tiles_ = 0, tile_ = 0;
};
}  // namespace

extern "C" __global__ __aicore__ void tile_add(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling) {
    GET_TILING_DATA(td, tiling);
    TileAdd k;
    k.Setup(a, b, c, td.totalLength, td.tileNum);
    k.Run();
}
"""

LEAKY = r"""
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void leaky(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
    GET_TILING_DATA_WITH_STRUCT(leaky_tiling, td, tiling);
    GET_TILING_DATA_MEMBER(leaky_tiling, slope, slope, tiling);
    const uint32_t per = td.totalLength / GetBlockNum(), tile = per / td.tileNum;
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float *)x + per * GetBlockIdx(), per);
    gy.SetGlobalBuffer((__gm__ float *)y + per * GetBlockIdx(), per);
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qin;
    TQue<QuePosition::VECOUT, 1> qout;
    TBuf<TPosition::VECCALC> pos, neg;
    pipe.InitBuffer(qin, 1, tile * sizeof(float));
    pipe.InitBuffer(qout, 1, tile * sizeof(float));
    pipe.InitBuffer(pos, tile * sizeof(float));
    pipe.InitBuffer(neg, tile * sizeof(float));
    for (uint32_t t = 0; t < td.tileNum; ++t) {
        LocalTensor<float> in = qin.AllocTensor<float>();
        DataCopy(in, gx[t * tile], tile);
        qin.EnQue(in);
        in = qin.DeQue<float>();
        LocalTensor<float> out = qout.AllocTensor<float>();
        LocalTensor<float> p = pos.Get<float>(), n = neg.Get<float>();
        Maxs(p, in, 0.0f, tile);
        Mins(n, in, 0.0f, tile);
        Muls(n, n, slope, tile);
        Add(out, p, n, tile);
        qout.EnQue(out);
        qin.FreeTensor(in);
        out = qout.DeQue<float>();
        DataCopy(gy[t * tile], out, tile);
        qout.FreeTensor(out);
    }
}
"""

ADDN = r"""
#include "kernel_operator.h"
#include "kernel_operator_list_tensor_intf.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void sum_list(GM_ADDR list, GM_ADDR z, GM_ADDR workspace, GM_ADDR tiling) {
    GET_TILING_DATA(td, tiling);
    ListTensorDesc desc((__gm__ void *)list);
    ASSERT(desc.GetSize() >= 1 && "an empty list");
    const uint32_t per = td.totalLength / GetBlockNum();
    TPipe pipe;
    TQue<TPosition::VECIN, 2> qin;
    TQue<TPosition::VECOUT, 1> qacc;
    pipe.InitBuffer(qin, 2, per * sizeof(half));
    pipe.InitBuffer(qacc, 1, per * sizeof(half));
    LocalTensor<half> acc = qacc.AllocTensor<half>();
    for (uint32_t i = 0; i < desc.GetSize(); ++i) {
        GlobalTensor<half> g;
        g.SetGlobalBuffer(desc.GetDataPtr<half>(i) + per * GetBlockIdx(), per);
        LocalTensor<half> in = qin.AllocTensor<half>();
        DataCopy(in, g, per);
        qin.EnQue(in);
        in = qin.DeQue<half>();
        if (i == 0)
            DataCopy(acc, in, per);
        else
            Add(acc, acc, in, per);
        qin.FreeTensor(in);
    }
    uint64_t shape[8] = {0};
    TensorDesc<half> last;
    last.SetShapeAddr(shape);
    desc.GetDesc(last, desc.GetSize() - 1);
    ASSERT(last.GetDim() == 1 && last.GetShape(0) == td.totalLength);
    GlobalTensor<half> gz;
    gz.SetGlobalBuffer((__gm__ half *)z + per * GetBlockIdx(), per);
    DataCopy(gz, acc, per);
    qacc.FreeTensor(acc);
}
"""

REDUCE = r"""
#include "kernel_operator.h"

#define KEY_ONE_REPEAT 1
#define KEY_BLOCK_THEN_WHOLE 2
#define KEY_WHOLE_TWICE 3
#define KEY_WHOLE_LOOP 4
#define KEY_HALVING 5

using namespace AscendC;

namespace {
constexpr uint32_t kPerRepeat = 64;  // floats in 256 bytes

template <int Key>
__aicore__ inline void Reduce(LocalTensor<float> &out, LocalTensor<float> &in, LocalTensor<float> &tmp, uint32_t n) {
    if constexpr (Key == KEY_ONE_REPEAT) {
        WholeReduceSum<float>(out, in, (int32_t)n, 1, 1, 1, 8);
    } else if constexpr (Key == KEY_BLOCK_THEN_WHOLE) {
        SetMaskCount();
        SetVectorMask<float>(0, n);
        BlockReduceSum<float, false>(tmp, in, 1, MASK_PLACEHOLDER, 1, 1, 8);
        PipeBarrier<PIPE_V>();
        SetVectorMask<float>(0, DivCeil(n, 8u));
        WholeReduceSum<float, false>(out, tmp, 1, MASK_PLACEHOLDER, 1, 1, 8);
        SetMaskNorm();
    } else if constexpr (Key == KEY_WHOLE_TWICE) {
        SetMaskCount();
        SetVectorMask<float>(0, n);
        WholeReduceSum<float, false>(tmp, in, 1, MASK_PLACEHOLDER, 1, 1, 8);
        SetVectorMask<float>(0, CeilDiv(n, kPerRepeat));
        WholeReduceSum<float, false>(out, tmp, 1, MASK_PLACEHOLDER, 1, 1, 8);
        SetMaskNorm();
    } else if constexpr (Key == KEY_WHOLE_LOOP) {
        SetMaskCount();
        LocalTensor<float> src = in;
        uint32_t left = n;
        do {
            SetVectorMask<uint8_t, MaskMode::COUNTER>(0, left);
            WholeReduceSum<float, false>(out, src, MASK_PLACEHOLDER, 1, 1, 1, 8);
            left = DivCeil(left, kPerRepeat);
            src = out;
        } while (left > 1);
        ResetMask();
        SetMaskNorm();
    } else {
        BinaryRepeatParams params;  // in place: in[i] += in[half + i], the rest of in[0, half) kept
        SetMaskCount();
        uint32_t left = n;
        while (left > kPerRepeat) {
            uint32_t half_n = AlignUp(DivCeil(left, 2u), 8u);
            SetVectorMask<uint8_t, MaskMode::COUNTER>(0, left - half_n);
            Add<float, false>(in, in, in[half_n], MASK_PLACEHOLDER, 1, params);
            left = half_n;
        }
        SetVectorMask<uint8_t, MaskMode::COUNTER>(0, left);
        WholeReduceSum<float, false>(out, in, MASK_PLACEHOLDER, 1, 1, 1, 8);
        ResetMask();
        SetMaskNorm();
    }
}

template <int Key>
__aicore__ inline void Run(GM_ADDR x, GM_ADDR z, uint32_t n, uint32_t out_n) {
    TPipe pipe;
    TQue<TPosition::VECIN, 1> qin;
    TQue<TPosition::VECOUT, 1> qout;
    TBuf<TPosition::VECCALC> scratch;
    pipe.InitBuffer(qin, 1, n * sizeof(float));
    pipe.InitBuffer(qout, 1, out_n * sizeof(float));
    pipe.InitBuffer(scratch, n * sizeof(float));
    GlobalTensor<float> gx, gz;
    gx.SetGlobalBuffer((__gm__ float *)x, n);
    gz.SetGlobalBuffer((__gm__ float *)z, out_n);
    LocalTensor<float> in = qin.AllocTensor<float>();
    DataCopy(in, gx, n);
    qin.EnQue(in);
    in = qin.DeQue<float>();
    LocalTensor<float> out = qout.AllocTensor<float>(), tmp = scratch.Get<float>();
    Reduce<Key>(out, in, tmp, n);
    qout.EnQue(out);
    qin.FreeTensor(in);
    out = qout.DeQue<float>();
    DataCopy(gz, out, out_n);
    qout.FreeTensor(out);
}
}  // namespace

extern "C" __global__ __aicore__ void reduce_keys(GM_ADDR x, GM_ADDR z, GM_ADDR workspace, GM_ADDR tiling) {
    GET_TILING_DATA(td, tiling);
    if (TILING_KEY_IS(KEY_ONE_REPEAT)) Run<KEY_ONE_REPEAT>(x, z, td.totalLength, td.outLength);
    else if (TILING_KEY_IS(KEY_BLOCK_THEN_WHOLE)) Run<KEY_BLOCK_THEN_WHOLE>(x, z, td.totalLength, td.outLength);
    else if (TILING_KEY_IS(KEY_WHOLE_TWICE)) Run<KEY_WHOLE_TWICE>(x, z, td.totalLength, td.outLength);
    else if (TILING_KEY_IS(KEY_WHOLE_LOOP)) Run<KEY_WHOLE_LOOP>(x, z, td.totalLength, td.outLength);
    else if (TILING_KEY_IS(KEY_HALVING)) Run<KEY_HALVING>(x, z, td.totalLength, td.outLength);
}
"""

LIST_PROBE = r"""
#include "kernel_operator.h"
#include "kernel_operator_list_tensor_intf.h"

// out: size, then per tensor: index, dim, its dims, its data pointer, and the C API's view of it
extern "C" __global__ __aicore__ void list_probe(GM_ADDR list, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling) {
    AscendC::ListTensorDesc desc;
    desc.Init((__gm__ void *)list);
    __gm__ uint64_t *o = (__gm__ uint64_t *)out;
    *o++ = desc.GetSize();
    for (uint32_t i = 0; i < desc.GetSize(); ++i) {
        uint64_t shape[16];
        AscendC::TensorDesc<float> t;
        t.SetShapeAddr(shape);
        desc.GetDesc(t, i);
        *o++ = t.GetIndex();
        *o++ = t.GetDim();
        for (uint64_t k = 0; k < t.GetDim(); ++k) *o++ = t.GetShape(k);
        *o++ = (uint64_t)(uintptr_t)desc.GetDataPtr<float>(i);
        *o++ = (uint64_t)(uintptr_t)t.GetDataObj().GetPhyAddr() == (uint64_t)(uintptr_t)opbuild_list_item(list, i);
    }
    *o++ = opbuild_list_count(list);
}
"""

TILE = [("uint32_t", "totalLength"), ("uint32_t", "tileNum")]
DTYPES = {"float": np.float32, "half": np.float16}


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    specs = [ackit.KernelSpec(f"tile_add_{c}", ELEMWISE, "tile_add", 5, TILE, {"DTYPE_X": c})
             for c in ("float", "half", "bfloat16_t")]
    specs += [
        ackit.KernelSpec("leaky", LEAKY, "leaky", 4, TILE + [("float", "slope")]),
        ackit.KernelSpec("sum_list", ADDN, "sum_list", 4, TILE),
        ackit.KernelSpec("list_probe", LIST_PROBE, "list_probe", 4, []),
        ackit.KernelSpec("reduce_keys", REDUCE, "reduce_keys", 4, [("uint32_t", "totalLength"), ("uint32_t", "outLength")]),
    ]
    return ackit.build(tmp_path_factory.mktemp("ascendc_pipeline"), specs)


def bf16_round(x: np.ndarray) -> np.ndarray:
    """float32 -> the nearest bfloat16 (ties to even), as float32."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16
    return u.astype(np.uint32).view(np.float32)


@pytest.mark.parametrize("blocks,total,tiles", [(1, 2048, 1), (8, 8 * 2048, 8), (3, 3 * 512, 4)])
@pytest.mark.parametrize("ctype", ["float", "half"])
def test_tile_add(kernels, ctype, blocks, total, tiles):
    dt = DTYPES[ctype]
    rng = np.random.default_rng(total)
    x, y = (rng.standard_normal(total).astype(dt) for _ in range(2))
    k = kernels[f"tile_add_{ctype}"]
    (z,) = k.run([x, y], [np.zeros(total, dt)], blocks, k.tiling(totalLength=total, tileNum=tiles))
    np.testing.assert_array_equal(z, x + y)  # numpy's half add is float32 then one rounding, as the twin's


def test_tile_add_streaming(kernels):
    """32 MB written through one GlobalTensor per block: every UB -> GM copy streams (kernel_copy.h,
    kStreamLaunchBytes), the last tiles of a block too (gc_[t * tile_] keeps the buffer's size)."""
    blocks, total, tiles = 8, 8 << 20, 128
    rng = np.random.default_rng(5)
    x, y = (rng.standard_normal(total).astype(np.float32) for _ in range(2))
    k = kernels["tile_add_float"]
    (z,) = k.run([x, y], [np.full(total, np.nan, np.float32)], blocks, k.tiling(totalLength=total, tileNum=tiles))
    np.testing.assert_array_equal(z, x + y)


def test_tile_add_bf16(kernels):
    total, rng = 8 * 1024, np.random.default_rng(7)
    x, y = (bf16_round(rng.standard_normal(total).astype(np.float32)) for _ in range(2))
    bits = lambda a: (a.view(np.uint32) >> 16).astype(np.uint16)  # noqa: E731
    k = kernels["tile_add_bfloat16_t"]
    (z,) = k.run([bits(x), bits(y)], [np.zeros(total, np.uint16)], 4, k.tiling(totalLength=total, tileNum=2))
    got = (z.astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_array_equal(got, bf16_round(x + y))


@pytest.mark.parametrize("slope", [0.0, 0.1, -2.5])
def test_leaky(kernels, slope):
    total, blocks = 8 * 4096, 8
    x = np.random.default_rng(1).standard_normal(total).astype(np.float32)
    k = kernels["leaky"]
    (y,) = k.run([x], [np.zeros(total, np.float32)], blocks, k.tiling(totalLength=total, tileNum=4, slope=slope))
    expect = np.maximum(x, 0) + np.float32(slope) * np.minimum(x, 0)
    np.testing.assert_array_equal(y, expect)


def list_desc(buffers, shapes) -> np.ndarray:
    """The runtime's launch argument of a tensor list (CANN's layout, opbuild/abi/tensor_list.py)."""
    return np.array(tensor_list_words([b.address for b in buffers], shapes), dtype=np.uint64)


@pytest.mark.parametrize("n_inputs", [1, 2, 5])
def test_sum_list(kernels, n_inputs):
    from opbuild.runtime import device

    total, blocks = 4 * 1024, 4
    rng = np.random.default_rng(n_inputs)
    xs = [rng.standard_normal(total).astype(np.float16) for _ in range(n_inputs)]
    bufs = [device.upload(x) for x in xs]
    desc = device.upload(list_desc(bufs, [(total,)] * n_inputs))
    k = kernels["sum_list"]
    (z,) = k.run([], [np.zeros(total, np.float16)], blocks, k.tiling(totalLength=total, tileNum=1), raw=[desc])
    expect = xs[0]
    for x in xs[1:]:
        expect = expect + x
    np.testing.assert_array_equal(z, expect)


# n * 4 bytes a multiple of 32 (DataCopy); key 2 sums up to 64 blocks of 8 (n <= 512), key 3 up to
# 64 repeats of 64 (n <= 4096)
@pytest.mark.parametrize("key,n", [(1, 64), (1, 40), (2, 8), (2, 504), (2, 512), (3, 64), (3, 4000), (4, 104),
                                   (4, 4096), (4, 8192), (5, 64), (5, 72), (5, 4096), (5, 6000)])
def test_reduce_keys(kernels, key, n):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    reps = -(-n // 64)  # key 4 keeps its first partial sums (one per repeat) in the output
    out_n = 8 if key != 4 else max(8, -(-reps // 8) * 8)
    k = kernels["reduce_keys"]
    (z,) = k.run([x], [np.full(out_n, -7, np.float32)], 1, k.tiling(key, totalLength=n, outLength=out_n))
    np.testing.assert_allclose(z[0], x.astype(np.float64).sum(), rtol=1e-5, atol=1e-4)
    if key != 4:  # one result; the rest of the output buffer is UB never written: 0xFF bytes (NaN)
        assert np.isnan(z[1:]).all() and (z[1:].view(np.uint32) == 0xFFFFFFFF).all()


@pytest.mark.parametrize("shapes", [[], [(3,)], [(2, 3), (), (4, 1, 5)], [(7,)] * 6])
def test_list_layout_read_by_kernels(kernels, shapes):
    """What the runtime packs (opbuild.abi.tensor_list) is what ListTensorDesc and the C API's
    opbuild_list_count / opbuild_list_item read back."""
    from opbuild.runtime import device

    bufs = [device.malloc(64) for _ in shapes]
    desc = device.upload(list_desc(bufs, shapes))
    k = kernels["list_probe"]
    (got,) = k.run([], [np.zeros(64, np.uint64)], 1, k.tiling(), raw=[desc])
    expect = [len(shapes)]
    for i, (b, shape) in enumerate(zip(bufs, shapes)):
        expect += [i, len(shape), *shape, b.address, 1]
    expect.append(len(shapes))
    assert got[:len(expect)].tolist() == expect
