"""Level-0 vector semantics against the documented formulas (kernel_mask.h): normal bit masks and
count masks, counter mode (SetMaskCount + SetVectorMask(0, n)), MASK_PLACEHOLDER (isSetMask
false: the mask register applies), repeatTimes and the block / repeat strides of
BinaryRepeatParams / UnaryRepeatParams; WholeReduceSum, WholeReduceMax and BlockReduceSum.

One probe kernel per dtype runs the call the tiling describes on three UB buffers copied from GM
(dst keeps its initial contents where no lane writes) and the numpy model below predicts every
element of dst. Sweeps are exhaustive over count masks and stride choices, sampled over bit masks.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ackit

PROBE = r"""
#include "kernel_operator.h"
using namespace AscendC;
using T = DTYPE_X;

#define BINARY(F)                                                        \
    do {                                                                 \
        if (!t.setmask) F<T, false>(lo, la, lb, 0, (uint8_t)t.repeat, bp); /* 0: a literal placeholder */ \
        else if (t.contig) F(lo, la, lb, t.mask_lo, (uint8_t)t.repeat, bp); \
        else F(lo, la, lb, bits, (uint8_t)t.repeat, bp);                  \
    } while (0)

extern "C" __global__ __aicore__ void l0probe(GM_ADDR a, GM_ADDR b, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling) {
    GET_TILING_DATA(t, tiling);
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, bo;
    pipe.InitBuffer(ba, t.n * sizeof(T));
    pipe.InitBuffer(bb, t.n * sizeof(T));
    pipe.InitBuffer(bo, t.n * sizeof(T));
    LocalTensor<T> la = ba.Get<T>(), lb = bb.Get<T>(), lo = bo.Get<T>();
    GlobalTensor<T> ga, gb, go;
    ga.SetGlobalBuffer((__gm__ T *)a, t.n);
    gb.SetGlobalBuffer((__gm__ T *)b, t.n);
    go.SetGlobalBuffer((__gm__ T *)out, t.n);
    DataCopy(la, ga, t.n);
    DataCopy(lb, gb, t.n);
    DataCopy(lo, go, t.n);
    if (t.counter) SetMaskCount(); else SetMaskNorm();
    uint64_t bits[2] = {t.mask_lo, t.mask_hi};
    if (!t.setmask) SetVectorMask<T>(t.mask_hi, t.mask_lo);
    BinaryRepeatParams bp(t.dB, t.s0B, t.s1B, t.dR, t.s0R, t.s1R);
    UnaryRepeatParams up(t.dB, t.s0B, t.dR, t.s0R);
    const int32_t m = t.setmask ? (int32_t)t.mask_lo : MASK_PLACEHOLDER;
    switch (t.op) {
        case 0: BINARY(Add); break;
        case 1: BINARY(Mul); break;
        case 2: BINARY(Max); break;
        case 3:
            if (!t.setmask) Relu<T, false>(lo, la, MASK_PLACEHOLDER, (uint8_t)t.repeat, up);
            else if (t.contig) Relu(lo, la, t.mask_lo, (uint8_t)t.repeat, up);
            else Relu(lo, la, bits, (uint8_t)t.repeat, up);
            break;
        case 4:
            if (!t.setmask) Adds<T, false>(lo, la, t.scalar, MASK_PLACEHOLDER, (uint8_t)t.repeat, up);
            else if (t.contig) Adds(lo, la, t.scalar, t.mask_lo, (uint8_t)t.repeat, up);
            else Adds(lo, la, t.scalar, bits, (uint8_t)t.repeat, up);
            break;
        case 5:
            if (!t.setmask) Duplicate<T, false>(lo, t.scalar, MASK_PLACEHOLDER, (uint8_t)t.repeat, t.dB, t.dR);
            else if (t.contig) Duplicate(lo, t.scalar, t.mask_lo, (uint8_t)t.repeat, t.dB, t.dR);
            else Duplicate(lo, t.scalar, bits, (uint8_t)t.repeat, t.dB, t.dR);
            break;
        case 6:
            if (!t.setmask) WholeReduceSum<T, false>(lo, la, MASK_PLACEHOLDER, t.repeat, t.dR, t.s0B, t.s0R);
            else if (t.contig) WholeReduceSum(lo, la, m, t.repeat, t.dR, t.s0B, t.s0R);
            else WholeReduceSum(lo, la, bits, t.repeat, t.dR, t.s0B, t.s0R);
            break;
        case 7:
            if (!t.setmask) BlockReduceSum<T, false>(lo, la, t.repeat, MASK_PLACEHOLDER, t.dR, t.s0B, t.s0R);
            else if (t.contig) BlockReduceSum(lo, la, t.repeat, m, t.dR, t.s0B, t.s0R);
            else BlockReduceSum(lo, la, t.repeat, bits, t.dR, t.s0B, t.s0R);
            break;
        case 8:
            if (t.contig) WholeReduceMax(lo, la, m, t.repeat, t.dR, t.s0B, t.s0R);
            else WholeReduceMax(lo, la, bits, t.repeat, t.dR, t.s0B, t.s0R);
            break;
    }
    SetMaskNorm();
    ResetMask();
    DataCopy(go, lo, t.n);
}
"""

FIELDS = [("uint64_t", "mask_lo"), ("uint64_t", "mask_hi")] + [
    ("uint32_t", f) for f in ("op", "counter", "setmask", "contig", "repeat", "dB", "s0B", "s1B", "dR", "s0R", "s1R", "n")
] + [("float", "scalar")]
N = 1024
DT = {"float": np.float32, "half": np.float16}
OPS = {"Add": 0, "Mul": 1, "Max": 2, "Relu": 3, "Adds": 4, "Duplicate": 5, "WholeReduceSum": 6, "BlockReduceSum": 7,
       "WholeReduceMax": 8}


@pytest.fixture(scope="module")
def probes(tmp_path_factory):
    specs = [ackit.KernelSpec(f"l0probe_{c}", PROBE, "l0probe", 5, FIELDS, {"DTYPE_X": c}) for c in DT]
    return ackit.build(tmp_path_factory.mktemp("ascendc_l0"), specs)


# ---- the model ----------------------------------------------------------------------------------


def active_lanes(dtype, counter, setmask, contig, mask_lo, mask_hi, repeat):
    """[(repeat, lane)] that run, in order (kernel_mask.h)."""
    per, bits = 256 // np.dtype(dtype).itemsize, 0
    if counter:
        return [(i // per, i % per) for i in range(mask_lo)]
    if setmask and contig:
        bits = (1 << mask_lo) - 1
    else:
        bits = mask_lo | (mask_hi << 64 if per > 64 else 0)
    return [(r, j) for r in range(repeat) for j in range(per) if bits >> j & 1]


def elem(dtype, r, j, blk, rep):
    epb = 32 // np.dtype(dtype).itemsize
    return r * rep * epb + (j // epb) * blk * epb + j % epb


def model(op, dtype, a, b, out, scalar, lanes, dB, s0B, s1B, dR, s0R, s1R):
    out = out.copy()
    f32 = np.float32
    s = dtype(scalar)
    if op in ("Add", "Mul", "Max", "Relu", "Adds", "Duplicate"):
        for r, j in lanes:
            x, y = f32(a[elem(dtype, r, j, s0B, s0R)]), f32(b[elem(dtype, r, j, s1B, s1R)])
            v = {"Add": lambda: x + y, "Mul": lambda: x * y, "Max": lambda: max(x, y), "Relu": lambda: max(x, f32(0)),
                 "Adds": lambda: x + f32(s), "Duplicate": lambda: s}[op]()
            out[elem(dtype, r, j, dB, dR)] = dtype(v)
        return out
    groups: dict[tuple[int, int], list[tuple[float, int]]] = {}
    epb = 32 // np.dtype(dtype).itemsize
    for r, j in lanes:
        key = (r, j // epb) if op == "BlockReduceSum" else (r, 0)
        groups.setdefault(key, []).append((float(a[elem(dtype, r, j, s0B, s0R)]), j))
    for (r, k), vals in groups.items():
        if op == "WholeReduceSum":
            out[r * dR] = dtype(sum(v for v, _ in vals))
        elif op == "BlockReduceSum":
            out[r * dR * 8 + k] = dtype(sum(v for v, _ in vals))
        else:  # WholeReduceMax: (value, index in repeat), dstRepStride counting pairs
            v, j = max(vals, key=lambda p: (p[0], -p[1]))
            out[2 * r * dR] = dtype(v)
            out[2 * r * dR + 1:2 * r * dR + 2].view(np.uint16 if dtype == np.float16 else np.uint32)[0] = j
    return out


def check(probes, ctype, op, *, counter=0, setmask=1, contig=1, mask_lo=0, mask_hi=0, repeat=1, dB=1, s0B=1, s1B=1,
          dR=8, s0R=8, s1R=8, scalar=1.5, seed=0):
    dtype = DT[ctype]
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(N).astype(dtype)
    b = rng.standard_normal(N).astype(dtype)
    out = rng.standard_normal(N).astype(dtype)
    k = probes[f"l0probe_{ctype}"]
    tiling = k.tiling(op=OPS[op], counter=counter, setmask=setmask, contig=contig, mask_lo=mask_lo, mask_hi=mask_hi,
                      repeat=repeat, dB=dB, s0B=s0B, s1B=s1B, dR=dR, s0R=s0R, s1R=s1R, n=N, scalar=scalar)
    (got,) = k.run([a, b], [out], 1, tiling)
    lanes = active_lanes(dtype, counter, setmask, contig, mask_lo, mask_hi, repeat)
    expect = model(op, dtype, a, b, out, scalar, lanes, dB, s0B, s1B, dR, s0R, s1R)
    where = dict(op=op, ctype=ctype, counter=counter, setmask=setmask, contig=contig, mask=(mask_lo, mask_hi),
                 repeat=repeat, strides=(dB, s0B, s1B, dR, s0R, s1R))
    np.testing.assert_array_equal(got.view(np.uint8), expect.view(np.uint8), err_msg=str(where))


# ---- sweeps -------------------------------------------------------------------------------------


@pytest.mark.parametrize("ctype", DT)
def test_count_masks_exhaustive(probes, ctype):
    per = 256 // np.dtype(DT[ctype]).itemsize
    for mask in range(0, per + 1):
        check(probes, ctype, "Add", mask_lo=mask, repeat=2, seed=mask)


@pytest.mark.parametrize("ctype", DT)
def test_bit_masks(probes, ctype):
    rng = np.random.default_rng(5)
    masks = [(1, 0), (1 << 63, 0), (0, 1), (0, 1 << 63), (~0 & (2**64 - 1), ~0 & (2**64 - 1)), (0x00FF00FF00FF00FF, 0x5)]
    masks += [(int(rng.integers(0, 2**63)) * 2 + 1, int(rng.integers(0, 2**63))) for _ in range(30)]
    for i, (lo, hi) in enumerate(masks):
        check(probes, ctype, "Mul", contig=0, mask_lo=lo, mask_hi=hi, repeat=3, seed=i)


@pytest.mark.parametrize("ctype", DT)
def test_strides_exhaustive(probes, ctype):
    for i, (dB, s0B, s1B, dR, s0R, s1R) in enumerate(itertools.product((0, 1, 2), (1, 2), (0, 1), (0, 8, 9), (8, 3),
                                                                      (0, 9))):
        check(probes, ctype, "Add", mask_lo=200 % (256 // np.dtype(DT[ctype]).itemsize + 1) or 1, repeat=3, dB=dB,
              s0B=s0B, s1B=s1B, dR=dR, s0R=s0R, s1R=s1R, seed=i)


@pytest.mark.parametrize("ctype", DT)
@pytest.mark.parametrize("setmask", [0, 1])
def test_counter_mode(probes, ctype, setmask):
    """n elements in all, repeatTimes ignored; isSetMask false: SetVectorMask(0, n)."""
    for n in (0, 1, 7, 63, 64, 65, 127, 128, 129, 300, 511):
        check(probes, ctype, "Max", counter=1, setmask=setmask, mask_lo=n, repeat=1, seed=n)


@pytest.mark.parametrize("ctype", DT)
def test_mask_placeholder_uses_the_register(probes, ctype):
    for lo, hi in ((0xF0F0, 0), (0, 0xFFFF), (12345, 678)):
        check(probes, ctype, "Add", setmask=0, mask_lo=lo, mask_hi=hi, repeat=2)


@pytest.mark.parametrize("ctype", DT)
@pytest.mark.parametrize("op", ["Relu", "Adds", "Duplicate"])
def test_unary_scalar_and_duplicate(probes, ctype, op):
    for i, (mask, dB, s0B, dR, s0R) in enumerate([(64, 1, 1, 8, 8), (17, 2, 1, 16, 8), (64, 0, 2, 1, 16), (5, 1, 0, 8, 0)]):
        check(probes, ctype, op, mask_lo=mask, repeat=3, dB=dB, s0B=s0B, dR=dR, s0R=s0R, scalar=-0.75, seed=i)
        check(probes, ctype, op, counter=1, mask_lo=mask * 3 + 1, dB=dB, s0B=s0B, dR=dR, s0R=s0R, seed=i)


@pytest.mark.parametrize("ctype", DT)
@pytest.mark.parametrize("op", ["WholeReduceSum", "BlockReduceSum", "WholeReduceMax"])
def test_reductions(probes, ctype, op):
    per = 256 // np.dtype(DT[ctype]).itemsize
    for i, mask in enumerate((1, 8, per // 2 + 3, per)):
        for dR, s0B, s0R in ((1, 1, 8), (2, 2, 16), (3, 1, 4)):
            check(probes, ctype, op, mask_lo=mask, repeat=4, dR=dR, s0B=s0B, s0R=s0R, seed=i)
    check(probes, ctype, op, contig=0, mask_lo=0x8000_0000_0000_0101, mask_hi=0x3, repeat=2, dR=1)
    if op != "WholeReduceMax":
        for n in (1, 9, per + 5, 5 * per - 1):
            check(probes, ctype, op, counter=1, mask_lo=n, dR=1, s0B=1, s0R=8, seed=n)
            check(probes, ctype, op, counter=1, setmask=0, mask_lo=n, dR=1, s0B=1, s0R=8, seed=n)
