"""aclFloatToFloat16 / aclFloat16ToFloat / aclDataTypeSize of the acl library against numpy's
IEEE half: every half value round-trips, and float -> half rounds to nearest even (subnormals,
overflow to infinity, NaN) exactly as numpy's float32 -> float16 cast."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from opbuild.abi import vocabulary as v


@pytest.fixture(scope="module")
def acl():
    from opbuild.abi.native_libs import NativeLibraryMissing, acl_library

    try:
        lib = ctypes.CDLL(str(acl_library()))
    except NativeLibraryMissing as exc:
        pytest.skip(str(exc))
    lib.aclFloatToFloat16.argtypes, lib.aclFloatToFloat16.restype = [ctypes.c_float], ctypes.c_uint16
    lib.aclFloat16ToFloat.argtypes, lib.aclFloat16ToFloat.restype = [ctypes.c_uint16], ctypes.c_float
    lib.aclDataTypeSize.argtypes, lib.aclDataTypeSize.restype = [ctypes.c_int], ctypes.c_size_t
    return lib


def test_every_half_converts_to_float_exactly(acl):
    bits = np.arange(1 << 16, dtype=np.uint16)
    want = bits.view(np.float16).astype(np.float32)
    got = np.array([acl.aclFloat16ToFloat(int(b)) for b in bits], np.float32)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    assert same.all(), bits[~same][:5]


def test_float_to_half_rounds_like_numpy(acl):
    rng = np.random.default_rng(14)
    values = np.concatenate([
        rng.standard_normal(20000).astype(np.float32) * np.float32(1000),
        rng.standard_normal(5000).astype(np.float32) * np.float32(1e-5),  # subnormal halves
        np.array([0.0, -0.0, 65504.0, 65519.0, 65520.0, 1e9, -1e9, np.inf, -np.inf, 5.96e-8, 2.98e-8, 2.99e-8,
                  1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11], np.float32),
        # exact ties between two halves: nearest even
        (np.arange(1024, 2048, dtype=np.float32) + np.float32(0.5)),
    ])
    with np.errstate(over="ignore"):
        want = values.astype(np.float16).view(np.uint16)
    got = np.array([acl.aclFloatToFloat16(float(x)) for x in values], np.uint16)
    assert (got == want).all(), [(float(x), int(g), int(w)) for x, g, w in zip(values, got, want) if g != w][:5]
    nan = acl.aclFloatToFloat16(float("nan"))
    assert np.isnan(np.uint16(nan).view(np.float16))


def test_data_type_size(acl):
    for d in v.DTYPES:
        assert acl.aclDataTypeSize(d.acl) == d.itemsize, d.name
    assert acl.aclDataTypeSize(v.ACL_DATA_TYPES["ACL_FLOAT8_E4M3FN"]) == 1
    assert acl.aclDataTypeSize(v.ACL_DATA_TYPES["ACL_STRING"]) == 0


def test_the_size_table_agrees_with_numpy_and_ml_dtypes(acl):
    """vocabulary.CANN_DATA_TYPES' sizes (the acl library's table is generated from them) are the
    item sizes numpy / ml_dtypes give whole-byte types; sub-byte types count 1, as CANN's."""
    import ml_dtypes  # noqa: F401 - registers the narrow dtypes' names with numpy

    for t in v.CANN_DATA_TYPES:
        if t.acl is None:
            continue
        assert acl.aclDataTypeSize(t.acl) == t.size, t.ge_name
        if t.sub_byte:
            assert t.size == 1, t.ge_name
        elif t.numpy is not None and t.numpy != "complex32":
            assert np.dtype(getattr(ml_dtypes, t.numpy, t.numpy)).itemsize == t.size, t.ge_name
    assert acl.aclDataTypeSize(-1) == 0 and acl.aclDataTypeSize(999) == 0
