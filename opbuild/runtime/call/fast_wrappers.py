"""The per-op phase-1 / phase-2 functions (aclnnXxxGetWorkspaceSize / aclnnXxx) and the C fast path hook.

`phase1_function` / `phase2_function` make the functions the generated aclnn module binds: plain
closures over executor.get_workspace_size / executor.execute (whose cache-hit branch is the
pure-Python hit path), raising only AclnnError. When the extension `opbuild.runtime._fastpath`
is built, `_fastpath_ready` configures it once and the functions of "simple" ops (required
tensors, scalar attributes, bound to a package) are wrapped in its C objects: cache hits of plain
numpy arrays and their default-stream launches in C, the rest in the Python function
(`wrapper.__wrapped__`). Launches are observed through launch.observe_launches (an explicit
registration: nothing is looked up per call).
"""

from __future__ import annotations

import ctypes
import functools
import inspect
from typing import Any, Callable, Sequence

from opbuild.runtime import device, settings
from opbuild.runtime.binaries.selection import OpRuntime
from opbuild.runtime.call import cache_key
from opbuild.runtime.call.executor import Executor, execute, get_workspace_size
from opbuild.runtime.call.launch import _FAST_POINTERS, LAUNCH_OBSERVERS, _launch_failed, _Native
from opbuild.runtime.call.plan_cache import _fastpath
from opbuild.runtime.call.plans import PHASE_HOOKS, executor_record, signature_program
from opbuild.runtime.errors import ACLNN_ERR_PARAM_INVALID, AclnnError, as_aclnn_error


def _signature(params: Sequence[str]) -> inspect.Signature:
    """`(<params>, *, deterministic=None, impl_mode=None)`: what inspect shows for a phase 1."""
    P = inspect.Parameter
    return inspect.Signature([P(p, P.POSITIONAL_OR_KEYWORD) for p in params] + [
        P("deterministic", P.KEYWORD_ONLY, default=None), P("impl_mode", P.KEYWORD_ONLY, default=None)])


def phase1_function(op: OpRuntime, name: str, inputs: Sequence[str], attrs: Sequence[str],
                    outputs: Sequence[str], doc: str | None = None) -> Callable[..., tuple[int, Executor]]:
    """`aclnn<Op>GetWorkspaceSize(<inputs>, <attrs>, <outputs>, *, deterministic, impl_mode)`.

    The Python function is `executor.get_workspace_size` for this op's parameters (its cache-hit
    branch is the pure-Python hit path). When the extension `_fastpath` is built, it is wrapped in
    a C `Phase1` that serves cache hits of plain numpy arrays and calls the function for the rest.
    """
    params = [*inputs, *attrs, *outputs]
    for p in params:
        if not p.isidentifier() or p in ("deterministic", "impl_mode") or p.startswith("_"):
            raise ValueError(f"{op.name}: bad parameter name {p!r} for {name}")
    n_in, n_attr, n_all = len(inputs), len(attrs), len(params)
    if op.spec.is_aicpu:  # AI CPU ops: their own phases (call/aicpu.py), no plan cache, no fast path
        from opbuild.runtime.call import aicpu

        aicpu_phase1: Any = _guarded(aicpu.phase1_function(op, name, n_in, n_attr, n_all), name)
        _dress(aicpu_phase1, name, doc)
        aicpu_phase1.__signature__ = _signature(params)
        op.phase1 = aicpu_phase1
        return aicpu_phase1
    def phase1(*args: Any, deterministic: Any = None, impl_mode: Any = None, _opkey: bytes | None = None,
               _plan: Any = None) -> tuple[int, Executor]:
        if len(args) != n_all:
            raise TypeError(f"{name}() takes {n_all} arguments ({', '.join(params)}), got {len(args)}")
        try:  # _guarded, inline: every miss of the C wrapper comes here (with the key it built)
            return get_workspace_size(op, args[:n_in], args[n_in:n_in + n_attr], args[n_in + n_attr:], deterministic,
                                      impl_mode, _opkey, _plan)
        except AclnnError:
            raise
        except Exception as exc:  # the aclnn API raises AclnnError only
            raise as_aclnn_error(exc, name) from exc

    _dress(phase1, name, doc)
    phase1.__signature__ = _signature(params)  # type: ignore[attr-defined]  # inspect.signature reads it
    fn: Any = phase1
    native = _native_phase1(op, phase1)
    if native is not None and _FAST_POINTERS and op.package is not None:
        # Cache hits of plain numpy arrays in C; everything else (and every miss) runs `phase1`.
        fn = _wrap(native, phase1, name, doc)
    op.phase1 = fn
    return fn


def _native_phase1(op: OpRuntime, slow: Callable[..., Any]) -> Any:
    """The op's C Phase1 around `slow` (None without the extension, or for an op that is not
    simple), made its key function (`op.call_key`) too."""
    if not op.simple or op.spec.is_aicpu or not _fastpath_ready():
        return None
    native = _fastpath.Phase1(op, op.n_inputs, op.n_attrs, op.n_outputs, slow, op.key_id, op.attr_tags)
    op.call_key = native.key
    return native


def key_function(op: OpRuntime) -> Callable[..., bytes | None]:
    """op.call_key, made on first use for an op no phase-1 function was made for (an .om node):
    key(dp, *args) -> the call's key (opkey.h words as bytes) or None. The C fast path's
    Phase1.key when the extension is built, else cache_key.plain_call_key (the same words)."""
    if op.call_key is None and _native_phase1(op, _no_phase1) is None:
        op.call_key = functools.partial(cache_key.plain_call_key, op.key_id, op.n_inputs, op.attr_tags)
    if op.call_key is None:
        raise AssertionError(f"{op.name}: no key function")  # (one of the two branches above set it)
    return op.call_key


def _no_phase1(*args: Any, **kwargs: Any) -> Any:
    raise TypeError("this Phase1 only makes keys")


def phase2_function(op: OpRuntime, name: str, doc: str | None = None) -> Callable[..., int]:
    """`aclnn<Op>(workspace, workspaceSize, executor, stream=None)`: `execute`, checking that the
    executor was made for this op. With `_fastpath` built, a C `Phase2` launches the executors of
    its Phase1 on the default stream (unless launches are observed: launch.observe_launches)."""
    if not name.isidentifier():
        raise ValueError(f"{op.name}: bad function name {name!r}")

    aicpu_execute: Callable[..., None] | None = None
    if op.spec.is_aicpu:
        from opbuild.runtime.call.aicpu import execute as aicpu_execute

    @_guard(name)
    def phase2(workspace: Any, workspaceSize: Any, executor: Any, stream: Any = None) -> int:
        check_executor_op(executor, op, name)
        if aicpu_execute is None:
            execute(workspace, workspaceSize, executor, stream)
        else:
            aicpu_execute(workspace, workspaceSize, executor, stream)
        return 0

    _dress(phase2, name, doc)
    fn: Any = phase2
    if _fastpath_ready() and not op.spec.is_aicpu:
        fn = _wrap(_fastpath.Phase2(op, phase2), phase2, name, doc)
    op.phase2 = fn
    return fn


def _dress(fn: Callable[..., Any], name: str, doc: str | None) -> None:
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    fn.__module__ = __name__


def check_executor_op(executor: Any, op: OpRuntime, api: str) -> None:
    """161002 unless `executor` was made by phase 1 of `op` (aclnnMul given an Add executor)."""
    made_for = getattr(executor, "op", op)
    if executor is not None and made_for is not op:
        name = getattr(made_for, "name", type(made_for).__name__)
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{api}: the executor was made for {name}, not {op.name}")


def _guard(api: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: the function raises AclnnError only (errors.as_aclnn_error at the API boundary)."""
    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        return _guarded(fn, api)
    return decorate


def _guarded(fn: Callable[..., Any], api: str) -> Callable[..., Any]:
    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except AclnnError:
            raise
        except Exception as exc:  # the aclnn API raises AclnnError only
            raise as_aclnn_error(exc, api) from exc
    return guarded


def _wrap(obj: Any, fn: Callable[..., Any], name: str, doc: str | None) -> Any:
    """A C wrapper object dressed as the Python function it wraps (inspect follows __wrapped__)."""
    obj.__name__ = obj.__qualname__ = name
    obj.__doc__ = doc
    obj.__module__ = __name__
    obj.__wrapped__ = fn
    return obj


_FASTPATH_STATE: list[bool | None] = [None]


def _fastpath_ready() -> bool:
    """Configure the C fast path once (it needs the simulator's sim_launch); False if unusable."""
    ready = _FASTPATH_STATE[0]
    if ready is None:
        ready = False
        if _fastpath is not None:
            try:
                if _Native.launch is None:
                    _Native.bind()
                _fastpath.configure(AclnnError, settings.DP, Executor, _launch_failed,
                                    ctypes.cast(_Native.launch, ctypes.c_void_p).value, cache_key.numpy_dtype_codes(),
                                    ctypes.cast(_Native.isolated, ctypes.c_void_p).value, executor_record)
                _fastpath.set_observed(len(LAUNCH_OBSERVERS))
                _fastpath.set_signature_programs(signature_program, PHASE_HOOKS)
                ready = True
            except (OSError, AttributeError, device.DeviceError, TypeError, ValueError, RuntimeError):
                ready = False
        _FASTPATH_STATE[0] = ready
    return ready
