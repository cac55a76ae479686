"""The thread-local op-parameter cache (CANN's thread-local op cache; ResetCacheThreadLocal).

Plans live in one table per thread. When the extension `_fastpath` is built that table is the
native plan cache (native/src/plancache.c, through `_fastpath.plan_find` / `plan_store`): the C
hit path and the Python path look plans up in the same table, with one eviction policy (least
recently used, at OPBUILD_PARAM_CACHE_SIZE) and one package-stamp check. Without the extension
(OPBUILD_NO_FASTPATH=1, or not built) the table is the reference twin in
opbuild.runtime.reference.plan_table, which behaves the same way in Python.

The thread state here also keeps the reusable launch-argument arrays and api's one-shot output
specs.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any, Callable

from opbuild.env_vars import int_setting
from opbuild.runtime import fastpath_ext
from opbuild.runtime.call.plans import Plan, plan_fresh
from opbuild.runtime.reference.plan_table import PlanTable

# The cache-hit path in C (opbuild/runtime/native/src/fastpath_hit.c, fastpath.c); None when it is
# not built or is disabled with OPBUILD_NO_FASTPATH=1. Configured by the first wrapper made
# (fast_wrappers._fastpath_ready).
_fastpath = fastpath_ext.load()


_CAPACITY = [0]
"""The reference table's capacity, 0 until read: OPBUILD_PARAM_CACHE_SIZE, by the rule the native
table reads it with (env_vars.int_setting; native/src/setting.h), when the table is this one."""


def capacity() -> int:
    """The plans a thread's table holds at most (OPBUILD_PARAM_CACHE_SIZE unless set_capacity)."""
    if _fastpath is not None:
        return _fastpath.cache_capacity()
    if not _CAPACITY[0]:
        _CAPACITY[0] = int_setting("OPBUILD_PARAM_CACHE_SIZE")
    return _CAPACITY[0]


def set_capacity(n: int) -> int:
    """Bound every thread's table by `n` plans (at least 1) from its next store; the old bound."""
    old = capacity()
    _CAPACITY[0] = max(n, 1)
    if _fastpath is not None:
        _fastpath.cache_capacity(_CAPACITY[0])
    return old


class _ThreadState(threading.local):
    def __init__(self) -> None:
        self.table = PlanTable(plan_fresh) if _fastpath is None else None  # (the native table otherwise)
        self.args: list[Any] = [None] * 65
        self.oneshot: dict[tuple, tuple] = {}


_CACHE = _ThreadState()


def _reference_find(key: bytes) -> Plan | None:
    table = _CACHE.table
    assert table is not None
    return table.find(key)


find: Callable[[bytes], Plan | None] = _fastpath.plan_find if _fastpath is not None else _reference_find
"""find(key) -> the calling thread's plan for `key` (opkey.h words), or None; a plan whose package
was rebuilt since is dropped (None). A found plan becomes the most recently used. The native
table's own function when the extension is built (the Python hit path calls it directly)."""


def store(key: bytes, plan: Plan) -> None:
    """File a miss's plan under its key in the calling thread's table; a full table evicts its
    least recently used plan."""
    if _fastpath is not None:
        _fastpath.plan_store(key, plan.op, plan)
        return
    table = _CACHE.table
    assert table is not None
    table.store(key, plan, capacity())


def reset_cache_thread_local() -> None:
    """ResetCacheThreadLocal(), as CANN's (opbase op_cache.cpp): reset the calling thread's
    per-call state only -- here its reusable launch-argument arrays, CANN's per-call hash key and
    tensor label maps. The cached plans stay: op_fallback calls this before every phase 1 and
    must still hit. `clear_cache()` empties the cache."""
    _CACHE.args = [None] * 65


def clear_cache() -> None:
    """Empty the calling thread's op-parameter cache: its plans, the one-shot output specs and the
    aclnn C ABI's native cache of this thread (for tests, and to give the memory back). The next
    call of each signature is a miss."""
    _CACHE.oneshot.clear()
    if _fastpath is not None:
        _fastpath.reset()
    elif _CACHE.table is not None:
        _CACHE.table.clear()
    for hook in CLEAR_HOOKS:
        hook()


CLEAR_HOOKS: list = []
"""Other caches `clear_cache()` empties with this one, registered explicitly by their owners
(the aclnn C ABI's native cache registers itself when capi loads the acl library)."""


def cache_size() -> int:
    """Plans in the calling thread's table."""
    if _fastpath is not None:
        return _fastpath.table_size()
    return len(_CACHE.table) if _CACHE.table is not None else 0


def _thread_args(n: int) -> Any:
    """The calling thread's launch-argument array of n pointers (reused: launches copy or finish)."""
    if n < 65:
        arrays = _CACHE.args
        a = arrays[n]
        if a is None:
            a = arrays[n] = (ctypes.c_void_p * n)()
        return a
    return (ctypes.c_void_p * n)()
