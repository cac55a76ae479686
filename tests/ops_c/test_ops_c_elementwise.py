"""AddCustomTemplate, MulCustom, LeakyReluCustom and AddNCustom: every binary against numpy.

Exact equality where the kernel's arithmetic is numpy's (fp32; fp16 computed in float and rounded
once, which is what numpy's float16 ufuncs do; bf16 rounded to nearest even like ml_dtypes).
"""

from __future__ import annotations

import functools
import struct

import numpy as np
import pytest

from .harness import Desc, rand

SHAPES = [(1,), (1009,), (), (2, 3, 5, 7), (300, 401)]  # (300, 401): 30 blocks, last one partial


def _split(data: bytes) -> tuple[int, int]:
    """total_length, block_length: the first two fields of every elementwise op's tiling data."""
    return struct.unpack_from("<QQ", data, 0)


def _check_split(t, total: int, core_num: int) -> None:
    got_total, block_length = _split(t.data)
    assert got_total == total
    want_blocks = max(1, min(core_num, -(-total // 4096)))
    assert t.block_dim <= want_blocks and t.block_dim >= 1
    assert block_length % 64 == 0
    assert t.block_dim * block_length >= total
    assert (t.block_dim - 1) * block_length < max(total, 1)  # no idle block
    assert t.workspace_size == 0


# ---- AddCustomTemplate ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("shape", SHAPES)
def test_add_matches_numpy(runner, dtype, shape):
    rng = np.random.default_rng(1)
    x, y = rand(shape, dtype, rng), rand(shape, dtype, rng)
    binary = {"float16": "AddCustomTemplate_FP16", "float32": "AddCustomTemplate_FP32"}[dtype]
    (z,), t = runner("AddCustomTemplate").run(binary, [x, y], [shape])
    assert z.dtype == x.dtype
    np.testing.assert_array_equal(z, x + y)
    _check_split(t, x.size, 48)


@pytest.mark.parametrize("n, key", [(4096 * 3, 0), (64, 0), (4096 * 3 + 5, 1), (63, 1)])
def test_add_tiling_key_picks_the_tail_path(runner, n, key):
    """Key 0 when the elements are whole 64-element rows, 1 with a partial last row (tail_length,
    the third field); the kernel branches on it (TILING_KEY_IS) and trusts it: key 0 launched
    with a tail is refused, key 1 without one still adds exactly."""
    rng = np.random.default_rng(n)
    x, y = rand((n,), "float32", rng), rand((n,), "float32", rng)
    run = runner("AddCustomTemplate").run
    (z,), t = run("AddCustomTemplate_FP32", [x, y], [(n,)])
    assert t.tiling_key == key and struct.unpack_from("<Q", t.data, 16) == (n % 64,)
    np.testing.assert_array_equal(z, x + y)
    if key == 1:
        with pytest.raises(RuntimeError, match=r"AddCustomTemplate_FP32: tiling key 0 \(whole rows\) with a tail of"):
            run("AddCustomTemplate_FP32", [x, y], [(n,)], tiling_key=0)
    else:
        (z,), _ = run("AddCustomTemplate_FP32", [x, y], [(n,)], tiling_key=1)
        np.testing.assert_array_equal(z, x + y)
    with pytest.raises(RuntimeError, match=r"AddCustomTemplate_FP32: unexpected tiling key 5"):
        run("AddCustomTemplate_FP32", [x, y], [(n,)], tiling_key=5)


def test_add_fp16_rounding_edges(runner):
    # ties, overflow to inf, subnormals, signed zeros: all as numpy's float16 add
    x = np.array([2048, 65504, 6e-8, -0.0, 0.0, 1.0, np.inf, np.nan, 1e-4], dtype=np.float16)
    y = np.array([1, 32, 6e-8, -0.0, -0.0, 2**-11, -np.inf, 1, -1e-4], dtype=np.float16)
    (z,), _ = runner("AddCustomTemplate").run("AddCustomTemplate_FP16", [x, y], [x.shape])
    with np.errstate(over="ignore", invalid="ignore"):
        ref = x + y
    np.testing.assert_array_equal(z.view(np.uint16)[~np.isnan(z)], ref.view(np.uint16)[~np.isnan(ref)])
    assert np.isnan(z[6]) and np.isnan(z[7])


def test_add_block_split_follows_core_num(tiling):
    r = tiling("AddCustomTemplate")
    for core_num, total in [(8, 100_000), (48, 100_000), (48, 4096), (48, 4097), (1, 10**6), (48, 10**7)]:
        t = r.tiling([Desc("float32", (total,)), Desc("float32", (total,))], [Desc("float32", (total,))],
                     core_num=core_num)
        assert t.status == 0, t.error
        _check_split(t, total, core_num)
        if total > 4096 and core_num > 1:
            assert t.block_dim >= 2


def test_add_empty_tensor_does_not_crash(runner):
    x = np.zeros((0, 5), np.float32)
    (z,), t = runner("AddCustomTemplate").run("AddCustomTemplate_FP32", [x, x], [(0, 5)])
    assert t.block_dim == 1 and z.shape == (0, 5)


@pytest.mark.parametrize(
    "x, y, z, message",
    [
        (Desc("float16", (2, 3)), Desc("float16", (3, 2)), Desc("float16", (2, 3)), "shapes differ (x [2,3], y [3,2]"),
        (Desc("float16", (4,)), Desc("float16", (4,)), Desc("float16", (5,)), "z [5]"),
        (Desc("float16", (4,)), Desc("float32", (4,)), Desc("float16", (4,)), "dtypes differ"),
        (Desc("int32", (4,)), Desc("int32", (4,)), Desc("int32", (4,)), "x dtype 3 is not float16"),
    ],
)
def test_add_tiling_rejects(tiling, x, y, z, message):
    t = tiling("AddCustomTemplate").tiling([x, y], [z])
    assert t.status != 0
    assert message in t.error and t.error.startswith("AddCustomTemplate:")


# ---- MulCustom -----------------------------------------------------------------------------------

MUL_BINARIES = {
    "MulCustom_FP16": ("float16", "float16"),
    "MulCustom_FP32": ("float32", "float32"),
    "MulCustom_FP16_FP32": ("float16", "float32"),
    "MulCustom_INT32": ("int32", "int32"),
}
MUL_SHAPES = [
    ((1,), (1,)),
    ((1009,), (1009,)),
    ((), ()),
    ((), (5,)),
    ((3, 1), ()),
    ((7, 1, 5), (1, 3, 1)),          # 3-D broadcast on both sides
    ((4, 1, 6, 1, 3), (6, 5, 1)),     # ranks differ
    ((300, 400), (400,)),             # row broadcast, many blocks
    ((200, 1, 300), (1, 70, 300)),    # 4.2M elements: every block starts mid-row
    ((2, 3, 1, 1, 2, 1, 3, 2), (3, 2, 2, 1, 1)),  # 8 dims
]


@pytest.mark.parametrize("binary", list(MUL_BINARIES))
@pytest.mark.parametrize("xs, ys", MUL_SHAPES)
def test_mul_matches_numpy(runner, binary, xs, ys):
    xdt, ydt = MUL_BINARIES[binary]
    rng = np.random.default_rng(2)
    x, y = rand(xs, xdt, rng), rand(ys, ydt, rng)
    ref = x.astype(np.float32) * y if xdt != ydt else x * y
    (z,), t = runner("MulCustom").run(binary, [x, y], [ref.shape])
    assert z.dtype == ref.dtype
    np.testing.assert_array_equal(z, ref)
    _check_split(t, ref.size, 48)


def test_mul_tiling_data_holds_broadcast_strides(tiling):
    t = tiling("MulCustom").tiling([Desc("float32", (7, 1, 5)), Desc("float32", (3, 1))], [Desc("float32", (7, 3, 5))])
    assert t.status == 0, t.error
    total, block_length, rank = struct.unpack_from("<QQI", t.data, 0)
    z_dims = struct.unpack_from("<8q", t.data, 24)
    x_strides = struct.unpack_from("<8q", t.data, 24 + 64)
    y_strides = struct.unpack_from("<8q", t.data, 24 + 128)
    assert (total, rank) == (105, 3)
    assert z_dims[:3] == (7, 3, 5)
    assert x_strides[:3] == (5, 0, 1)
    assert y_strides[:3] == (0, 1, 0)


def test_mul_int32_wraps_like_numpy(runner):
    x = np.array([2**30, -(2**31), 123456789, -7, 46341], dtype=np.int32)
    y = np.array([4, -1, 1000, 3, 46341], dtype=np.int32)
    (z,), _ = runner("MulCustom").run("MulCustom_INT32", [x, y], [x.shape])
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(z, x * y)


@pytest.mark.parametrize(
    "x, y, z, message",
    [
        (Desc("float16", (2, 3)), Desc("float16", (4,)), Desc("float16", (2, 3)),
         "x [2,3] and y [4] do not broadcast: output dim 1 (from the end: -1) has x 3 vs y 4"),
        (Desc("float32", (5, 2, 3)), Desc("float32", (4, 1, 3)), Desc("float32", (5, 2, 3)),
         "output dim 0 (from the end: -3) has x 5 vs y 4"),
        (Desc("float16", (2, 3)), Desc("float16", (3,)), Desc("float16", (2, 4)),
         "output z has shape [2,4] but x and y broadcast to [2,3]"),
        (Desc("float16", (3,)), Desc("float16", (3,)), Desc("float16", (1, 3)), "broadcast to [3]"),
        (Desc("float32", (3,)), Desc("float16", (3,)), Desc("float32", (3,)), "no binary for x float32"),
        (Desc("float16", (3,)), Desc("float32", (3,)), Desc("float16", (3,)), "no binary for x float16"),
    ],
)
def test_mul_tiling_rejects(tiling, x, y, z, message):
    t = tiling("MulCustom").tiling([x, y], [z])
    assert t.status != 0
    assert message in t.error, t.error


# ---- LeakyReluCustom -----------------------------------------------------------------------------

LEAKY = {"float16": "FP16", "float32": "FP32", "bfloat16": "BF16"}


def _leaky_ref(x: np.ndarray, slope: float) -> np.ndarray:
    return np.where(x >= 0, x, (x.astype(np.float32) * np.float32(slope)).astype(x.dtype))


@pytest.mark.parametrize("dtype", list(LEAKY))
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("slope", [0.01, -2.5, 0.0])
def test_leaky_relu_matches_numpy(runner, dtype, shape, slope):
    rng = np.random.default_rng(3)
    x = rand(shape, dtype, rng)
    relu = slope == 0.0
    binary = f"LeakyReluCustom_{'Relu_' if relu else ''}{LEAKY[dtype]}"
    (y,), t = runner("LeakyReluCustom").run(binary, [x], [shape], attrs={"negative_slope": slope})
    assert y.dtype == x.dtype
    np.testing.assert_array_equal(y.astype(np.float32), _leaky_ref(x, slope).astype(np.float32))
    assert t.tiling_key == (1 if relu else 0)
    _check_split(t, x.size, 48)


@pytest.mark.parametrize("dtype", list(LEAKY))
def test_leaky_relu_generic_binary_with_zero_slope_agrees_with_relu(runner, dtype):
    rng = np.random.default_rng(4)
    x = rand((5000,), dtype, rng)
    r = runner("LeakyReluCustom")
    (a,), _ = r.run(f"LeakyReluCustom_{LEAKY[dtype]}", [x], [x.shape], attrs={"negative_slope": 0.0})
    (b,), _ = r.run(f"LeakyReluCustom_Relu_{LEAKY[dtype]}", [x], [x.shape], attrs={"negative_slope": 0.0})
    np.testing.assert_array_equal(a.astype(np.float32), b.astype(np.float32))  # -0 == +0


def test_leaky_relu_special_values(runner):
    x = np.array([1.0, -0.0, np.nan, -3.0, np.inf, -np.inf], dtype=np.float32)
    r = runner("LeakyReluCustom")
    (y,), _ = r.run("LeakyReluCustom_FP32", [x], [x.shape], attrs={"negative_slope": 0.5})
    np.testing.assert_array_equal(y, [1.0, -0.0, np.nan, -1.5, np.inf, -np.inf])
    (y,), _ = r.run("LeakyReluCustom_Relu_FP32", [x], [x.shape], attrs={"negative_slope": 0.0})
    np.testing.assert_array_equal(y, np.maximum(x, 0))


def test_leaky_relu_default_slope(runner):
    x = np.array([-1.0, 2.0], np.float32)
    (y,), _ = runner("LeakyReluCustom").run("LeakyReluCustom_FP32", [x], [x.shape])
    np.testing.assert_array_equal(y, [np.float32(-0.01), 2.0])


def test_relu_binary_refuses_a_nonzero_slope(runner):
    x = np.ones(4, np.float32)
    with pytest.raises(RuntimeError, match="built for negative_slope=0 but the tiling has 0.5"):
        runner("LeakyReluCustom").run("LeakyReluCustom_Relu_FP32", [x], [x.shape], attrs={"negative_slope": 0.5})


@pytest.mark.parametrize(
    "x, y, message",
    [
        (Desc("int32", (4,)), Desc("int32", (4,)), "x dtype 3 is not float16"),
        (Desc("float16", (4,)), Desc("float32", (4,)), "y dtype 0 differs from x dtype 1"),
        (Desc("float16", (4, 2)), Desc("float16", (4, 3)), "y dim 1 is 3 but x dim 1 is 2"),
    ],
)
def test_leaky_relu_tiling_rejects(tiling, x, y, message):
    t = tiling("LeakyReluCustom").tiling([x], [y])
    assert t.status != 0 and message in t.error, t.error


# ---- AddNCustom ----------------------------------------------------------------------------------

ADDN = {"float16": "AddNCustom_FP16", "float32": "AddNCustom_FP32", "int32": "AddNCustom_INT32"}


@pytest.mark.parametrize("dtype", list(ADDN))
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("n", [1, 2, 5])
def test_add_n_matches_numpy(runner, dtype, shape, n):
    rng = np.random.default_rng(5)
    xs = [rand(shape, dtype, rng) for _ in range(n)]
    acc = [x.astype(np.float32) if dtype == "float16" else x for x in xs]
    ref = functools.reduce(np.add, acc).astype(xs[0].dtype)  # fp16: float accumulation, one rounding
    (y,), t = runner("AddNCustom").run(ADDN[dtype], [xs], [shape])
    np.testing.assert_array_equal(y, ref)
    assert struct.unpack_from("<QQI", t.data, 0)[2] == n
    _check_split(t, xs[0].size, 48)


@pytest.mark.parametrize("dtype", list(ADDN))
@pytest.mark.parametrize("shapes", [
    [(2, 3, 4), (4,), (3, 1)],            # three ranks
    [(7, 1, 3), (1, 6, 1), (3,)],         # every tensor broadcast somewhere
    [(5000,), (1,)],                      # more than one block, a scalar-like tensor
    [(3, 1)] * 7 + [(1, 70)],             # 8 tensors, the broadcasting limit
    [(0, 3), (3,)],                       # empty
])
def test_add_n_broadcasts_as_numpy(runner, dtype, shapes):
    """ONNX Sum's multidirectional broadcasting: the kernel's strided path against numpy."""
    rng = np.random.default_rng(11)
    xs = [rand(shape, dtype, rng) for shape in shapes]
    acc = [x.astype(np.float32) if dtype == "float16" else x for x in xs]
    ref = functools.reduce(np.add, acc).astype(xs[0].dtype)
    (y,), t = runner("AddNCustom").run(ADDN[dtype], [xs], [ref.shape])
    np.testing.assert_array_equal(y, ref)
    assert struct.unpack_from("<QQII", t.data, 0)[3] == len(ref.shape)  # rank: the broadcast path


def test_add_n_int32_wraps(runner):
    xs = [np.array([2**31 - 1, -(2**31)], np.int32), np.array([1, -1], np.int32)]
    (y,), _ = runner("AddNCustom").run("AddNCustom_INT32", [xs], [(2,)])
    np.testing.assert_array_equal(y, [-(2**31), 2**31 - 1])


@pytest.mark.parametrize("dtype, ge", [("float16", 1), ("float32", 0), ("int32", 3)])
def test_add_n_gen_simplified_key(tiling, dtype, ge):
    r = tiling("AddNCustom")
    status, key, err = r.gen_key([[Desc(dtype, (2, 3))] * 4], [Desc(dtype, (2, 3))])
    assert (status, key, err) == (0, f"diy,addn,{ge}", "")
    status, key, _ = r.gen_key([[Desc(dtype, (7,))]], [Desc(dtype, (7,))], prefix=b"pre/")
    assert (status, key) == (0, f"pre/diy,addn,{ge}")  # appends, as the runtime's buffer expects


@pytest.mark.parametrize(
    "xs, message",
    [
        ([], "the tensor list x is empty"),
        ([Desc("bfloat16", (2,))], "no binary for x dtype 27"),
        ([Desc("float16", (2,)), Desc("float32", (2,))], "x[1] has dtype 0 but x[0] has 1"),
    ],
)
def test_add_n_gen_simplified_key_rejects(tiling, xs, message):
    status, key, err = tiling("AddNCustom").gen_key([xs], [Desc("float16", (2,))])
    assert status != 0 and message in err and key == ""


def test_add_n_key_overflow_is_reported(tiling):
    status, _, err = tiling("AddNCustom").gen_key([[Desc("float16", (2,))]], [Desc("float16", (2,))],
                                                  prefix=b"k" * 250)
    assert status != 0 and "longer than 256" in err


@pytest.mark.parametrize(
    "xs, y, message",
    [
        ([], Desc("float16", (2,)), "the tensor list x is empty"),
        ([Desc("float16", (2,)), Desc("float16", (3,))], Desc("float16", (2,)),
         "x[1] [3] does not broadcast to y [2] (dim 0: 3 vs 2)"),
        ([Desc("float16", (4,))] * 2, Desc("float16", (3, 4)), "y [3,4] is larger than the broadcast of the list"),
        ([Desc("float16", (2, 1))] * 9 + [Desc("float16", (2, 3))], Desc("float16", (2, 3)),
         "10 tensors of different shapes; broadcasting takes up to 8"),
        ([Desc("float16", (2,)), Desc("int32", (2,))], Desc("float16", (2,)), "x[1] has dtype 3 but x[0] has 1"),
        ([Desc("float32", (2,))], Desc("float16", (2,)), "y dtype 1 differs from x dtype 0"),
        ([Desc("float32", (2,))], Desc("float32", (2, 1)), "x[0] [2] does not broadcast to y [2,1] (dim 1: 2 vs 1)"),
        ([Desc("uint8", (2,))], Desc("uint8", (2,)), "x[0] dtype 4 is not"),
    ],
)
def test_add_n_tiling_rejects(tiling, xs, y, message):
    t = tiling("AddNCustom").tiling([xs], [y])
    assert t.status != 0 and message in t.error, t.error
