"""opbuild.runtime: run built op packages on the CPU device simulator.

    import opbuild.runtime as rt
    ops = rt.import_ops("out/opp/vendors/customize")
    z = ops.add_custom_template(x, y)                       # one shot
    size, executor = ops.aclnnAddCustomTemplateGetWorkspaceSize(x, y, z)   # two phases
    ops.aclnnAddCustomTemplate(rt.malloc(size), size, executor, stream)

Submodules load lazily so that importing this package stays cheap.
"""

from __future__ import annotations

from typing import Any

from opbuild.env_vars import warn_unknown
from opbuild.runtime.errors import (
    ACLNN_ERR_INNER,
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_PARAM_NULLPTR,
    ACLNN_ERR_RUNTIME_ERROR,
    ACLNN_SUCCESS,
    AclnnError,
)
from opbuild.runtime.settings import get_deterministic, get_impl_mode, set_deterministic, set_impl_mode
from opbuild.runtime.tensor import Tensor

warn_unknown()  # a misspelt OPBUILD_* variable: one warning per process, with the nearest name

__all__ = [
    "ACLNN_ERR_INNER", "ACLNN_ERR_PARAM_INVALID", "ACLNN_ERR_PARAM_NULLPTR", "ACLNN_ERR_RUNTIME_ERROR",
    "ACLNN_SUCCESS", "AclnnError", "DeviceError", "ResetCacheThreadLocal", "Stream", "Tensor", "clear_op_cache",
    "default_stream",
    "dump", "get_deterministic", "get_impl_mode", "import_ops", "malloc", "set_deterministic", "set_impl_mode",
]


def import_ops(package_dir):
    """The generated Python aclnn module of a built package (see opbuild.runtime.api)."""
    from opbuild.runtime.api import import_ops as _import_ops

    return _import_ops(package_dir)


def ResetCacheThreadLocal() -> None:  # the CANN symbol name
    """Reset the calling thread's per-call state, as CANN's: the op-parameter cache keeps its
    entries (use `clear_op_cache()` to empty it)."""
    from opbuild.runtime.call.plan_cache import reset_cache_thread_local

    reset_cache_thread_local()


def _clear_cache() -> None:
    """plan_cache.clear_cache, imported on first use (importing opbuild.runtime stays light) and
    then called directly."""
    global _clear_cache
    from opbuild.runtime.call.plan_cache import clear_cache

    _clear_cache = clear_cache
    clear_cache()


def clear_op_cache(*, selections: bool = False) -> None:
    """Empty the calling thread's op-parameter cache (Python and C ABI callers): every next call
    is a miss and tiles again. For tests and to give memory back; CANN has no equivalent.

    Binary selections kept per call signature (ops whose key rule cannot see shapes: a new shape
    of a known signature runs no GenSimplifiedKey) stay valid while their package is unchanged and
    are kept; `selections=True` forgets them too (every op, every thread), so the next call of
    each signature runs GenSimplifiedKey again."""
    _clear_cache()
    if selections:
        from opbuild.runtime.binaries.selection import forget_selections

        forget_selections()


def dump(path, mode: str = "output", ops=None):
    """Dump the inputs/outputs of every launch (or of the op types `ops`) under `path` as .npy
    files with a JSON index per launch (docs/debugging.md); `with rt.dump("d"): ...`."""
    from opbuild.runtime.debug.dump import dump as _dump

    return _dump(path, mode, ops)


def __getattr__(name: str) -> Any:
    if name in ("malloc", "Stream", "DeviceError", "default_stream"):
        from opbuild.runtime import device

        return getattr(device, name)
    raise AttributeError(f"module 'opbuild.runtime' has no attribute {name!r}")


def _start_debug_tools_from_env() -> None:
    """OPBUILD_DUMP / OPBUILD_PROFILE: on for the whole process (checked once, here)."""
    import os

    if os.environ.get("OPBUILD_DUMP"):
        from opbuild.runtime.debug import dump as _dump_mod

        config = _dump_mod.config_from_env()  # DumpConfigError (one line naming the variable) if bad
        if config is not None:
            _dump_mod.start(config, "OPBUILD_DUMP")
    if os.environ.get("OPBUILD_PROFILE"):
        from opbuild.runtime.debug import profile as _profile

        _profile.start_from_env()


_start_debug_tools_from_env()
