"""The C ABI called through ctypes from this (already running) Python process: the bridge uses
this interpreter, tensors are zero-copy views with strides/offset/storage honoured, objects are
counted, and the acl library shares the simulator with opbuild.runtime.device."""

from __future__ import annotations

import ctypes
import os

import numpy as np
import pytest
from concurrency import in_threads

from opbuild.runtime import capi, device
from opbuild.runtime.call import executor as rt_executor

c_i64p = ctypes.POINTER(ctypes.c_int64)
VP = ctypes.c_void_p
ACL_FLOAT, ACL_FLOAT16, ACL_INT64, ACL_STRING = 0, 1, 9, 13
ACL_FORMAT_ND, ACL_FORMAT_NC1HWC0 = 2, 3


@pytest.fixture(scope="module")
def acl():
    lib = capi.acl_library()
    lib.aclCreateTensor.restype = VP
    lib.aclCreateTensor.argtypes = [c_i64p, ctypes.c_uint64, ctypes.c_int, c_i64p, ctypes.c_int64, ctypes.c_int,
                                    c_i64p, ctypes.c_uint64, VP]
    for name in ("aclDestroyTensor", "aclDestroyTensorList", "aclDestroyIntArray", "aclDestroyFloatArray",
                 "aclDestroyBoolArray", "aclDestroyScalar", "aclDestroyAclOpExecutor", "aclSetAclOpExecutorRepeatable"):
        getattr(lib, name).argtypes = [VP]
    lib.aclCreateTensorList.restype = VP
    lib.aclCreateTensorList.argtypes = [ctypes.POINTER(VP), ctypes.c_uint64]
    lib.aclCreateIntArray.restype = VP
    lib.aclCreateIntArray.argtypes = [c_i64p, ctypes.c_uint64]
    lib.aclCreateFloatArray.restype = VP
    lib.aclCreateFloatArray.argtypes = [ctypes.POINTER(ctypes.c_float), ctypes.c_uint64]
    lib.aclCreateBoolArray.restype = VP
    lib.aclCreateBoolArray.argtypes = [ctypes.POINTER(ctypes.c_bool), ctypes.c_uint64]
    lib.aclCreateScalar.restype = VP
    lib.aclCreateScalar.argtypes = [VP, ctypes.c_int]
    lib.aclrtMalloc.argtypes = [ctypes.POINTER(VP), ctypes.c_size_t, ctypes.c_int]
    lib.aclrtFree.argtypes = [VP]
    lib.aclrtCreateStream.argtypes = [ctypes.POINTER(VP)]
    lib.aclrtSynchronizeStream.argtypes = [VP]
    lib.aclrtDestroyStream.argtypes = [VP]
    lib.opbuild_aclnn_executor_key.restype = ctypes.c_char_p
    lib.opbuild_aclnn_executor_key.argtypes = [VP]
    lib.opbuild_aclnn_package_root.restype = ctypes.c_char_p
    lib.opbuild_aclnn_package_root.argtypes = [VP, ctypes.c_char_p]
    return lib


class OpApi:
    """The op API libraries of both sample packages as one: a function is taken from the first
    library that exports it, custom first (op_fallback's order), and kept (its argtypes stay set)."""

    def __init__(self, paths) -> None:
        self.paths = list(paths)
        self.libs = [ctypes.CDLL(str(p)) for p in self.paths]

    def library_of(self, name: str):
        for path, lib in zip(self.paths, self.libs):
            if hasattr(lib, name):
                return path, lib
        raise AttributeError(f"no op API library exports {name}")

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        fn = getattr(self.library_of(name)[1], name)
        setattr(self, name, fn)
        return fn


@pytest.fixture(scope="module")
def opapi(acl, package):
    # (acl first: op API libraries need the acl library by its SONAME, with no rpath; the loader
    # finds it only because it is loaded, as opbuild.runtime does: opbuild/abi/native_libs.py)
    lib = OpApi(package.libs_for("AddCustomTemplate", "AddNCustom", "MulCustom", "ReduceSumCustom",
                                 "LeakyReluCustom"))
    assert lib.paths == [package.lib, package.builtin_lib("math"), package.builtin_lib("nn")]
    for op, attrs in (("AddCustomTemplate", [VP]), ("LeakyReluCustom", [ctypes.c_double]), ("AddNCustom", []),
                      ("ReduceSumCustom", [VP, ctypes.c_bool])):
        n_in = {"AddCustomTemplate": 2}.get(op, 1)
        fn = getattr(lib, f"aclnn{op}GetWorkspaceSize")
        fn.argtypes = [VP] * n_in + [a for a in attrs if op != "AddCustomTemplate"] + [
            VP, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(VP)]
        getattr(lib, f"aclnn{op}").argtypes = [VP, ctypes.c_uint64, VP, VP]
    return lib


def _arr(values) -> ctypes.Array:
    return (ctypes.c_int64 * len(values))(*values)


def make_tensor(acl, array: np.ndarray, view_shape=None, strides=None, offset=0, storage=None, dtype=None,
                fmt=ACL_FORMAT_ND, data=True):
    """An aclTensor over `array`'s memory; by default its own contiguous view."""
    view_shape = array.shape if view_shape is None else view_shape
    storage = array.shape if storage is None else storage
    acl_dtype = {np.dtype(np.float32): ACL_FLOAT, np.dtype(np.float16): ACL_FLOAT16}[array.dtype] if dtype is None \
        else dtype
    t = acl.aclCreateTensor(_arr(view_shape), len(view_shape), acl_dtype, None if strides is None else _arr(strides),
                            offset, fmt, _arr(storage), len(storage), array.ctypes.data if data else None)
    assert t
    return t


def phase1(opapi, op, *args):
    ws, ex = ctypes.c_uint64(), VP()
    status = getattr(opapi, f"aclnn{op}GetWorkspaceSize")(*args, ctypes.byref(ws), ctypes.byref(ex))
    return status, ws.value, ex.value


def recent_error(acl) -> str:
    msg = acl.aclGetRecentErrMsg()
    return msg.decode() if msg else ""


def test_each_function_comes_from_its_package_library(opapi, package):
    for op in ("AddCustomTemplate", "AddNCustom", "MulCustom"):  # MulCustom: also built-in, custom first
        assert opapi.library_of(f"aclnn{op}GetWorkspaceSize")[0] == package.lib
    assert opapi.library_of("aclnnReduceSumCustom")[0] == package.builtin_lib("math")
    assert opapi.library_of("aclnnLeakyReluCustom")[0] == package.builtin_lib("nn")


def test_mul_of_either_package_runs_that_packages_binary(acl, opapi, package):
    """MulCustom is exported by libcust_opapi.so and libopapi_math.so: each runs its own package's op."""
    x = np.arange(6, dtype=np.float32)
    y = np.full(6, 2.0, np.float32)
    for lib_path, root in ((package.lib, package.root), (package.builtin_lib("math"), package.builtin)):
        lib = ctypes.CDLL(str(lib_path))
        lib.aclnnMulCustomGetWorkspaceSize.argtypes = [VP, VP, VP, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(VP)]
        lib.aclnnMulCustom.argtypes = [VP, ctypes.c_uint64, VP, VP]
        z = np.zeros(6, np.float32)
        ts = [make_tensor(acl, a) for a in (x, y, z)]
        status, ws, ex = phase1(lib, "MulCustom", *ts)
        assert status == 0, recent_error(acl)
        assert (str(root.resolve()), "MulCustom") in capi._OPS
        assert acl.opbuild_aclnn_executor_key(ex) == b"MulCustom/d=0,p=1/0,2/0,2/0,2"
        assert lib.aclnnMulCustom(None, ws, ex, None) == 0
        np.testing.assert_array_equal(z, x * y)
        for t in ts:
            assert acl.aclDestroyTensor(t) == 0


def test_same_interpreter_and_same_simulator(acl, opapi, package):
    x = np.arange(6, dtype=np.float32) - 3
    y = np.empty_like(x)
    tx, ty = make_tensor(acl, x), make_tensor(acl, y)
    status, ws, ex = phase1(opapi, "LeakyReluCustom", tx, 0.5, ty)
    assert status == 0, recent_error(acl)
    # the bridge ran in this interpreter: capi's op cache of this process has the op
    assert (str(package.builtin.resolve()), "LeakyReluCustom") in capi._OPS  # a built-in op
    assert acl.opbuild_aclnn_executor_key(ex) == b"LeakyReluCustom/d=0,p=1/leaky_fp32"
    assert opapi.aclnnLeakyReluCustom(None, ws, ex, None) == 0
    np.testing.assert_array_equal(y, np.where(x > 0, x, 0.5 * x))
    acl.aclDestroyTensor(tx)
    acl.aclDestroyTensor(ty)
    # one simulator in the process: the acl library's is the one device.py loaded
    assert os.path.samefile(acl.opbuild_acl_sim_library().decode(), device.library_path())
    before = device.mem_blocks()
    ptr = VP()
    assert acl.aclrtMalloc(ctypes.byref(ptr), 1000, 0) == 0
    assert device.mem_blocks() == before + 1
    assert acl.aclrtFree(ptr) == 0
    assert device.mem_blocks() == before


def test_strided_offset_views_are_zero_copy(acl, opapi):
    storage = (np.arange(24, dtype=np.float32) - 10).reshape(4, 6)
    out = np.zeros((6, 4), np.float32)
    # the transpose of `storage` as a strided view of its memory
    tx = make_tensor(acl, storage, view_shape=(6, 4), strides=(1, 6), storage=(4, 6))
    ty = make_tensor(acl, out)
    status, ws, ex = phase1(opapi, "LeakyReluCustom", tx, 0.1, ty)
    assert status == 0, recent_error(acl)
    assert opapi.aclnnLeakyReluCustom(None, ws, ex, None) == 0
    np.testing.assert_allclose(out, np.where(storage.T > 0, storage.T, np.float32(0.1) * storage.T), rtol=1e-6)
    # an output view with an offset: rows 1..2 of a 4x6 buffer, the rest untouched
    target = np.full((4, 6), 7.0, np.float32)
    src = np.ones((2, 6), np.float32) * -2
    tsrc = make_tensor(acl, src)
    tdst = make_tensor(acl, target, view_shape=(2, 6), strides=(6, 1), offset=6, storage=(4, 6))
    status, ws, ex2 = phase1(opapi, "LeakyReluCustom", tsrc, 0.5, tdst)
    assert status == 0, recent_error(acl)
    assert opapi.aclnnLeakyReluCustom(None, ws, ex2, None) == 0
    assert (target[1:3] == -1).all() and (target[0] == 7).all() and (target[3] == 7).all()
    for t in (tx, ty, tsrc, tdst):
        assert acl.aclDestroyTensor(t) == 0


def test_stream_and_repeatable_executor(acl, opapi):
    x = np.arange(1000, dtype=np.float32)
    y = np.ones(1000, np.float32)
    z = np.zeros(1000, np.float32)
    tx, ty, tz = make_tensor(acl, x), make_tensor(acl, y), make_tensor(acl, z)
    stream = VP()
    assert acl.aclrtCreateStream(ctypes.byref(stream)) == 0
    status, ws, ex = phase1(opapi, "AddCustomTemplate", tx, ty, tz)
    assert status == 0, recent_error(acl)
    assert acl.aclSetAclOpExecutorRepeatable(ex) == 0
    for k in range(3):
        assert opapi.aclnnAddCustomTemplate(None, ws, ex, stream) == 0
        assert acl.aclrtSynchronizeStream(stream) == 0
        np.testing.assert_array_equal(z, x + y)
        y += 1
        # a repeatable executor reads the same memory again
    assert acl.opbuild_acl_live_objects(capi.KIND_EXECUTOR) >= 1
    assert acl.aclDestroyAclOpExecutor(ex) == 0
    assert acl.aclDestroyAclOpExecutor(ex) == 161002  # not live any more
    # an unknown stream is rejected (and the non-repeatable executor is consumed)
    status, ws, ex = phase1(opapi, "AddCustomTemplate", tx, ty, tz)
    assert opapi.aclnnAddCustomTemplate(None, ws, ex, ctypes.c_void_p(0x1234)) == 161002
    assert "not a live stream" in recent_error(acl)
    assert acl.aclrtDestroyStream(stream) == 0
    for t in (tx, ty, tz):
        acl.aclDestroyTensor(t)


def test_tensor_list_and_int_array(acl, opapi):
    parts = [np.full(5, float(i + 1), np.float32) for i in range(4)]
    out = np.zeros(5, np.float32)
    tensors = (VP * 4)(*[make_tensor(acl, p) for p in parts])
    lst = acl.aclCreateTensorList(tensors, 4)
    tout = make_tensor(acl, out)
    status, ws, ex = phase1(opapi, "AddNCustom", lst, tout)
    assert status == 0, recent_error(acl)
    assert opapi.aclnnAddNCustom(None, ws, ex, None) == 0
    np.testing.assert_array_equal(out, np.full(5, 10.0, np.float32))
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    y = np.zeros((4,), np.float32)
    axes = acl.aclCreateIntArray(_arr([0, 1]), 2)
    tx, ty = make_tensor(acl, x), make_tensor(acl, y)
    status, ws, ex = phase1(opapi, "ReduceSumCustom", tx, axes, False, ty)
    assert status == 0, recent_error(acl)
    buf = device.malloc(max(ws, 1))
    assert opapi.aclnnReduceSumCustom(buf.address, ws, ex, None) == 0
    np.testing.assert_allclose(y, x.sum(axis=(0, 1)))
    # NULL list attribute with a default: axes=[] reduces everything
    y1 = np.zeros((), np.float32)
    ty1 = make_tensor(acl, y1)
    status, ws, ex = phase1(opapi, "ReduceSumCustom", tx, None, False, ty1)
    assert status == 0, recent_error(acl)
    buf2 = device.malloc(max(ws, 1))
    assert opapi.aclnnReduceSumCustom(buf2.address, ws, ex, None) == 0
    assert float(y1) == float(x.sum())
    for obj, destroy in ((lst, acl.aclDestroyTensorList), (tout, acl.aclDestroyTensor), (axes, acl.aclDestroyIntArray),
                         (tx, acl.aclDestroyTensor), (ty, acl.aclDestroyTensor), (ty1, acl.aclDestroyTensor)):
        assert destroy(obj) == 0


def test_errors(acl, opapi):
    x = np.ones(6, np.float32)
    tx, ty = make_tensor(acl, x), make_tensor(acl, np.empty(6, np.float32))
    assert phase1(opapi, "LeakyReluCustom", None, 0.1, ty)[0] == 161001
    assert "x is a null pointer" in recent_error(acl)
    assert phase1(opapi, "LeakyReluCustom", tx, 0.1, None)[0] == 161001
    ws = ctypes.c_uint64()
    assert opapi.aclnnLeakyReluCustomGetWorkspaceSize(tx, 0.1, ty, ctypes.byref(ws), None) == 161001
    assert opapi.aclnnLeakyReluCustom(None, 0, None, None) == 161001
    # the view reaches past its storage
    big = make_tensor(acl, x, view_shape=(8,), storage=(6,))
    assert phase1(opapi, "LeakyReluCustom", big, 0.1, ty)[0] == 161002
    assert "outside its storage" in recent_error(acl)
    # no data
    nodata = make_tensor(acl, x, data=False)
    assert phase1(opapi, "LeakyReluCustom", nodata, 0.1, ty)[0] == 161001
    assert "data is a null pointer" in recent_error(acl)
    # a dtype / format the runtime cannot take
    s = make_tensor(acl, x, dtype=ACL_STRING)
    assert phase1(opapi, "LeakyReluCustom", s, 0.1, ty)[0] == 161002
    assert "ACL_STRING" in recent_error(acl)
    nz = make_tensor(acl, x, fmt=ACL_FORMAT_NC1HWC0)
    assert phase1(opapi, "LeakyReluCustom", nz, 0.1, ty)[0] == 161002
    # an object of another kind where a tensor is expected
    arr = acl.aclCreateIntArray(_arr([1]), 1)
    assert phase1(opapi, "LeakyReluCustom", arr, 0.1, ty)[0] == 161002
    assert "is not a live aclTensor" in recent_error(acl)
    assert acl.aclDestroyTensor(arr) == 161002  # wrong kind: refused, not freed
    assert acl.aclDestroyIntArray(arr) == 0
    # invalid constructor arguments give NULL and a message
    assert not acl.aclCreateTensor(_arr([-1]), 1, ACL_FLOAT, None, 0, ACL_FORMAT_ND, None, 0, None)
    assert "negative" in recent_error(acl)
    assert not acl.aclCreateTensor(_arr([2]), 1, 99, None, 0, ACL_FORMAT_ND, None, 0, None)
    assert "unknown aclDataType 99" in recent_error(acl)
    for t in (tx, ty, big, nodata, s, nz):
        assert acl.aclDestroyTensor(t) == 0
    assert acl.aclGetRecentErrMsg() is None


def test_live_object_counters(acl):
    kinds = ("tensor", "scalar", "tensor_list", "int_array", "float_array", "bool_array")
    base = {k: capi.live_objects(k) for k in kinds}
    x = np.zeros(3, np.float32)
    t1, t2 = make_tensor(acl, x), make_tensor(acl, x)
    lst = acl.aclCreateTensorList((VP * 2)(t1, t2), 2)
    value = ctypes.c_double(2.5)
    scalar = acl.aclCreateScalar(ctypes.byref(value), 11)
    ints = acl.aclCreateIntArray(_arr([1, 2, 3]), 3)
    floats = acl.aclCreateFloatArray((ctypes.c_float * 2)(1.0, 2.0), 2)
    bools = acl.aclCreateBoolArray((ctypes.c_bool * 1)(True), 1)
    now = {k: capi.live_objects(k) - base[k] for k in kinds}
    assert now == {"tensor": 2, "scalar": 1, "tensor_list": 1, "int_array": 1, "float_array": 1, "bool_array": 1}
    assert capi.AclScalar.from_address(scalar).size == 8
    assert acl.aclDestroyTensorList(lst) == 0  # destroys its tensors too
    for obj, destroy in ((scalar, acl.aclDestroyScalar), (ints, acl.aclDestroyIntArray),
                         (floats, acl.aclDestroyFloatArray), (bools, acl.aclDestroyBoolArray)):
        assert destroy(obj) == 0
    assert {k: capi.live_objects(k) for k in kinds} == base
    assert acl.aclDestroyTensor(None) == 0


def test_python_threads(acl, opapi):

    def work(k: int) -> None:
        for _ in range(10):
            x = np.full(64, float(k), np.float32)
            y = np.ones(64, np.float32)
            z = np.zeros(64, np.float32)
            ts = [make_tensor(acl, a) for a in (x, y, z)]
            status, ws, ex = phase1(opapi, "AddCustomTemplate", *ts)
            assert status == 0
            assert opapi.aclnnAddCustomTemplate(None, ws, ex, None) == 0
            assert (z == k + 1).all()
            for t in ts:
                acl.aclDestroyTensor(t)

    errors = in_threads(work, 4)
    assert not errors, errors


def test_reset_cache_thread_local_via_opapi_keeps_the_cache(acl, opapi):
    x = np.ones(8, np.float32)
    ts = [make_tensor(acl, a) for a in (x, x.copy(), np.zeros(8, np.float32))]
    status, ws, ex = phase1(opapi, "AddCustomTemplate", *ts)
    assert status == 0 and rt_executor.cache_size() > 0
    acl.aclDestroyAclOpExecutor(ex)
    # op_fallback looks ResetCacheThreadLocal up through libcust_opapi.so's handle (its dependencies)
    size = rt_executor.cache_size()
    opapi.ResetCacheThreadLocal()
    assert rt_executor.cache_size() == size  # as CANN's: per-call state only, the cache stays
    for t in ts:
        acl.aclDestroyTensor(t)


def test_package_root_from_anchor(acl, opapi, package):
    anchor = ctypes.cast(opapi.aclnnAddNCustom, VP)
    assert acl.opbuild_aclnn_package_root(anchor, b"../..").decode() == str(package.root.resolve())
    for op in ("ReduceSumCustom", "LeakyReluCustom"):  # libopapi_<domain>.so: the built-in package
        builtin_anchor = ctypes.cast(getattr(opapi, f"aclnn{op}"), VP)
        assert acl.opbuild_aclnn_package_root(builtin_anchor, b"../..").decode() == str(package.builtin.resolve())
    assert acl.opbuild_aclnn_package_root(anchor, b"no/such/dir") is None
    assert "does not exist" in recent_error(acl)


def test_stream_from_handle_does_not_own():
    assert device.Stream.from_handle(None) is device.default_stream
    assert device.Stream.from_handle(0) is device.default_stream
    owner = device.Stream()
    borrowed = device.Stream.from_handle(owner.handle)
    assert borrowed.handle == owner.handle
    borrowed.synchronize()
    borrowed.destroy()  # detaches only
    del borrowed
    owner.synchronize()  # still alive
    owner.destroy()


def _device(acl, nbytes: int) -> int:
    ptr = VP()
    assert acl.aclrtMalloc(ctypes.byref(ptr), nbytes, 0) == 0
    return ptr.value


def _device_tensor(acl, address: int, shape, dtype=ACL_FLOAT, strides=None, storage=None) -> int:
    storage = shape if storage is None else storage
    t = acl.aclCreateTensor(_arr(shape), len(shape), dtype, None if strides is None else _arr(strides), 0,
                            ACL_FORMAT_ND, _arr(storage), len(storage), address)
    assert t
    return t


def test_storage_past_the_end_of_its_device_buffer_is_refused(acl, opapi):
    """A tensor on an aclrtMalloc buffer smaller than its storage: 161002 naming the tensor and
    the buffer, on a miss and on a native cache hit alike (before, the kernel ran past the end)."""
    n = 4096
    x, y = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
    tx, ty = make_tensor(acl, x), make_tensor(acl, y)
    big, small = _device(acl, 4 * n), _device(acl, 64)
    tz_big, tz_small = _device_tensor(acl, big, (n,)), _device_tensor(acl, small, (n,))
    # a first call of this shape on a big enough buffer (its plan is cached natively)
    status, ws, ex = phase1(opapi, "AddCustomTemplate", tx, ty, tz_big)
    assert status == 0, recent_error(acl)
    assert opapi.aclnnAddCustomTemplate(None, ws, ex, None) == 0
    out = np.empty(n, np.float32)
    acl.aclrtMemcpy.argtypes = [VP, ctypes.c_size_t, VP, ctypes.c_size_t, ctypes.c_int]
    assert acl.aclrtMemcpy(out.ctypes.data, out.nbytes, big, out.nbytes, 2) == 0
    np.testing.assert_array_equal(out, x + y)
    for _ in range(2):  # the same call key again: refused on the hit path as on the miss
        status, _, _ = phase1(opapi, "AddCustomTemplate", tx, ty, tz_small)
        assert status == 161002
        assert "output 'z': its storage (shape [4096]) is 16384 bytes, but the device buffer it points into " \
               "(aclrtMalloc of 64 bytes) has 64" in recent_error(acl)
    # an interior pointer: the room is what is left of the buffer after it
    tz_inside = _device_tensor(acl, big + 512, (n,))
    assert phase1(opapi, "AddCustomTemplate", tx, ty, tz_inside)[0] == 161002
    assert f"(aclrtMalloc of {4 * n} bytes at offset 512) has {4 * n - 512}" in recent_error(acl)
    # re-pointing an executor's tensor at a buffer too small for it
    acl.aclSetOutputTensorAddr.argtypes = [VP, ctypes.c_size_t, VP, VP]
    status, ws, ex = phase1(opapi, "AddCustomTemplate", tx, ty, tz_big)
    assert status == 0 and acl.aclSetAclOpExecutorRepeatable(ex) == 0
    assert acl.aclSetOutputTensorAddr(ex, 0, tz_big, small) == 161002
    assert "storage is 16384 bytes, but the device buffer" in recent_error(acl)
    assert acl.aclDestroyAclOpExecutor(ex) == 0
    for t in (tx, ty, tz_big, tz_small, tz_inside):
        assert acl.aclDestroyTensor(t) == 0
    for p in (big, small):
        assert acl.aclrtFree(p) == 0


def test_dims_whose_extent_overflows(acl, opapi):
    """Dims whose element count overflows int64: aclCreateTensor refuses contiguous ones; with
    explicit strides and storage the aclnn call gives 161002 (before, 561000 and a traceback)."""
    huge = 1 << 40
    assert not acl.aclCreateTensor(_arr([huge, huge]), 2, ACL_FLOAT, None, 0, ACL_FORMAT_ND, None, 0, None)
    assert "viewDims overflow" in recent_error(acl)
    assert not acl.aclCreateTensor(_arr([2, 2]), 2, ACL_FLOAT, _arr([(1 << 63) - 1, 1]), 0, ACL_FORMAT_ND, None, 0, None)
    assert "larger than 2^63" in recent_error(acl)
    x = np.ones(4, np.float32)
    tx, ty = make_tensor(acl, x), make_tensor(acl, np.empty(4, np.float32))
    t = _device_tensor(acl, x.ctypes.data, (1, 4), strides=(1, 1), storage=(huge, huge, huge))
    status, _, _ = phase1(opapi, "AddCustomTemplate", tx, t, ty)
    assert status == 161002, recent_error(acl)
    assert "more than any buffer can hold" in recent_error(acl)
    for obj in (tx, ty, t):
        assert acl.aclDestroyTensor(obj) == 0


def test_ai_cpu_output_past_the_end_of_its_device_buffer_is_refused(acl, package):
    """An AI CPU op's output on an aclrtMalloc buffer smaller than its storage: 161002 in phase 1
    (before, the compute function wrote past the buffer: a hang or a crash)."""
    lib = ctypes.CDLL(str(package.lib))
    phase1_fn = lib.aclnnNonZeroCustomGetWorkspaceSize
    phase1_fn.argtypes = [VP, VP, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(VP)]
    x = np.arange(1, 9, dtype=np.float32)
    tx = make_tensor(acl, x)
    small = _device(acl, 16)
    out = _device_tensor(acl, small, (1, 8), dtype=ACL_INT64)
    ws, ex = ctypes.c_uint64(), VP()
    assert phase1_fn(tx, out, ctypes.byref(ws), ctypes.byref(ex)) == 161002
    assert "its storage (shape [1, 8]) is 64 bytes, but the device buffer it points into (aclrtMalloc of 16 " \
           "bytes) has 16" in recent_error(acl)
    for t in (tx, out):
        assert acl.aclDestroyTensor(t) == 0
    assert acl.aclrtFree(small) == 0
