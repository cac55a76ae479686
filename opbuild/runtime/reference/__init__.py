"""The pure-Python twins of the native hot path, kept for two uses only:

* OPBUILD_NO_FASTPATH=1 (or a build without the `_fastpath` extension): the runtime then runs
  them instead of the C code;
* the equivalence tests, which run the same calls through both and compare.

Nothing else imports this package. Each module names the C code it mirrors:

  plan_table  the per-thread plan table (native/src/plancache.c: LRU at OPBUILD_PARAM_CACHE_SIZE,
              the package-stamp check at lookup)
  executor    the Executor type and the packing of direct launch arguments (fastpath.c's Executor,
              describe.c's pack_direct)
  describe    describe_call (describe.c)
"""
