"""What generated Python aclnn modules call: registration, the two phases, the one-shot call.

`import_ops(package_dir)` loads a package's generated `op_api/python/aclnn_ops.py`; that module
registers its ops here with the package they belong to and forwards every call to this module.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any, Sequence

import numpy as np

from opbuild.abi.ge_types import dtype_name, numpy_dtype
from opbuild.runtime.binaries.selection import OpRuntime
from opbuild.runtime.call import aicpu as _aicpu
from opbuild.runtime.call import executor as _executor
from opbuild.runtime.errors import (
    ACLNN_ERR_INNER,
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_PARAM_NULLPTR,
    AclnnError,
    as_aclnn_error,
)
from opbuild.runtime.infer import infer_outputs
from opbuild.runtime.tensor import Tensor, as_array
from opbuild.spec.serialize import spec_from_dict

PYTHON_MODULE = Path("op_api/python/aclnn_ops.py")
_LOADED: dict[Path, ModuleType] = {}
_LOCK = threading.Lock()


def register_package(module_file: str, definitions: dict[str, Any]) -> dict[str, OpRuntime]:
    """Called by a generated module at import: its ops, bound to the package it lives in."""
    python_dir = Path(module_file).resolve().parent
    package = python_dir.parent.parent
    ops = {}
    for name, d in definitions.items():
        spec_path = python_dir / "keyrules" / d["snake"] / "op.yaml"
        ops[name] = OpRuntime(spec_from_dict(d, spec_path), package)
    return ops


def import_ops(package_dir: str | Path) -> ModuleType:
    """The generated Python aclnn module of the package at `package_dir` (e.g. out/opp/vendors/customize)."""
    root = Path(package_dir).resolve()
    module_path = root / PYTHON_MODULE
    with _LOCK:
        module = _LOADED.get(module_path)
        if module is not None:
            return module
        if not module_path.is_file():
            raise AclnnError(ACLNN_ERR_INNER, f"no generated aclnn module at {module_path}: is {root} a built op package?")
        name = f"opbuild_ops_{abs(hash(str(root))):x}"
        spec = importlib.util.spec_from_file_location(name, module_path)
        if spec is None or spec.loader is None:
            raise AclnnError(ACLNN_ERR_INNER, f"{module_path} cannot be imported as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        _LOADED[module_path] = module
        return module


def get_workspace_size(op: OpRuntime, inputs: Sequence[Any], attrs: Sequence[Any], outputs: Sequence[Any],
                       deterministic: bool | None = None, impl_mode: str | int | None = None):
    return _executor.get_workspace_size(op, inputs, attrs, outputs, deterministic, impl_mode)


def execute(workspace: Any, workspace_size: int, executor: _executor.Executor, stream: Any = None) -> int:
    if type(executor) is _aicpu.AicpuExecutor:
        _aicpu.execute(workspace, workspace_size, executor, stream)
    else:
        _executor.execute(workspace, workspace_size, executor, stream)
    return 0


def refuse_keywords(function: str, given: dict[str, Any], known: Sequence[str]) -> None:
    """The TypeError of a one-shot call given keyword arguments it does not take, naming each and
    the parameter it probably meant (`negative_slop` -> `negative_slope`)."""
    from opbuild.suggest import closest

    wrong = []
    for name in given:
        meant = closest(name, known)
        wrong.append(f"{name!r}" + (f" (did you mean {meant!r}?)" if meant else ""))
    raise TypeError(f"{function}() got unexpected keyword argument(s) {', '.join(wrong)}; it takes: {', '.join(known)}")


call_aicpu = _aicpu.call
"""The one-shot call of an AI CPU op (returns data-dependent outputs at their real shapes)."""


phase1_function = _executor.phase1_function
phase2_function = _executor.phase2_function


def _output_specs(op: OpRuntime, inputs: Sequence[Any], attrs: Sequence[Any]) -> tuple[tuple[tuple[int, ...], np.dtype], ...]:
    """(shape, dtype) of each output of a one-shot call, from the op's package op_proto library."""
    spec = op.spec
    attr_values = _executor.normalize_attrs(op, attrs)
    if inputs is None or len(inputs) != len(spec.inputs):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{spec.op} takes {len(spec.inputs)} inputs, got {0 if inputs is None else len(inputs)}")
    groups = []
    for param, value, what in zip(spec.inputs, inputs, op.input_what, strict=True):
        values = value if param.param_type == "dynamic" and isinstance(value, (list, tuple)) else [value]
        group = []
        for v in values:
            if v is None:
                if param.param_type == "optional":
                    break
                raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{what} is a null pointer")
            array, fmt = as_array(v, what)
            try:
                group.append((dtype_name(array.dtype), fmt, array.shape))
            except ValueError as exc:
                raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what}: {exc}") from None
        groups.append(group)
    inferred = infer_outputs(op, groups, attr_values)
    specs = []
    for index, param in enumerate(spec.outputs):
        shape, dtype = inferred[index] if inferred is not None else (None, None)
        if shape is None:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                             f"{spec.op}: output '{param.name}' has no shape rule; use the two-phase API with an output tensor")
        if dtype is None:  # (numpy_dtype(None) would be float64)
            raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                             f"{spec.op}: output '{param.name}' has no dtype for these inputs; use the two-phase API")
        specs.append((shape, numpy_dtype(dtype)))
    return tuple(specs)


def call(op: OpRuntime, inputs: Sequence[Any], attrs: Sequence[Any], deterministic: bool | None = None,
         impl_mode: str | int | None = None, stream: Any = None):
    """One shot: allocate the outputs by the spec's rules, run both phases, return the outputs.

    Returns numpy arrays when the inputs are numpy arrays, Tensors when any input is a Tensor.
    Output shapes and dtypes are cached per thread by the inputs' dtypes and shapes (simple ops).
    Raises only AclnnError (foreign exceptions converted: errors.as_aclnn_error).
    """
    try:
        key = None
        if op.simple and inputs is not None and attrs is not None and len(inputs) == op.n_inputs:
            parts: list[Any] = [op]
            for v in attrs:
                parts.append(v)
                parts.append(type(v))
            plain = True
            for v in inputs:
                if type(v) is np.ndarray:
                    parts += (v.dtype, v.shape)
                else:
                    plain = False
                    break
            if plain:
                key = tuple(parts)
                try:
                    hash(key)
                except TypeError:
                    key = None
        cache = _executor._CACHE.oneshot
        specs = cache.get(key) if key is not None else None
        if specs is None:
            specs = _output_specs(op, inputs, attrs)
            if key is not None:
                if len(cache) >= _executor.capacity():
                    cache.clear()
                cache[key] = specs
        try:
            outputs = [np.empty(shape, dtype) for shape, dtype in specs]
        except (ValueError, MemoryError):
            outputs = _allocate(op, specs)  # says which output is too large
        phase1, phase2 = op.phase1, op.phase2
        if phase1 is not None and phase2 is not None and len(attrs) == op.n_attrs:
            if deterministic is None and impl_mode is None:
                size, executor = phase1(*inputs, *attrs, *outputs)
            else:
                size, executor = phase1(*inputs, *attrs, *outputs, deterministic=deterministic, impl_mode=impl_mode)
            workspace = np.empty(size, np.uint8) if size else None
            phase2(workspace, size, executor, stream)
        else:
            size, executor = _executor.get_workspace_size(op, inputs, attrs, outputs, deterministic, impl_mode)
            workspace = np.empty(size, np.uint8) if size else None
            _executor.execute(workspace, size, executor, stream)
        if stream is not None and workspace is not None:
            stream.enqueue_host(lambda: workspace)
        results: list[Any]
        if key is None and any(isinstance(_first(v), Tensor) for v in inputs):
            results = [Tensor(o) for o in outputs]
        else:
            results = outputs
        return results[0] if len(results) == 1 else tuple(results)
    except AclnnError:
        raise
    except Exception as exc:  # the aclnn API raises AclnnError only
        raise as_aclnn_error(exc, op.name) from exc


if _executor._fastpath is not None:
    # The cache hit of plain numpy arrays without per-call d/p/stream runs in C
    # (native/src/oneshot.c): the same key, output specs cache and phase functions as `call`
    # above, which does every other call (and this one's first: it fills the specs cache).
    _python_call = call
    _oneshot = _executor._fastpath.OneShot(_python_call, _executor._CACHE)
    _oneshot.__name__ = _oneshot.__qualname__ = "call"
    _oneshot.__doc__ = _python_call.__doc__
    _oneshot.__module__ = __name__
    _oneshot.__wrapped__ = _python_call
    call = _oneshot


def _allocate(op: OpRuntime, specs) -> list[np.ndarray]:
    """The one-shot outputs; a shape too large to allocate is the caller's (161002), said so."""
    outputs = []
    for param, (shape, dtype) in zip(op.spec.outputs, specs, strict=True):
        try:
            outputs.append(np.empty(shape, dtype))
        except (ValueError, MemoryError) as exc:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{op.name}: output '{param.name}' of shape {list(shape)} "
                                                      f"({np.dtype(dtype).name}) is too large to allocate: {exc}") from None
    return outputs


def _first(value: Any) -> Any:
    return value[0] if isinstance(value, (list, tuple)) and value else value
