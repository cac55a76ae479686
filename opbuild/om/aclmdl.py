"""The Python side of the aclmdl model API (native/src/acl_op.c): .om models by id.

aclmdlLoadFromFile / FromMem parse the model (opbuild.om.loader) and build its OmRunner
(opbuild.om.run); a model that carries code (kernels, op .so files, a Python key rule) loads only
when the process trusts models: env OPBUILD_OM_TRUST=1, the C API's spelling of
`opbuild om run --trust`. Nothing of an untrusted model is loaded.

aclmdlExecute runs the model on the input buffers (the model's dtypes and shapes; where the model
leaves dims open (-1), the shape of the buffer's dataset tensor desc (aclmdlSetDatasetTensorDesc),
or else the one open dim the buffer size determines), copies each output into its buffer and
returns the outputs' dtypes and shapes (the output dataset's tensor descs). Every function
returns (aclError, message, ...) and never raises.
"""

from __future__ import annotations

import math
import os
import threading
from typing import Any, Sequence

import numpy as np

from opbuild.abi.vocabulary import DTYPE, FORMAT
from opbuild.om.aclop import buffer_array
from opbuild.runtime import acl_errors as E
from opbuild.runtime.acl_errors import AclError

TRUST_ENV = "OPBUILD_OM_TRUST"
"""Set to 1 to let aclmdlLoadFromFile / FromMem load models that carry code."""

_LOCK = threading.Lock()
_MODELS: dict[int, "_Loaded"] = {}
_NEXT_ID = [1]


class _Loaded:
    """A loaded model: its runner and the description aclmdlGetDesc copies."""

    def __init__(self, model: Any, runner: Any) -> None:
        self.model = model
        self.runner = runner
        md = model.model_def
        self.inputs = [(i["name"], i["dtype"], list(i["shape"])) for i in md["inputs"]]
        produced: dict[str, tuple[str, list[int] | None]] = {}
        for node in md["nodes"]:
            shapes = node.get("output_shapes") or [None] * len(node["outputs"])
            for name, dt, shape in zip(node["outputs"], node.get("output_dtypes") or [], shapes, strict=False):
                produced[name] = (dt, None if shape is None else list(shape))
        self.outputs = [(name, *produced.get(name, (None, None))) for name in md["outputs"]]


def _acl_code(dtype: str) -> int:
    """The aclDataType of a dtype name (AclError for one with no ACL code)."""
    code = DTYPE[dtype].cann.acl
    if code is None:
        raise AclError(E.ACL_ERROR_UNSUPPORTED_DATA_TYPE, f"{dtype} has no aclDataType")
    return code


def _io(name: str, dtype: str | None, shape: list[int] | None) -> tuple[str, int, int, tuple[int, ...], int]:
    """(name, aclDataType, aclFormat, dims, bytes) as acl_op.c's read_io takes it."""
    rec = DTYPE.get(dtype) if dtype else None
    dims = tuple(shape) if shape is not None else (-2,)
    known = shape is not None and all(d >= 0 for d in shape)
    size = math.prod(dims) * rec.itemsize if rec is not None and known else 0
    acl = rec.cann.acl if rec is not None else None
    return name, acl if acl is not None else -1, FORMAT["ND"].acl, dims, size


def _get(model_id: int) -> _Loaded:
    loaded = _MODELS.get(model_id)
    if loaded is None:
        raise AclError(E.ACL_ERROR_INVALID_MODEL_ID, f"model id {model_id} is not a loaded model (loaded: "
                                                     f"{sorted(_MODELS) or 'none'})")
    return loaded


def load(path: str | None, data: bytes | None) -> tuple[int, str, int]:
    from opbuild.om.errors import OmCompatError, OmError, OmTrustError
    from opbuild.om.loader import parse_om, read_om_file
    from opbuild.om.run import OmRunner

    try:
        source = path or "<aclmdlLoadFromMem model>"
        if path is not None:
            try:
                data = read_om_file(path)  # a regular file only: a FIFO or a device is refused, not read
            except OmError as exc:
                return E.ACL_ERROR_READ_MODEL_FAILURE, f"the model: {exc}", 0
        if data is None:
            return E.ACL_ERROR_INVALID_PARAM, "no model: neither a path nor data", 0
        trust = os.environ.get(TRUST_ENV) == "1"
        try:
            model = parse_om(bytes(data))
            model.check_trust(trust)
            runner = OmRunner(model, trust=trust)
        except OmTrustError:
            return (E.ACL_ERROR_FEATURE_UNSUPPORTED, f"{source}: model {model.name!r} carries code that would run in "
                    f"this process: {'; '.join(model.code_carried())}. Set {TRUST_ENV}=1 to load models that carry "
                    f"code, only if you trust where the file came from", 0)
        except (OmCompatError, OmError) as exc:
            return E.ACL_ERROR_PARSE_MODEL, f"{source}: {exc}", 0
        with _LOCK:
            model_id = _NEXT_ID[0]
            _NEXT_ID[0] += 1
            _MODELS[model_id] = _Loaded(model, runner)
        return E.ACL_SUCCESS, "", model_id
    except Exception as exc:  # noqa: BLE001 - every failure becomes a code for C
        code, message = E.failure(exc)
        return code, message, 0


def unload(model_id: int) -> tuple[int, str]:
    with _LOCK:
        if _MODELS.pop(model_id, None) is None:
            return E.ACL_ERROR_INVALID_MODEL_ID, f"model id {model_id} is not a loaded model"
    return E.ACL_SUCCESS, ""


def describe(model_id: int) -> tuple[int, str, list, list]:
    try:
        loaded = _get(model_id)
        return (E.ACL_SUCCESS, "", [_io(*i) for i in loaded.inputs], [_io(*o) for o in loaded.outputs])
    except Exception as exc:  # noqa: BLE001 - every failure becomes a code for C
        code, message = E.failure(exc)
        return code, message, [], []


def _input_shape(name: str, dtype: str, shape: list[int], size: int) -> list[int]:
    """The model's shape of an input, an open dim filled from the buffer size when it is the only one."""
    open_dims = [k for k, d in enumerate(shape) if d < 0]
    if not open_dims:
        return shape
    known = math.prod(d for d in shape if d >= 0) * DTYPE[dtype].itemsize
    if len(open_dims) > 1 or known == 0 or size % known:
        raise AclError(E.ACL_ERROR_MODEL_INPUT_NOT_MATCH, f"input {name}: the model's shape {shape} has open dims "
                       f"that a buffer of {size} bytes does not determine")
    filled = list(shape)
    filled[open_dims[0]] = size // known
    return filled


def _given_shape(name: str, shape: list[int], dims: Sequence[int]) -> list[int]:
    """An input's shape from its dataset tensor desc, checked against the model's."""
    dims = list(dims)
    if shape != [-2] and (len(dims) != len(shape) or any(w != -1 and w != d for w, d in zip(shape, dims, strict=True))):
        raise AclError(E.ACL_ERROR_MODEL_INPUT_NOT_MATCH, f"input {name}: the tensor desc says {dims}, the model "
                                                          f"takes {shape}")
    return dims


def execute(model_id: int, inputs: Sequence[tuple[int, int, Sequence[int] | None]],
            outputs: Sequence[tuple[int, int, Sequence[int] | None]], stream: int) -> tuple[int, str, list]:
    from opbuild.runtime.device import Stream

    try:
        with _LOCK:
            loaded = _get(model_id)
        if len(inputs) != len(loaded.inputs):
            raise AclError(E.ACL_ERROR_INVALID_PARAM, f"model {loaded.model.name} takes {len(loaded.inputs)} inputs "
                           f"({[i[0] for i in loaded.inputs]}), the input dataset has {len(inputs)} buffers")
        if len(outputs) != len(loaded.outputs):
            raise AclError(E.ACL_ERROR_INVALID_PARAM, f"model {loaded.model.name} has {len(loaded.outputs)} outputs "
                           f"({[o[0] for o in loaded.outputs]}), the output dataset has {len(outputs)} buffers")
        feed = {}
        for (name, dtype, shape), (address, size, given) in zip(loaded.inputs, inputs, strict=True):
            dims = _input_shape(name, dtype, shape, size) if given is None else _given_shape(name, shape, given)
            feed[name] = buffer_array(_acl_code(dtype), dims, address, size, f"input {name}")
        if stream:
            Stream.from_handle(stream).synchronize()  # after the stream's earlier work
        result = loaded.runner.run(feed)
        produced = []
        for (name, _dt, _shape), (address, size, _given) in zip(loaded.outputs, outputs, strict=True):
            value = np.ascontiguousarray(result[name])
            if value.nbytes > size:
                raise AclError(E.ACL_ERROR_INVALID_PARAM, f"output {name} is {value.dtype}{list(value.shape)} "
                               f"({value.nbytes} bytes), its buffer has {size}")
            flat = value.reshape(-1)
            acl_dtype = _acl_code(flat.dtype.name)
            np.copyto(buffer_array(acl_dtype, flat.shape, address, size, f"output {name}"), flat)
            produced.append((acl_dtype, tuple(value.shape)))
        return E.ACL_SUCCESS, "", produced
    except Exception as exc:  # noqa: BLE001 - every failure becomes a code for C
        code, message = E.failure(exc)
        return code, message, []
