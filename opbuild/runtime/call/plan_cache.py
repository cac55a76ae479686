"""The thread-local op-parameter cache (CANN's thread-local op cache; ResetCacheThreadLocal).

Each thread keeps its own plans keyed by call signature, bounded and evicting approximately the
least recently used (CLOCK: a hit only sets `plan.hot`), plus its reusable launch-argument
arrays and api's one-shot entries. The optional C fast path (`_fastpath`, imported here) keeps a
per-thread table of the same plans, so it is cleared whenever this cache forgets one: that is
why the extension is imported by this module.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

from opbuild.runtime import fastpath_ext
from opbuild.runtime.call.plans import Plan

# The cache-hit path in C (opbuild/runtime/native/src/fastpath_hit.c, fastpath.c); None when it is
# not built or is disabled with OPBUILD_NO_FASTPATH=1. Configured by the first wrapper made
# (fast_wrappers._fastpath_ready).
_fastpath = fastpath_ext.load()


class _ThreadState(threading.local):
    def __init__(self) -> None:
        self.plans: dict[bytes, Plan] = {}
        self.args: list[Any] = [None] * 65
        self.oneshot: dict[tuple, tuple] = {}


_CACHE = _ThreadState()


def reset_cache_thread_local() -> None:
    """ResetCacheThreadLocal(), as CANN's (opbase op_cache.cpp): reset the calling thread's
    per-call state only -- here its reusable launch-argument arrays, CANN's per-call hash key and
    tensor label maps. The cached plans stay: op_fallback calls this before every phase 1 and
    must still hit. `clear_cache()` empties the cache."""
    _CACHE.args = [None] * 65


def clear_cache() -> None:
    """Empty the calling thread's op-parameter cache: its plans, the one-shot output specs, the C
    fast path's table of them and the aclnn C ABI's native cache of this thread (for tests, and
    to give the memory back). The next call of each signature is a miss."""
    _CACHE.plans.clear()
    _CACHE.oneshot.clear()
    if _fastpath is not None:
        _fastpath.reset()
    for hook in CLEAR_HOOKS:
        hook()


CLEAR_HOOKS: list = []
"""Other caches `clear_cache()` empties with this one, registered explicitly by their owners
(the aclnn C ABI's native cache registers itself when capi loads the acl library)."""


def cache_size() -> int:
    return len(_CACHE.plans)


def _store(key: bytes, plan: Plan, capacity: int) -> None:
    """Insert a plan; over capacity, evict by the CLOCK (second chance) approximation of LRU: a
    hit only sets `plan.hot` (no reordering on the hot path); eviction walks the plans oldest
    first, gives each hot one a second chance at the end, and drops the first cold one.

    `capacity` is the caller's executor.PARAM_CACHE_CAPACITY (read there on every store, so
    patching that module attribute bounds the cache)."""
    plans = _CACHE.plans
    plans[key] = plan
    capacity = max(capacity, 1)
    # Oldest first (dict order): a hot plan moves to the end, cold, and the walk goes on; at most
    # len(plans) steps, since every plan moved is cold when the walk comes back to it.
    while len(plans) > capacity:
        k = next(iter(plans))
        p = plans.pop(k)
        if k is key or p.hot:  # the plan just stored stays; a hot one gets its second chance
            p.hot = False
            plans[k] = p
            continue
        if _fastpath is not None:  # its table must not keep the evicted plan
            _fastpath.forget(p)


def _thread_args(n: int) -> Any:
    """The calling thread's launch-argument array of n pointers (reused: launches copy or finish)."""
    if n < 65:
        arrays = _CACHE.args
        a = arrays[n]
        if a is None:
            a = arrays[n] = (ctypes.c_void_p * n)()
        return a
    return (ctypes.c_void_p * n)()
