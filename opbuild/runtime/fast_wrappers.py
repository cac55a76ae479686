"""The per-op phase-1 / phase-2 functions (aclnnXxxGetWorkspaceSize / aclnnXxx) and the C fast path hook.

`phase1_function` / `phase2_function` make the functions the generated aclnn module binds: for a
"simple" op (required tensors, scalar attributes, bound to a package) they are compiled for the
op's parameters so a cache hit builds the key, the executor and the launch inline; everything
else goes to executor.get_workspace_size / executor.execute. When the extension
`opbuild.runtime._fastpath` is built, `_fastpath_ready` configures it once and the functions are
wrapped in its C objects (cache hits of plain numpy arrays in C, the rest in Python).

The compiled functions read what they use from their own namespace (`fn.__globals__`): tests
instrument a launch by replacing `_launch` there, and the C Phase2 launches in C only while that
entry is still the `_launch` it was configured with.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any, Callable, Sequence

import numpy as np

from opbuild.runtime import device, settings
from opbuild.runtime.arguments import _plain_array
from opbuild.runtime.errors import ACLNN_ERR_PARAM_INVALID, AclnnError, as_aclnn_error
from opbuild.runtime.executor import Executor, execute, get_workspace_size
from opbuild.runtime.launch import _DATA_OFFSET, _FAST_POINTERS, _launch_failed, _Native, _read_ptr, packer
from opbuild.runtime.plan_cache import _CACHE, _fastpath
from opbuild.runtime.cache_key import search_env
from opbuild.runtime.plans import Plan, plan_fresh
from opbuild.runtime.selection import OpRuntime


_FAST_PHASE1 = '''
def {name}({params}, *, deterministic=None, impl_mode=None):
    if {all_nd}:
        {direct}
    else:
        {unwrap}
    if deterministic is None and impl_mode is None and {all_plain}:
        key = (_op, _dp[0], {key}, _env())
        plan = _state.plans.get(key)
        if plan is not None and plan.contiguous and {writeable} and _fresh(plan):
            {addrs}
            if not (({or_addrs}) & 15):
                plan.hot = True
                return plan.workspace_size, _Executor(plan, _op, ({refs},), _pack({addr_tuple}, 0, plan.tiling_addr))
    return _slow(_op, ({inputs}), ({attrs}), ({outputs}), deterministic, impl_mode)
'''


def _tuple_src(names: Sequence[str]) -> str:
    return ", ".join(names) + ("," if len(names) == 1 else "")


def phase1_function(op: OpRuntime, name: str, inputs: Sequence[str], attrs: Sequence[str],
                    outputs: Sequence[str], doc: str | None = None) -> Callable[..., tuple[int, Executor]]:
    """`aclnn<Op>GetWorkspaceSize(<inputs>, <attrs>, <outputs>, *, deterministic, impl_mode)`.

    For a simple op the function is compiled for the op's parameters: a cache hit with numpy
    arrays or ND Tensors builds the key and the executor inline (no normalization, no
    revalidation: the key pins dtypes, shapes and strides). Everything else goes to
    `get_workspace_size`.
    """
    params = [*inputs, *attrs, *outputs]
    for p in params:
        if not p.isidentifier() or p in ("deterministic", "impl_mode") or p.startswith("_"):
            raise ValueError(f"{op.name}: bad parameter name {p!r} for {name}")
    if not op.simple or not _FAST_POINTERS or op.package is None:
        def generic(*args, deterministic=None, impl_mode=None):
            if len(args) != len(params):
                raise TypeError(f"{name}() takes {len(params)} arguments ({', '.join(params)}), got {len(args)}")
            n_in, n_attr = len(inputs), len(attrs)
            return get_workspace_size(op, args[:n_in], args[n_in:n_in + n_attr], args[n_in + n_attr:],
                                      deterministic, impl_mode)

        src = f"def {name}({', '.join(params)}, *, deterministic=None, impl_mode=None):\n" \
              f"    return _slow(_op, ({_tuple_src(inputs)}), ({_tuple_src(attrs)}), ({_tuple_src(outputs)}), deterministic, impl_mode)\n"
    else:
        tensors = [*inputs, *outputs]
        arr = {t: f"_a_{t}" for t in tensors}
        all_nd = " and ".join(f"_type({t}) is _nd" for t in tensors)
        direct = "; ".join(f"{arr[t]} = {t}" for t in tensors)
        unwrap = "; ".join(f"{arr[t]} = _plain({t})" for t in tensors)
        all_plain = " and ".join(f"{arr[t]} is not None" for t in tensors)
        key_parts = [f"{a}, _type({a})" for a in attrs]
        key_parts += [f"{arr[t]}.dtype, {arr[t]}.shape, {arr[t]}.strides" for t in tensors]
        writeable = " and ".join(f"{arr[t]}.flags.writeable" for t in outputs)
        addrs = "\n            ".join(f"_p_{t} = _ptr(_id({arr[t]}) + _OFF).value or 0" for t in tensors)
        src = _FAST_PHASE1.format(
            name=name, params=", ".join(params), all_nd=all_nd, direct=direct, unwrap=unwrap, all_plain=all_plain, key=", ".join(key_parts),
            writeable=writeable, addrs=addrs, or_addrs=" | ".join(f"_p_{t}" for t in tensors),
            refs=", ".join(arr[t] for t in tensors), addr_tuple=", ".join(f"_p_{t}" for t in tensors),
            inputs=_tuple_src(inputs), attrs=_tuple_src(attrs), outputs=_tuple_src(outputs))
    namespace = {
        "_op": op, "_dp": settings.DP, "_state": _CACHE, "_type": type, "_nd": np.ndarray, "_plain": _plain_array,
        "_ptr": _read_ptr, "_id": id, "_OFF": _DATA_OFFSET, "_Executor": Executor, "_slow": _guarded(get_workspace_size, name),
        "_pack": packer(len(inputs) + len(outputs) + 2).pack, "_env": search_env, "_fresh": plan_fresh,
    }
    code = compile(src, f"<opbuild phase 1 of {op.name}>", "exec")
    exec(code, namespace)  # noqa: S102 - source built above from checked identifiers
    fn = namespace[name]
    fn.__doc__ = doc
    fn.__module__ = __name__
    if op.simple and _FAST_POINTERS and op.package is not None and _fastpath_ready():
        # Cache hits of plain numpy arrays in C; everything else (and every miss) runs `fn`.
        fn = _wrap(_fastpath.Phase1(op, len(inputs), len(attrs), len(outputs), fn), fn, name, doc)
    op.phase1 = fn
    return fn


_FAST_PHASE2 = '''
def {name}(workspace, workspaceSize, executor, stream=None):
    if workspace is None and stream is None and _type(executor) is _Executor:
        plan = executor.plan
        args = executor.args
        if (executor.op is _op and args is not None and not executor.used and not plan.workspace_size
                and _type(workspaceSize) is int and workspaceSize >= 0):
            if not plan.empty and plan.block_dim <= 0x7FFFFFFF:
                executor.used = True
                if _launch(None, plan.fn, args, plan.nargs, plan.block_dim, plan.sync, None, 0):
                    _failed(plan)
                return 0
    return _slow(workspace, workspaceSize, executor, stream)
'''


def phase2_function(op: OpRuntime, name: str, doc: str | None = None) -> Callable[..., int]:
    """`aclnn<Op>(workspace, workspaceSize, executor, stream=None)`: `execute`, checking that the
    executor was made for this op. The common case (no workspace, default stream, an executor
    of a fast phase 1, not run yet) launches inline."""
    if not name.isidentifier():
        raise ValueError(f"{op.name}: bad function name {name!r}")

    @_guard(name)
    def slow(workspace, workspace_size, executor, stream):
        check_executor_op(executor, op, name)
        execute(workspace, workspace_size, executor, stream)
        return 0

    try:
        if _Native.launch is None:
            _Native.bind()
    except (OSError, AttributeError, device.DeviceError):
        slow.__name__ = slow.__qualname__ = name
        slow.__doc__ = doc
        op.phase2 = slow
        return slow
    namespace = {"_op": op, "_type": type, "_Executor": Executor, "_state": _CACHE, "_launch": _Native.launch,
                 "_failed": _launch_failed, "_slow": slow}
    exec(compile(_FAST_PHASE2.format(name=name), f"<opbuild phase 2 of {op.name}>", "exec"), namespace)  # noqa: S102
    fn = namespace[name]
    fn.__doc__ = doc
    fn.__module__ = __name__
    if _fastpath_ready():
        # Executors of the C phase 1 launched in C; everything else runs `fn`.
        # Launches in C only while the Python function's `_launch` is the real one (a replaced
        # one, e.g. instrumented, is called by the Python path).
        fn = _wrap(_fastpath.Phase2(op, fn, fn.__globals__, fn.__globals__["_launch"]), fn, name, doc)
    op.phase2 = fn
    return fn


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
        except Exception as exc:  # noqa: BLE001 - the aclnn API raises AclnnError only
            raise as_aclnn_error(exc, api) from exc
    return guarded


def _wrap(obj: Any, fn: Callable[..., Any], name: str, doc: str | None) -> Any:
    """A C wrapper object dressed as the Python function it wraps (inspect follows __wrapped__)."""
    obj.__name__ = obj.__qualname__ = name
    obj.__doc__ = doc
    obj.__module__ = __name__
    obj.__wrapped__ = fn
    obj.__globals__ = fn.__globals__
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
                _fastpath.configure(AclnnError, settings.DP, Executor, Plan, _launch_failed,
                                    ctypes.cast(_Native.launch, ctypes.c_void_p).value)
                ready = True
            except (OSError, AttributeError, device.DeviceError, TypeError, ValueError, RuntimeError):
                ready = False
        _FASTPATH_STATE[0] = ready
    return ready
