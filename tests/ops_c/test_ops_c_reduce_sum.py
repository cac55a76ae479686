"""ReduceSumCustom: any axes, keep_dims both ways, deterministic and atomic binaries.

The deterministic binaries are checked bit for bit against a numpy emulation of their summation
order (sequential float32 sums over each reduction slice, then the slices in order), and for
identical bytes across repeated runs, thread counts and backends.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from .harness import Desc, OpRunner, rand

BIN = {("float32", True): "ReduceSumCustom_FP32_Det", ("float32", False): "ReduceSumCustom_FP32",
       ("float16", True): "ReduceSumCustom_FP16_Det", ("float16", False): "ReduceSumCustom_FP16"}

CASES = [
    ((1,), []),
    ((1009,), []),
    ((), []),
    ((7, 11, 13), [0, 2]),
    ((7, 11, 13), [1]),
    ((7, 11, 13), [-1]),
    ((7, 11, 13), [2, 0]),
    ((300, 400), [0]),        # keep the innermost dim: reduction-outer loop, 2 x 15 blocks
    ((300, 400), [1]),
    ((64, 33, 70), [0, 2]),   # the brief's case at a size that splits the reduction over 18 blocks
    ((64, 33, 70), [-3, -1]),
    ((200_000,), [0]),        # full reduction over 48 blocks
    ((3, 1, 5, 1, 2), [1, 3]),  # only size-1 axes reduced
    ((5, 6, 7, 8), [0, 2]),   # alternating kept / reduced
    ((4, 5, 6, 7, 8), [1, 3, 4]),
    ((20_000, 5), [1]),       # many short rows: the outputs are split
    ((2, 3, 2, 3, 2, 3, 2, 3), [0, 3, 4, 7]),
]


def decode(data: bytes) -> dict[str, int]:
    out_count, red_count, block_dim, red_blocks, out_blocks, out_rank, red_rank = struct.unpack_from("<QQIIIII", data)
    return dict(out_count=out_count, red_count=red_count, block_dim=block_dim, red_blocks=red_blocks,
                out_blocks=out_blocks, out_rank=out_rank, red_rank=red_rank)


def reference(x: np.ndarray, axes: list[int], keep: bool) -> np.ndarray:
    return np.sum(x.astype(np.float64), axis=tuple(axes) if axes else None, keepdims=keep)


def emulate_det(x: np.ndarray, axes: list[int], red_blocks: int) -> np.ndarray:
    """The deterministic binaries' exact float32 summation order, flattened over the outputs."""
    rank = x.ndim
    red = sorted({a % rank for a in axes}) if axes else list(range(rank))
    kept = [d for d in range(rank) if d not in red]
    out_count = int(np.prod([x.shape[d] for d in kept]))
    flat = np.transpose(x.astype(np.float32), kept + red).reshape(out_count, -1)
    red_count = flat.shape[1]
    parts = []
    for k in range(red_blocks):
        per, rem = divmod(red_count, red_blocks)
        r0 = k * per + min(k, rem)
        r1 = r0 + per + (1 if k < rem else 0)
        # numpy's cumsum adds sequentially (no pairwise summation): the last column is the kernel's sum
        parts.append(np.cumsum(flat[:, r0:r1], axis=1, dtype=np.float32)[:, -1] if r1 > r0
                     else np.zeros(out_count, np.float32))
    total = parts[0]
    for p in parts[1:]:
        total = (total + p).astype(np.float32)
    return total


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("det", [True, False], ids=["det", "atomic"])
@pytest.mark.parametrize("keep", [False, True], ids=["drop", "keep"])
@pytest.mark.parametrize("shape, axes", CASES)
def test_reduce_sum_matches_numpy(runner, dtype, det, keep, shape, axes):
    rng = np.random.default_rng(6)
    x = rand(shape, dtype, rng, 0.0, 1.0 if dtype == "float32" else 0.25)  # fp16: sums stay below 65504
    ref = reference(x, axes, keep)
    (y,), t = runner("ReduceSumCustom").run(BIN[dtype, det], [x], [ref.shape], attrs={"axes": axes, "keep_dims": keep})
    assert y.shape == ref.shape and y.dtype == x.dtype
    info = decode(t.data)
    assert info["out_count"] == max(1, ref.size) and info["out_count"] * info["red_count"] == max(1, x.size)
    assert t.block_dim == info["block_dim"] == info["red_blocks"] * info["out_blocks"] <= 48
    assert t.workspace_size == (info["red_blocks"] + 1) * info["out_count"] * 4
    want = ref.astype(y.dtype).astype(np.float64)
    rtol = 1e-3 if dtype == "float16" else 1e-5
    np.testing.assert_allclose(y.astype(np.float64), want, rtol=rtol, atol=1e-3)
    if det:
        exact = emulate_det(x, axes, info["red_blocks"]).astype(y.dtype).reshape(ref.shape)
        np.testing.assert_array_equal(y.view(np.uint16 if dtype == "float16" else np.uint32),
                                      exact.view(np.uint16 if dtype == "float16" else np.uint32))


@pytest.mark.parametrize("shape, axes, out", [((200_000,), [], ()), ((64, 33, 70), [0, 2], (33,)),
                                              ((1000, 1000), [0], (1000,)), ((1000, 1000), [1], (1000,))])
def test_reduce_sum_large_input_really_splits(tiling, shape, axes, out):
    t = tiling("ReduceSumCustom").tiling([Desc("float32", shape)], [Desc("float32", out)], attrs={"axes": axes})
    assert t.status == 0, t.error
    info = decode(t.data)
    assert t.block_dim >= 2 and info["red_blocks"] >= 2, info


@pytest.mark.parametrize("core_num", [1, 2, 7, 48, 5000])
def test_reduce_sum_block_dim_limits(tiling, core_num):
    t = tiling("ReduceSumCustom").tiling([Desc("float32", (1 << 24,))], [Desc("float32", ())], core_num=core_num)
    assert t.status == 0, t.error
    assert 1 <= t.block_dim <= min(core_num, 1024)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_reduce_sum_det_is_bit_identical_across_runs_threads_and_backends(build, dtype):
    from .harness import sim_available

    rng = np.random.default_rng(7)
    x = rand((96, 77, 50), dtype, rng, -1.0, 1.0)  # signed data: the order of additions matters
    axes, keep = [0, 2], False
    shape = (77,)
    backends = ["threads"] + (["sim"] if sim_available() else [])
    results = []
    for backend in backends:
        r = OpRunner(build, "ReduceSumCustom", backend)
        for threads in (1, 2, 5, 48):
            for _ in range(2):
                (y,), t = r.run(BIN[dtype, True], [x], [shape], attrs={"axes": axes, "keep_dims": keep},
                                threads=threads)
                results.append(y.tobytes())
    assert decode(t.data)["red_blocks"] >= 2
    assert len(set(results)) == 1


def test_reduce_sum_empty_reduction_gives_zeros(runner):
    x = np.zeros((0, 3), np.float32)
    (y,), t = runner("ReduceSumCustom").run("ReduceSumCustom_FP32_Det", [x], [(3,)], attrs={"axes": [0]})
    np.testing.assert_array_equal(y, np.zeros(3, np.float32))
    (y,), t = runner("ReduceSumCustom").run("ReduceSumCustom_FP32", [x], [(1, 3)],
                                            attrs={"axes": [0], "keep_dims": True})
    np.testing.assert_array_equal(y, np.zeros((1, 3), np.float32))


def test_reduce_sum_empty_output(runner):
    x = np.zeros((3, 0), np.float32)
    (y,), t = runner("ReduceSumCustom").run("ReduceSumCustom_FP32", [x], [(0,)], attrs={"axes": [0]})
    assert y.shape == (0,) and t.block_dim == 1 and t.workspace_size == 0


@pytest.mark.parametrize(
    "x, y, attrs, message",
    [
        ((2, 3, 4), (2,), {"axes": [3]}, "axes[0] = 3 is out of range for x of rank 3 (allowed -3..2)"),
        ((2, 3, 4), (2,), {"axes": [1, -4]}, "axes[1] = -4 is out of range"),
        ((2, 3, 4), (3,), {"axes": [0, -3]}, "axes[1] = -3 repeats axis 0"),
        ((2, 3, 4), (2,), {"axes": [2, 1, 2]}, "axes[2] = 2 repeats axis 2"),
        ((), (), {"axes": [0]}, "out of range for x of rank 0"),
        ((2, 3, 4), (2,), {"axes": [1]}, "y has shape [2] but sum over the axes (keep_dims=false) gives [2,4]"),
        ((2, 3, 4), (2, 4), {"axes": [1], "keep_dims": True}, "(keep_dims=true) gives [2,1,4]"),
        ((2, 3, 4), (1,), {}, "gives []"),
    ],
)
def test_reduce_sum_tiling_rejects(tiling, x, y, attrs, message):
    t = tiling("ReduceSumCustom").tiling([Desc("float32", x)], [Desc("float32", y)], attrs=attrs)
    assert t.status != 0 and message in t.error, t.error


def test_reduce_sum_tiling_rejects_dtypes(tiling):
    r = tiling("ReduceSumCustom")
    t = r.tiling([Desc("int32", (4,))], [Desc("int32", ())])
    assert t.status != 0 and "x dtype 3 is not float32" in t.error
    t = r.tiling([Desc("float16", (4,))], [Desc("float32", ())])
    assert t.status != 0 and "y dtype 0 differs from x dtype 1" in t.error
