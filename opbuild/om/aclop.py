"""The Python side of aclopExecute(V2) and aclopCompileAndExecute(V2) (native/src/acl_op.c).

Two ways to run an op by type, as CANN:

* **compile and execute** (`compile_` true): "compiling" is selecting the binary. The op is
  looked up in the op packages the runtime searches (opbuild.runtime.fallback.search: the
  ASCEND_CUSTOM_OPP_PATH packages, ASCEND_OPP_PATH's vendors by load priority, its built-in
  package), the first package holding it runs it through its generated Python module: the same
  selection, tiling and launch as an aclnn call, ordered on the caller's stream.
* **execute** a single-op model: the .om files of the aclopSetModelDir directory (and those given
  to aclopLoad, searched first) are matched BY CONTENT: a one-node model whose op type, inputs
  (count, dtype, shape: -1 in the model matches any dim, [-2] any rank), attributes and output
  dtypes equal the call's. It runs with opbuild.om.run.OmRunner. The models of that directory (and
  of aclopLoad) are trusted: the application chose them, as CANN runs what it finds there.

Tensors arrive as (aclDataType, aclFormat, dims, address, size, name) tuples, attributes as
(name, kind, value) with the kinds of acl_desc.h. Every function returns (aclError, message)
and never raises.
"""

from __future__ import annotations

import ctypes
import math
import threading
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from opbuild.abi.vocabulary import DTYPE_BY_ACL, FORMAT_BY_ACL
from opbuild.runtime import acl_errors as E
from opbuild.runtime.acl_errors import AclError

TensorArg = tuple[int, int, tuple[int, ...], int, int, str]
"""(aclDataType, aclFormat, dims, device address, buffer size in bytes, name)."""
AttrArg = tuple[str, str, Any]

_LOCK = threading.Lock()


# ---- buffers -------------------------------------------------------------------------------------

def dtype_name(acl_dtype: int, what: str) -> str:
    rec = DTYPE_BY_ACL.get(acl_dtype)
    if rec is None:
        raise AclError(E.ACL_ERROR_UNSUPPORTED_DATA_TYPE, f"{what}: aclDataType {acl_dtype} is not supported; "
                       f"supported: {', '.join(f'{d.name} ({v})' for v, d in sorted(DTYPE_BY_ACL.items()))}")
    return rec.name


def buffer_array(acl_dtype: int, dims: Sequence[int], address: int, size: int, what: str) -> np.ndarray:
    """A zero-copy numpy array of `dims` over the buffer (ACL_ERROR_INVALID_PARAM when too small)."""
    dtype_name(acl_dtype, what)  # (AclError for a type opbuild has no dtype of)
    dtype = np.dtype(DTYPE_BY_ACL[acl_dtype].numpy)
    if any(d < 0 for d in dims):
        raise AclError(E.ACL_ERROR_INVALID_PARAM, f"{what}: dims {list(dims)} are not known; give the real shape "
                                                  f"in the tensor desc")
    nbytes = math.prod(dims) * dtype.itemsize
    if nbytes > size:
        raise AclError(E.ACL_ERROR_INVALID_PARAM, f"{what}: shape {list(dims)} of {dtype.name} needs {nbytes} bytes, "
                                                  f"the data buffer has {size}")
    if nbytes == 0:
        return np.empty(tuple(dims), dtype)
    if not address:
        raise AclError(E.ACL_ERROR_INVALID_PARAM, f"{what}: the data buffer address is a null pointer")
    raw = (ctypes.c_char * nbytes).from_address(address)
    return np.ndarray(tuple(dims), dtype, buffer=memoryview(raw))


def _arrays(tensors: Sequence[TensorArg], what: str) -> list[np.ndarray | None]:
    out: list[np.ndarray | None] = []
    for i, (dt, fmt, dims, address, size, _name) in enumerate(tensors):
        label = f"{what}[{i}]"
        if dt == -1:  # ACL_DT_UNDEFINED: an absent optional input
            out.append(None)
            continue
        if fmt not in FORMAT_BY_ACL and fmt != -1:
            raise AclError(E.ACL_ERROR_FORMAT_NOT_MATCH, f"{label}: aclFormat {fmt} is not supported; supported: "
                           + ", ".join(f"{f.name} ({v})" for v, f in sorted(FORMAT_BY_ACL.items())))
        out.append(buffer_array(dt, dims, address, size, label))
    return out


def _attr_dict(attrs: Sequence[AttrArg]) -> dict[str, Any]:
    return {name: value for name, _kind, value in attrs}


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        try:
            return math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-12)
        except (TypeError, ValueError):
            return False
    return a == b


# ---- compile and execute: the op packages ------------------------------------------------------

def _package_op(op_type: str):
    """(package root, OpRuntime) of the first searched package holding op_type."""
    from opbuild.runtime.api import PYTHON_MODULE, import_ops
    from opbuild.runtime.fallback.search import package_roots

    roots = package_roots()
    searched = []
    for root in roots:
        if not (Path(root) / PYTHON_MODULE).is_file():
            searched.append(f"{root} (no op package)")
            continue
        ops = getattr(import_ops(root), "_OPS", {})
        if op_type in ops:
            return root, ops[op_type]
        searched.append(f"{root} (ops: {', '.join(sorted(ops)) or 'none'})")
    where = "; ".join(searched) if searched else ("no packages: ASCEND_CUSTOM_OPP_PATH and ASCEND_OPP_PATH are unset")
    raise AclError(E.ACL_ERROR_OP_NOT_FOUND, f"op {op_type} is in no op package; searched {where}")


def _run_package_op(op_type: str, inputs: Sequence[TensorArg], outputs: Sequence[TensorArg],
                    attrs: Sequence[AttrArg], stream: int) -> None:
    from opbuild.runtime import api
    from opbuild.runtime.device import Stream
    from opbuild.runtime.tensor import Tensor

    _root, op = _package_op(op_type)
    spec = op.spec
    if any(p.param_type == "dynamic" for p in spec.inputs):
        raise AclError(E.ACL_ERROR_FEATURE_UNSUPPORTED, f"{op_type}: ops with a dynamic (list) input are not yet "
                                                        f"supported by aclopCompileAndExecute; use its aclnn API")
    ins = _arrays(inputs, "inputs")
    if len(ins) > len(spec.inputs) or any(p.param_type != "optional" for p in spec.inputs[len(ins):]):
        raise AclError(E.ACL_ERROR_OP_INPUT_NOT_MATCH, f"{op_type} takes inputs {[p.name for p in spec.inputs]}, "
                                                       f"got {len(ins)}")
    ins += [None] * (len(spec.inputs) - len(ins))
    outs = _arrays(outputs, "outputs")
    if len(outs) != len(spec.outputs) or any(o is None for o in outs):
        raise AclError(E.ACL_ERROR_OP_OUTPUT_NOT_MATCH, f"{op_type} has outputs {[p.name for p in spec.outputs]}, "
                                                        f"got {len(outs)} output descs")
    given = _attr_dict(attrs)
    unknown = sorted(set(given) - {a.name for a in spec.attrs})
    if unknown:
        raise AclError(E.ACL_ERROR_OP_ATTR_NOT_MATCH, f"{op_type} has no attribute(s) {unknown} (attributes: "
                                                      f"{[a.name for a in spec.attrs]})")
    attr_values = [given.get(a.name) for a in spec.attrs]
    def tagged(arrays: list[np.ndarray | None], tensors: Sequence[TensorArg]) -> list[Any]:
        # a format other than ND travels with the array (opbuild.runtime.tensor.Tensor)
        fmts = [FORMAT_BY_ACL.get(t[1]) for t in tensors] + [None] * (len(arrays) - len(tensors))
        return [a if a is None or f is None or f.name == "ND" else Tensor(a, f.name) for a, f in zip(arrays, fmts, strict=True)]

    size, executor = api.get_workspace_size(op, tagged(ins, inputs), attr_values, tagged(outs, outputs))
    workspace = np.empty(size, np.uint8) if size else None
    s = Stream.from_handle(stream) if stream else None
    api.execute(workspace, size, executor, s)
    if s is not None and workspace is not None:
        s.enqueue_host(lambda: workspace)  # alive until the stream ran the op


# ---- execute: single-op models -----------------------------------------------------------------

class _Candidate:
    """One single-op model: its source, parsed model and the call signature it accepts."""

    def __init__(self, source: str, model: Any) -> None:
        self.source = source
        self.model = model
        md = model.model_def
        node = md["nodes"][0]
        self.op_type: str = node["type"]
        self.inputs = [(i["dtype"], list(i["shape"])) for i in md["inputs"]]
        self.attrs: dict[str, Any] = dict(node.get("attrs") or {})
        self.output_dtypes = list(node.get("output_dtypes") or [])
        self.n_outputs = len(md["outputs"])
        self.runner: Any = None  # an OmRunner, made at the first run

    def describe(self) -> str:
        ins = ", ".join(f"{dt}{shape}" for dt, shape in self.inputs)
        attrs = f" attrs {self.attrs}" if self.attrs else ""
        return f"{Path(self.source).name}: {self.op_type}({ins}){attrs}"

    def inputs_match(self, given: Sequence[tuple[str, list[int]]]) -> bool:
        if len(given) != len(self.inputs):
            return False
        for (dt, shape), (want_dt, want) in zip(given, self.inputs, strict=True):
            if dt != want_dt:
                return False
            if want == [-2]:
                continue
            if len(shape) != len(want) or any(w != -1 and w != s for w, s in zip(want, shape, strict=True)):
                return False
        return True

    def attrs_match(self, given: dict[str, Any]) -> bool:
        return set(given) == set(self.attrs) and all(_same_value(given[k], self.attrs[k]) for k in given)

    def run(self, inputs: list[np.ndarray | None], outputs: list[np.ndarray | None]) -> None:
        from opbuild.om.run import OmRunner

        if self.runner is None:
            self.runner = OmRunner(self.model, trust=True)  # the app chose it: its model directory, or aclopLoad
        md = self.model.model_def
        result = self.runner.run({i["name"]: a for i, a in zip(md["inputs"], inputs, strict=True)})
        for k, (name, out) in enumerate(zip(md["outputs"], outputs, strict=True)):
            if out is None:  # (not reached: _run_model_op refuses an ACL_DT_UNDEFINED output's dtype first)
                raise AclError(E.ACL_ERROR_INVALID_PARAM, f"{self.describe()}: output {k} ({name}) has an undefined "
                               f"data type (ACL_DT_UNDEFINED): an output needs a buffer")
            value = np.asarray(result[name])
            if value.size != out.size or value.dtype != out.dtype:
                raise AclError(E.ACL_ERROR_OP_OUTPUT_NOT_MATCH, f"{self.describe()}: output {k} ({name}) is "
                               f"{value.dtype}{list(value.shape)}, the output desc says {out.dtype}{list(out.shape)}")
            np.copyto(out, value.reshape(out.shape))


_DIR_CACHE: dict[str, tuple[tuple, list[_Candidate], list[str]]] = {}
_MEM_MODELS: list[_Candidate] = []


def _single_op(source: str, data: bytes) -> _Candidate | str:
    """The candidate of an .om's bytes, or why it is not a single-op model."""
    from opbuild.om.errors import OmError
    from opbuild.om.loader import parse_om

    try:
        model = parse_om(data)
    except OmError as exc:
        return f"{source}: not a readable .om ({exc})"
    if len(model.model_def.get("nodes", ())) != 1:
        return f"{source}: {len(model.model_def.get('nodes', ()))} nodes, not a single-op model"
    return _Candidate(source, model)


def _dir_models(model_dir: str) -> tuple[list[_Candidate], list[str]]:
    """The single-op models of a directory (re-read when its .om files change) and the skipped files."""
    try:
        files = sorted(p for p in Path(model_dir).iterdir() if p.suffix == ".om" and p.is_file())
    except OSError as exc:
        raise AclError(E.ACL_ERROR_INVALID_FILE, f"cannot list the model directory {model_dir}: {exc.strerror}") from None
    stamp = tuple((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in files)
    cached = _DIR_CACHE.get(model_dir)
    if cached is not None and cached[0] == stamp:
        return cached[1], cached[2]
    models, skipped = [], []
    for p in files:
        c = _single_op(str(p), p.read_bytes())
        (skipped.append(c) if isinstance(c, str) else models.append(c))
    _DIR_CACHE[model_dir] = (stamp, models, skipped)
    return models, skipped


def _run_model_op(op_type: str, inputs: Sequence[TensorArg], outputs: Sequence[TensorArg],
                  attrs: Sequence[AttrArg], stream: int, model_dir: str | None) -> None:
    from opbuild.runtime.device import Stream

    models = list(_MEM_MODELS)
    skipped: list[str] = []
    if model_dir:
        found, skipped = _dir_models(model_dir)
        models += found
    where = f"the model directory {model_dir}" if model_dir else "no model directory (aclopSetModelDir was not called)"
    if _MEM_MODELS:
        where += f" and {len(_MEM_MODELS)} model(s) of aclopLoad"
    of_type = [m for m in models if m.op_type == op_type]
    if not of_type:
        types = sorted({m.op_type for m in models})
        raise AclError(E.ACL_ERROR_OP_TYPE_NOT_MATCH, f"no model found for op {op_type} in {where} (single-op "
                       f"models there: {', '.join(types) or 'none'}"
                       + (f"; skipped: {'; '.join(skipped)}" if skipped else "")
                       + "); build one with `opbuild om single-op` or `atc --singleop`")
    inputs = [t for t in inputs if t[0] != -1]  # an absent optional input is not a model input
    given_in = [(dtype_name(t[0], f"inputs[{i}]"), list(t[2])) for i, t in enumerate(inputs)]
    shown = ", ".join(f"{dt}{shape}" for dt, shape in given_in)
    by_input = [m for m in of_type if m.inputs_match(given_in)]
    if not by_input:
        raise AclError(E.ACL_ERROR_OP_INPUT_NOT_MATCH, f"no model found for op {op_type}({shown}) in {where}; its "
                       f"models take: {'; '.join(m.describe() for m in of_type)}")
    given_attrs = _attr_dict(attrs)
    by_attr = [m for m in by_input if m.attrs_match(given_attrs)]
    if not by_attr:
        raise AclError(E.ACL_ERROR_OP_ATTR_NOT_MATCH, f"no model found for op {op_type}({shown}) with attrs "
                       f"{given_attrs} in {where}; its models: {'; '.join(m.describe() for m in by_input)}")
    out_dtypes = [dtype_name(t[0], f"outputs[{i}]") for i, t in enumerate(outputs)]
    chosen = next((m for m in by_attr if m.n_outputs == len(outputs)
                   and (not m.output_dtypes or m.output_dtypes == out_dtypes)), None)
    if chosen is None:
        raise AclError(E.ACL_ERROR_OP_OUTPUT_NOT_MATCH, f"no model found for op {op_type}({shown}) with outputs "
                       f"{out_dtypes} in {where}; its models give: "
                       + "; ".join(f"{m.describe()} -> {m.output_dtypes}" for m in by_attr))
    ins = _arrays(inputs, "inputs")
    outs = _arrays(outputs, "outputs")
    if stream:
        Stream.from_handle(stream).synchronize()  # the model runs after the stream's earlier work
    chosen.run(ins, outs)


# ---- entry points (acl_op.c) -------------------------------------------------------------------

def execute(op_type: str, inputs: Sequence[TensorArg], outputs: Sequence[TensorArg], attrs: Sequence[AttrArg],
            stream: int, model_dir: str | None, compile_: int) -> tuple[int, str]:
    try:
        with _LOCK:
            if compile_:
                _run_package_op(op_type, inputs, outputs, attrs, stream)
            else:
                _run_model_op(op_type, inputs, outputs, attrs, stream, model_dir)
        return E.ACL_SUCCESS, ""
    except Exception as exc:  # noqa: BLE001 - every failure becomes a code for C
        return E.failure(exc)


def load(data: bytes) -> tuple[int, str]:
    """aclopLoad: one single-op model from memory, searched before the model directory."""
    try:
        c = _single_op("<aclopLoad model>", bytes(data))
        if isinstance(c, str):
            return E.ACL_ERROR_PARSE_MODEL, c
        with _LOCK:
            _MEM_MODELS.append(c)
        return E.ACL_SUCCESS, ""
    except Exception as exc:  # noqa: BLE001 - every failure becomes a code for C
        return E.failure(exc)


def reset() -> None:
    """Forget the models of aclopLoad and the directory cache (tests)."""
    with _LOCK:
        _MEM_MODELS.clear()
        _DIR_CACHE.clear()

