"""Debugging tools on every launch of the runtime: data dump (`dump`) and the profiler (`profile`).

Both are `launch.LaunchHook`s: while one is registered, the C fast path and the C ABI's native hit
path decline, so every launch (Python two-phase and one-shot calls, the aclnn C ABI, `.om` models,
torch, AI CPU tasks) goes through the Python path that calls them. While none is, they cost the
hit paths one flag check. Turned on by the environment when `opbuild.runtime` is imported
(`OPBUILD_DUMP`, `OPBUILD_PROFILE`), by `aclInit(acl.json)` (dump) or from Python.
"""
