"""Process-wide execution settings: deterministic computing and the impl (precision) mode.

They are the `d=` and `p=` of every simplified key. The default impl mode is high_performance
(p=1), as in the seeds' example; both can also be given per call. While the caller has set no
impl mode (neither set_impl_mode nor a per-call impl_mode), a call whose p=1 key has no binary
is retried with p=0 before it fails: real configs (opbase's Mul, MemSetV2) carry only p=0 keys.
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np

from opbuild.abi.vocabulary import DEFAULT_IMPL_MODE, IMPL_MODE_INDEX
from opbuild.runtime.errors import ACLNN_ERR_PARAM_INVALID, AclnnError


class _State(TypedDict):
    deterministic: int
    impl_mode: int | None  # None: not set


_state: _State = {"deterministic": 0, "impl_mode": None}

AUTO_P = 3
"""The p slot of a dp code while no impl mode is set (p=1 with the p=0 retry); above every index."""

DEFAULT_P = IMPL_MODE_INDEX[DEFAULT_IMPL_MODE]
FALLBACK_P = IMPL_MODE_INDEX["default"]

DP: list[int] = [0]
"""`[dp_code(d, p)]` of the process-wide settings: what the executor's hot path reads (one index)."""


def dp_code(d: int, p: int, fallback: bool = False) -> int:
    """One int for a (d, p) pair, part of every op-parameter cache key; a call with the p=0
    retry (no impl mode set) has its own code, so its plans never serve an explicit p=1."""
    return d * 4 + (AUTO_P if fallback else p)


DP_LISTENERS: list = []
"""Called with the new dp code whenever it changes: the aclnn C ABI's native path keeps a copy
(registered by capi when it loads the acl library)."""


def _update() -> None:
    mode = _state["impl_mode"]
    DP[0] = dp_code(_state["deterministic"], DEFAULT_P if mode is None else mode, mode is None)
    for listener in DP_LISTENERS:
        listener(DP[0])




def deterministic_flag(enabled: object) -> int:
    """The `d=` value of a deterministic setting: a bool or the ints 0/1 (as
    aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC) takes); anything else, e.g. "yes" or "0", is a
    161002 AclnnError rather than Python truthiness."""
    if isinstance(enabled, (bool, np.bool_)) or (isinstance(enabled, (int, np.integer)) and enabled in (0, 1)):
        return 1 if enabled else 0
    raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"deterministic must be True/False (or 1/0), not {enabled!r}")


def set_deterministic(enabled: bool) -> None:
    """Select deterministic (d=1) binaries for later calls."""
    _state["deterministic"] = deterministic_flag(enabled)
    _update()


def get_deterministic() -> int:
    return _state["deterministic"]


def impl_mode_index(mode: str | int) -> int:
    """The `p=` value of an impl mode name (default, high_performance, high_precision) or index."""
    if isinstance(mode, int) and not isinstance(mode, bool) and mode in IMPL_MODE_INDEX.values():
        return int(mode)
    if isinstance(mode, str) and mode in IMPL_MODE_INDEX:
        return IMPL_MODE_INDEX[mode]
    raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"unknown impl mode {mode!r}; known: {', '.join(IMPL_MODE_INDEX)}")


def set_impl_mode(mode: str | int | None) -> None:
    """Select the impl mode (p=) for later calls; None: back to not set (p=1, then p=0)."""
    _state["impl_mode"] = None if mode is None else impl_mode_index(mode)
    _update()


def get_impl_mode() -> int:
    """The p= of calls that name no impl mode (1 while none is set)."""
    mode = _state["impl_mode"]
    return DEFAULT_P if mode is None else mode


def impl_mode_is_set() -> bool:
    return _state["impl_mode"] is not None


def resolve(deterministic: bool | None, impl_mode: str | int | None) -> tuple[int, int, bool]:
    """(d, p, fallback) of one call: per-call values win over the process-wide ones; fallback is
    True when no impl mode is set at all (then p is 1 and a missing p=1 key is retried as p=0)."""
    d = _state["deterministic"] if deterministic is None else deterministic_flag(deterministic)
    if impl_mode is not None:
        return d, impl_mode_index(impl_mode), False
    mode = _state["impl_mode"]
    return (d, DEFAULT_P, True) if mode is None else (d, mode, False)


_update()
