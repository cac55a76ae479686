"""The call path: what a two-phase aclnn call does, in Python, around the native hit path.

Two layers:
  - the hit: native/src/fastpath_hit.c (Phase1/Phase2: Python callers with numpy arrays) and
    native/src/opcache.c (the aclnn C ABI), keyed by native/src/opkey.h;
  - the miss, one readable Python path: executor.get_workspace_size (GenSimplifiedKey, full key,
    lookup, tiling -> plans.build_plan) fills the caches; executor.execute launches.

Modules, one job each:
  cache_key      the key's pure-Python equivalent (opkey.h) and the search environment
  arguments      argument normalization and the cache key of a call (simple_key, params_key)
  plans          Plan, KernelInfo, build_plan (a miss), the package stamp check
  plan_cache     the thread-local plan cache (ResetCacheThreadLocal, clear_cache) and `_fastpath`
  launch         sim_launch binding, argument packing, launches, launch observers
  executor       the two phases (get_workspace_size, execute) and the Executor type
  fast_wrappers  the per-op phase functions the generated modules bind, and the C fast path hook
"""
