"""The Python side of the aclnn C ABI (opbuild/runtime/native/src/acl_bridge.c).

Generated aclnn wrappers (libcust_opapi.so) call the acl library's bridge, which calls these
functions with the addresses of the C argument arrays. They read the acl objects (plain C
structs, layouts checked against the library's `opbuild_acl_layout()` table) with ctypes, wrap
tensor memory in numpy arrays without copying (the simulated device shares the host address
space; view shape, strides, offset and storage extent are honoured), and run the op through the
package's generated Python module (`opbuild.runtime.api.import_ops`).

They never raise: failures come back as (status, message, ...) with the aclnn status of an
AclnnError, or 561000 (ACLNN_ERR_INNER) with the traceback for any other exception.
"""

from __future__ import annotations

import ctypes
import functools
import struct
import threading
import traceback
from math import prod
from typing import Any

import numpy as np

from opbuild.abi.vocabulary import ACL_DATA_TYPES, ATTR_TYPES, DTYPE_BY_ACL, FORMAT_BY_ACL
from opbuild.runtime import device, settings
from opbuild.runtime.call import cache_key, launch, plan_cache
from opbuild.runtime.call.plans import native_record
from opbuild.runtime.errors import ACLNN_ERR_INNER, ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR, AclnnError
from opbuild.runtime.tensor import Tensor

# ---- the acl structs (acl_internal.h) ------------------------------------------------------------

_MAGIC_BASE = 0x6F706275696C6400
KIND_TENSOR, KIND_SCALAR, KIND_TENSOR_LIST, KIND_INT_ARRAY, KIND_FLOAT_ARRAY, KIND_BOOL_ARRAY = range(6)
KIND_EXECUTOR, KIND_STREAM, KIND_HOST_MEM = 6, 7, 8
KIND_NAMES = ("tensor", "scalar", "tensor_list", "int_array", "float_array", "bool_array", "executor", "stream",
              "host_mem", "tensor_desc", "data_buffer", "op_attr", "dataset", "model_desc", "event")
"""opbuild_acl_live_objects kinds by index (aclnn/opbuild_acl.h; the aclop / aclmdl objects from 9)."""

_P64 = ctypes.POINTER(ctypes.c_int64)


class AclTensor(ctypes.Structure):
    _fields_ = [
        ("magic", ctypes.c_uint64), ("dataType", ctypes.c_int64), ("format", ctypes.c_int64),
        ("offset", ctypes.c_int64), ("viewDimsNum", ctypes.c_uint64), ("storageDimsNum", ctypes.c_uint64),
        ("data", ctypes.c_void_p), ("viewDims", _P64), ("strides", _P64), ("storageDims", _P64),
    ]


class AclScalar(ctypes.Structure):
    _fields_ = [("magic", ctypes.c_uint64), ("dataType", ctypes.c_int64), ("size", ctypes.c_uint64),
                ("value", ctypes.c_uint8 * 16)]


class AclTensorList(ctypes.Structure):
    _fields_ = [("magic", ctypes.c_uint64), ("size", ctypes.c_uint64), ("tensors", ctypes.POINTER(ctypes.c_void_p))]


class AclIntArray(ctypes.Structure):
    _fields_ = [("magic", ctypes.c_uint64), ("size", ctypes.c_uint64), ("values", _P64)]


class AclFloatArray(ctypes.Structure):
    _fields_ = [("magic", ctypes.c_uint64), ("size", ctypes.c_uint64), ("values", ctypes.POINTER(ctypes.c_float))]


class AclBoolArray(ctypes.Structure):
    _fields_ = [("magic", ctypes.c_uint64), ("size", ctypes.c_uint64), ("values", ctypes.POINTER(ctypes.c_bool))]


STRUCTS: dict[str, type[ctypes.Structure]] = {
    "aclTensor": AclTensor, "aclScalar": AclScalar, "aclTensorList": AclTensorList,
    "aclIntArray": AclIntArray, "aclFloatArray": AclFloatArray, "aclBoolArray": AclBoolArray,
}


class _Field(ctypes.Structure):
    _fields_ = [("struct_name", ctypes.c_char_p), ("field", ctypes.c_char_p), ("offset", ctypes.c_uint32),
                ("size", ctypes.c_uint32)]


ACL_DTYPE_NAMES = {v: k for k, v in ACL_DATA_TYPES.items()}
"""aclDataType value -> enumerator (for messages); the ones opbuild runs are DTYPE_BY_ACL's."""

# ---- the acl library -----------------------------------------------------------------------------

_lib: ctypes.CDLL | None = None
_lib_lock = threading.Lock()


def acl_library() -> ctypes.CDLL:
    """The acl library (loaded once; the copy already in the process when a wrapper called us),
    its struct layouts checked against this module's."""
    global _lib
    if _lib is not None:
        return _lib
    with _lib_lock:
        if _lib is None:
            from opbuild.abi.native_libs import acl_library as path

            lib = ctypes.CDLL(str(path()))
            lib.opbuild_acl_live_objects.restype = ctypes.c_int64
            lib.opbuild_acl_live_objects.argtypes = [ctypes.c_int]
            lib.opbuild_acl_layout.restype = ctypes.POINTER(_Field)
            lib.opbuild_acl_sim_library.restype = ctypes.c_char_p
            lib.aclGetRecentErrMsg.restype = ctypes.c_char_p
            check_layout(lib)
            lib.opbuild_aclnn_op_id.restype = ctypes.c_uint64
            lib.opbuild_aclnn_op_id.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
            lib.opbuild_aclnn_call_key.restype = ctypes.c_int64
            lib.opbuild_aclnn_call_key.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_void_p,
                                                   ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
            lib.opbuild_opkey_env_token.restype = ctypes.c_uint64
            lib.opbuild_aclnn_set_dp.argtypes = [ctypes.c_int]
            # The native side mirrors the process-wide d/p, and clear_op_cache() empties its cache
            # of this thread too: registered once, here, where the library is loaded.
            settings.DP_LISTENERS.append(lib.opbuild_aclnn_set_dp)
            lib.opbuild_aclnn_set_dp(settings.DP[0])
            plan_cache.CLEAR_HOOKS.append(lib.opbuild_aclnn_clear_cache)
            # Its native hits decline while launches are watched (dump, profile: launch.add_launch_hook).
            lib.opbuild_aclnn_set_watched.argtypes = [ctypes.c_int]
            launch.WATCH_LISTENERS.append(lib.opbuild_aclnn_set_watched)
            lib.opbuild_aclnn_set_watched(len(launch.LAUNCH_OBSERVERS))
            _lib = lib
    return _lib


def check_layout(lib: ctypes.CDLL) -> None:
    """Compare the C structs (opbuild_acl_layout()) with the ctypes mirrors; AclnnError if they differ."""
    table = lib.opbuild_acl_layout()
    problems = []
    i = 0
    while table[i].struct_name is not None:
        entry = table[i]
        i += 1
        struct = STRUCTS.get(entry.struct_name.decode())
        if struct is None:
            problems.append(f"unknown struct {entry.struct_name.decode()}")
            continue
        name = entry.field.decode()
        if not name:
            if ctypes.sizeof(struct) > entry.offset:  # C has trailing flexible arrays; never smaller
                problems.append(f"sizeof {struct.__name__} {ctypes.sizeof(struct)} > C {entry.offset}")
            continue
        desc = getattr(struct, name, None)
        if desc is None or desc.offset != entry.offset or desc.size != entry.size:
            got = "missing" if desc is None else f"offset {desc.offset} size {desc.size}"
            problems.append(f"{entry.struct_name.decode()}.{name}: C offset {entry.offset} size {entry.size}, ctypes {got}")
    if problems:
        raise AclnnError(ACLNN_ERR_INNER, "the acl library and opbuild/runtime/capi.py disagree on struct layouts "
                         f"(rebuild with `pip install -e .`): {'; '.join(problems)}")


def live_objects(kind: int | str = -1) -> int:
    """Live acl objects of a kind (index or KIND_NAMES entry; -1: all)."""
    if isinstance(kind, str):
        kind = KIND_NAMES.index(kind)
    return acl_library().opbuild_acl_live_objects(kind)


# ---- reading the structs -------------------------------------------------------------------------

def _struct(cls: type[ctypes.Structure], address: int, kind: int, what: str) -> Any:
    obj = cls.from_address(address)
    if obj.magic != _MAGIC_BASE | kind:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                         f"{what} (0x{address:x}) is not a live {cls.__name__.replace('Acl', 'acl')}")
    return obj


_TENSOR_HEADER = struct.Struct("<QqqqQQQQQQ")
"""aclTensor up to its dims pointers: magic, dataType, format, offset, viewDimsNum, storageDimsNum,
data, viewDims, strides, storageDims (checked against AclTensor below)."""
assert _TENSOR_HEADER.size == ctypes.sizeof(AclTensor)
_TENSOR_KEY_END = AclTensor.viewDims.offset  # dataType..data: the part of the header a view depends on
_TENSOR_MAGIC = _MAGIC_BASE | KIND_TENSOR
_TENSORS: dict[bytes, tuple[Tensor, int, tuple[int, ...]]] = {}  # key -> (tensor, its storage bytes, storage dims)
_TENSORS_MAX = 1024


def tensor_array(address: int, what: str) -> Tensor:
    """A zero-copy Tensor over the memory an aclTensor describes.

    Tensors are cached by the aclTensor's content (data address, dtype, format, offset, dims,
    strides, storage dims): a view depends on nothing else, so a program that creates the same
    aclTensor for every call gets the same Tensor back without rebuilding it."""
    raw = ctypes.string_at(address, _TENSOR_HEADER.size)
    magic, dt, fmt_code, offset, n, m, data, p_view, p_strides, p_storage = _TENSOR_HEADER.unpack(raw)
    if magic != _TENSOR_MAGIC:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what} (0x{address:x}) is not a live aclTensor")
    if n > 64 or m > 64:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what}: {n} view / {m} storage dims")
    if p_strides == p_view + 8 * n and p_storage == p_view + 16 * n:  # one block (acl_meta.c)
        dims = ctypes.string_at(p_view, 8 * (2 * n + m))
    else:
        dims = ctypes.string_at(p_view, 8 * n) + ctypes.string_at(p_strides, 8 * n) + ctypes.string_at(p_storage, 8 * m)
    key = raw[8:_TENSOR_KEY_END] + dims
    cached = _TENSORS.get(key)
    if cached is not None:
        tensor, nbytes, storage = cached
        if nbytes:  # the buffer may have been freed and a smaller one handed out at the same address
            _check_in_buffer(what, data, nbytes, storage)
        return tensor
    values = struct.unpack(f"<{2 * n + m}q", dims)
    tensor, nbytes = _make_tensor(what, dt, fmt_code, offset, data, values, n)
    if len(_TENSORS) >= _TENSORS_MAX:
        _TENSORS.clear()
    _TENSORS[key] = (tensor, nbytes, values[2 * n:])
    return tensor


def _make_tensor(what: str, dt: int, fmt_code: int, offset: int, data: int, dims: tuple[int, ...],
                 n: int) -> tuple[Tensor, int]:
    """The Tensor over an aclTensor's memory and its storage's size in bytes (0: empty)."""
    dtype_rec = DTYPE_BY_ACL.get(dt)
    if dtype_rec is None:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what}: data type {ACL_DTYPE_NAMES.get(dt, dt)} is not "
                         f"supported; supported: {', '.join(ACL_DTYPE_NAMES[v] for v in sorted(DTYPE_BY_ACL))}")
    fmt_rec = FORMAT_BY_ACL.get(fmt_code)
    if fmt_rec is None:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what}: format {fmt_code} is not supported; supported: "
                         + ", ".join(f"{f.acl_name} ({v})" for v, f in sorted(FORMAT_BY_ACL.items())))
    fmt = fmt_rec.name
    dtype = dtype_rec.numpy
    shape, strides, storage = dims[:n], dims[n:2 * n], dims[2 * n:]
    if 0 in shape:
        return Tensor(np.empty(shape, dtype), fmt), 0
    if not data:
        raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{what}: the tensor data is a null pointer")
    storage_elems = prod(storage)
    low = offset + sum((d - 1) * s for d, s in zip(shape, strides, strict=True) if s < 0)
    high = offset + sum((d - 1) * s for d, s in zip(shape, strides, strict=True) if s > 0)
    if low < 0 or high >= storage_elems:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                         f"{what}: the view (shape {list(shape)}, strides {list(strides)}, offset {offset}) reaches "
                         f"elements {low}..{high}, outside its storage of {storage_elems} elements (storage shape "
                         f"{list(storage)})")
    itemsize = dtype.itemsize
    nbytes = storage_elems * itemsize
    if nbytes >= 1 << 63:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what}: its storage (shape {list(storage)}) is {nbytes} bytes, "
                                                  f"more than any buffer can hold")
    _check_in_buffer(what, data, nbytes, storage)
    buffer = memoryview((ctypes.c_char * nbytes).from_address(data))
    array: np.ndarray = np.ndarray(shape, dtype, buffer=buffer, offset=offset * itemsize,
                                   strides=tuple(s * itemsize for s in strides))
    return Tensor(array, fmt), nbytes


def _check_in_buffer(what: str, data: int, nbytes: int, storage: tuple[int, ...]) -> None:
    """161002 when `data` lies in a device buffer (aclrtMalloc) that ends before the tensor's
    storage does: the kernel would read or write past it. Host memory is not known and passes."""
    owner = device.allocation(data)
    if owner is None:
        return
    start, size = owner
    room = start + size - data
    if nbytes > room:
        at = f" at offset {data - start}" if data != start else ""
        raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                         f"{what}: its storage (shape {list(storage)}) is {nbytes} bytes, but the device buffer it "
                         f"points into (aclrtMalloc of {size} bytes{at}) has {room}")


def tensor_list(address: int, what: str) -> list[Tensor]:
    lst = _struct(AclTensorList, address, KIND_TENSOR_LIST, what)
    items = []
    for k in range(lst.size):
        ptr = lst.tensors[k]
        if not ptr:
            raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{what}[{k}] is a null pointer")
        items.append(tensor_array(ptr, f"{what}[{k}]"))
    return items


_C_VALUES: dict[str, type[ctypes.c_int64] | type[ctypes.c_double] | type[ctypes.c_bool]] = {
    "int64_t": ctypes.c_int64, "double": ctypes.c_double, "bool": ctypes.c_bool}
"""The ctypes mirror of each aclnn attribute C type passed by address."""
_C_ARRAYS = {"const aclIntArray *": (AclIntArray, KIND_INT_ARRAY),
             "const aclFloatArray *": (AclFloatArray, KIND_FLOAT_ARRAY),
             "const aclBoolArray *": (AclBoolArray, KIND_BOOL_ARRAY)}
"""The ctypes mirror and kind of each aclnn array attribute C type."""
_SCALAR_ATTR = {t.name: _C_VALUES[t.aclnn_c] for t in ATTR_TYPES if t.aclnn_by_address}
_ARRAY_ATTR = {t.name: _C_ARRAYS[t.aclnn_c] for t in ATTR_TYPES if t.is_list}


def attr_value(attr_type: str, address: int, what: str) -> Any:
    """An attribute from its C argument (see aclnn/opbuild_acl.h); None (the default) for NULL."""
    if not address:
        return None
    if attr_type in _SCALAR_ATTR:
        return _SCALAR_ATTR[attr_type].from_address(address).value
    if attr_type == "str":
        return ctypes.string_at(address).decode("utf-8")
    cls, kind = _ARRAY_ATTR[attr_type]
    array = _struct(cls, address, kind, what)
    return [array.values[i] for i in range(array.size)]


def _pointers(address: int, count: int, what: str) -> tuple[int, ...]:
    """The `count` pointers of a C argument array."""
    if count == 0:
        return ()
    if not address:
        raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"the {what} array is a null pointer")
    return struct.unpack(f"<{count}Q", ctypes.string_at(address, 8 * count))


# ---- ops -----------------------------------------------------------------------------------------

def _read_input(param_type: str, what: str):
    if param_type == "dynamic":
        def read(ptr: int) -> Any:
            if not ptr:
                raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{what} (aclTensorList) is a null pointer")
            return tensor_list(ptr, what)
    else:
        def read(ptr: int) -> Any:
            return tensor_array(ptr, what) if ptr else None
    return read


def _read_attr(attr_type: str, what: str):
    return lambda ptr: attr_value(attr_type, ptr, what)


_IN_KINDS = {"required": 0, "optional": 1, "dynamic": 2}
_ATTR_TAGS = cache_key.ATTR_TAGS


def _signature(spec: Any) -> tuple[bytes, bytes, int, tuple[bytes, ...]]:
    """What the native path needs to build an op's key from C arguments (opcache.c): input kinds,
    attribute key tags, output count, and each attribute's default value encoded as key words
    (b"" when required), encoded here once so that C never interprets a default."""
    from opbuild.runtime.call.arguments import _ATTR_CONVERT

    defaults = []
    for a in spec.attrs:
        if a.required:
            defaults.append(b"")
            continue
        words = cache_key.key_words(0, 0, 0, [], [(a.type, _ATTR_CONVERT[a.type](a.default))])[6:]
        defaults.append(struct.pack(f"={len(words)}Q", *words))
    return (bytes(_IN_KINDS[p.param_type] for p in spec.inputs), bytes(_ATTR_TAGS[a.type] for a in spec.attrs),
            len(spec.outputs), tuple(defaults))


def native_plan(executor: Any) -> bytes | None:
    """The plan of a phase 1 as the native cache receives it (plans.native_record, parsed by
    acl_bridge.c learn_from_miss), or None when its calls cannot be launched from the key alone
    (tensors copied, tensor lists, an empty output, a kernel-less plan, no package stamp)."""
    plan = executor.plan
    if executor.args is None or plan.empty or plan.kernel is None or plan.selection is None:
        return None
    refs = executor.refs
    if any(a.size == 0 for a in refs) or not plan.stamp_path or plan.stamp is None or len(refs) != plan.nargs - 2:
        return None
    return native_record(plan, bytes(a.itemsize for a in refs))


class OpCall:
    """How to turn one op's C arguments into a call of its phase-1 function (built once per op)."""

    __slots__ = ("spec", "phase1", "n_in", "n_attr", "n_out", "readers_in", "readers_attr", "readers_out",
                 "signature")

    def __init__(self, spec: Any, phase1: Any) -> None:
        self.spec = spec
        self.phase1 = phase1
        self.n_in, self.n_attr, self.n_out = len(spec.inputs), len(spec.attrs), len(spec.outputs)
        self.readers_in = [_read_input(p.param_type, f"input '{p.name}'") for p in spec.inputs]
        self.readers_attr = [_read_attr(a.type, f"attribute '{a.name}'") for a in spec.attrs]
        self.readers_out = [_read_input("required", f"output '{p.name}'") for p in spec.outputs]
        self.signature = _signature(spec)

    def arguments(self, inputs: int, attrs: int, outputs: int) -> list[Any]:
        args = [read(ptr) for read, ptr in zip(self.readers_in, _pointers(inputs, self.n_in, "inputs"), strict=True)]
        args += [read(ptr) for read, ptr in zip(self.readers_attr, _pointers(attrs, self.n_attr, "attrs"), strict=True)]
        args += [read(ptr) for read, ptr in zip(self.readers_out, _pointers(outputs, self.n_out, "outputs"), strict=True)]
        return args


_OPS: dict[tuple[str, str], OpCall] = {}


def _op(package_root: str, op_type: str) -> OpCall:
    """The OpCall of an op of a package (cached per root and op)."""
    entry = _OPS.get((package_root, op_type))
    if entry is None:
        from opbuild.runtime.api import import_ops

        acl_library()  # struct layouts checked before the first read
        module = import_ops(package_root)
        ops = getattr(module, "_OPS", {})
        if op_type not in ops:
            raise AclnnError(ACLNN_ERR_INNER, f"the op package {package_root} has no op {op_type} (its ops: "
                             f"{', '.join(sorted(ops)) or 'none'}); is libcust_opapi.so from another build?")
        entry = OpCall(ops[op_type].spec, getattr(module, f"aclnn{op_type}GetWorkspaceSize"))
        _OPS[(package_root, op_type)] = entry
    return entry


def _failure(exc: BaseException) -> tuple[int, str]:
    if isinstance(exc, AclnnError):
        return exc.status, exc.message
    text = "".join(traceback.format_exception(exc)).rstrip()
    return ACLNN_ERR_INNER, f"internal error: {type(exc).__name__}: {exc}\n{text}"


def get_workspace_size(package_root: str, op_type: str, inputs: int, attrs: int, outputs: int):
    """Phase 1 from C (the native path's miss): (0, "", workspace_size, executor, simplified_key,
    native) or (status, message, 0, None, "", None); `native` is (op signature, native_plan) for
    the native cache."""
    try:
        call = _OPS.get((package_root, op_type)) or _op(package_root, op_type)
        size, executor = call.phase1(*call.arguments(inputs, attrs, outputs))
        if executor.plan is None:  # an AI CPU op: the real shapes of its outputs go to the out aclTensors
            executor.given = ()  # (not to the Tensors read from them: those are shared, cached by content)
            executor.on_shapes = functools.partial(set_view_shapes, _pointers(outputs, call.n_out, "outputs"))
            return 0, "", size, executor, "", None
        key = executor.simplified_key if executor.plan.selection is not None else ""
        try:
            native = (call.signature, native_plan(executor))
        except Exception:  # noqa: BLE001 - the native cache is an optimization: without it, every call is a miss
            native = None
        return 0, "", size, executor, key, native
    except Exception as exc:  # noqa: BLE001 - every failure becomes a status for C
        status, message = _failure(exc)
        return status, message, 0, None, "", None


def set_view_shapes(tensors: tuple[int, ...], shapes: tuple[tuple[int, ...], ...]) -> None:
    """Write each output's shape after the run into its aclTensor's view dims, with contiguous
    strides (a data-dependent output's real shape: what aclGetViewShape then returns). The rank
    is the one phase 1 checked; the storage is left as it is."""
    for address, shape in zip(tensors, shapes, strict=True):
        header = AclTensor.from_address(address)
        if header.magic != _TENSOR_MAGIC or header.viewDimsNum != len(shape):
            continue  # destroyed meanwhile, or not a tensor this call wrote
        stride = 1
        for d in reversed(range(len(shape))):
            header.viewDims[d] = shape[d]
            header.strides[d] = stride
            stride *= max(shape[d], 1)


def call_key(package_root: str, op_type: str, dp: int, inputs: int, attrs: int, outputs: int) -> list[int]:
    """The key words (cache_key.py) of a C call, read from the acl structs: what opcache.c's
    key of the same call must equal (tests/capi/test_native_cache.py). The op id is the acl
    library's."""
    call = _OPS.get((package_root, op_type)) or _op(package_root, op_type)
    lib = acl_library()
    op_id = lib.opbuild_aclnn_op_id(package_root.encode(), op_type.encode())
    slots = []
    for ptr in (*_pointers(inputs, call.n_in, "inputs"), *_pointers(outputs, call.n_out, "outputs")):
        raw = ctypes.string_at(ptr, _TENSOR_HEADER.size)
        _, dt, fmt_code, offset, n, m, _, p_view, p_strides, _ = _TENSOR_HEADER.unpack(raw)
        dims = struct.unpack(f"<{n}q", ctypes.string_at(p_view, 8 * n)) if n else ()
        strides = struct.unpack(f"<{n}q", ctypes.string_at(p_strides, 8 * n)) if n else ()
        slots.append((dt, fmt_code, dims, strides, offset))
    values = [read(ptr) for read, ptr in zip(call.readers_attr, _pointers(attrs, call.n_attr, "attrs"), strict=True)]
    attr_list = []
    for a, v in zip(call.spec.attrs, values, strict=True):
        from opbuild.runtime.call.arguments import _ATTR_CONVERT

        attr_list.append((a.type, _ATTR_CONVERT[a.type](a.default if v is None else v)))
    return cache_key.key_words(op_id, cache_key.env_token(), dp, slots, attr_list)


def run(workspace: int, workspace_size: int, executor: Any, stream: int, repeatable: int):
    """Phase 2 from C: (0, "") or (status, message)."""
    try:
        from opbuild.runtime.api import execute
        from opbuild.runtime.device import Stream

        if repeatable:
            executor.set_repeatable(True)
        execute(workspace or None, workspace_size, executor, Stream.from_handle(stream) if stream else None)
        return 0, ""
    except Exception as exc:  # noqa: BLE001 - every failure becomes a status for C
        return _failure(exc)


def set_address(executor: Any, kind: int, index: int, address: int):
    """aclSet{Input,Output,}TensorAddr on an executor of the Python path (kind 0 input, 1 output,
    2 inputs-then-outputs index): (0, "") or (status, message)."""
    try:
        n_in = executor.op.n_inputs
        slot = n_in + index if kind == 1 else index
        if (kind == 0 and index >= n_in) or index < 0:
            return ACLNN_ERR_PARAM_INVALID, f"index {index} out of range"
        if executor.set_arg(slot, address):
            return 0, ""
        return (ACLNN_ERR_PARAM_INVALID, "this executor prepares its tensors in phase 2 (non-contiguous, misaligned "
                                         "or listed tensors): their addresses cannot be changed; call phase 1 again")
    except Exception as exc:  # noqa: BLE001 - every failure becomes a status for C
        return _failure(exc)


def reset_cache() -> None:
    from opbuild.runtime.call.executor import reset_cache_thread_local

    reset_cache_thread_local()


def set_deterministic(value: int) -> None:
    settings.set_deterministic(bool(value))


def get_deterministic() -> int:
    return settings.get_deterministic()
