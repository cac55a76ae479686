"""Helpers shared by the runtime tests (importable: conftest.py puts this directory on sys.path)."""

from __future__ import annotations

import opbuild.runtime as rt
from opbuild.runtime.call import executor


def run_two_phase(ops, op: str, *args, stream=None, **kwargs):
    """aclnn<op>GetWorkspaceSize(*args) then aclnn<op>(...) with a workspace from rt.malloc;
    returns the executor."""
    size, ex = getattr(ops, f"aclnn{op}GetWorkspaceSize")(*args, **kwargs)
    workspace = rt.malloc(size) if size else None
    getattr(ops, f"aclnn{op}")(workspace, size, ex, stream)
    if stream is not None:
        stream.synchronize()
    return ex


def plan_count() -> int:
    return executor.cache_size()
