"""aclnn status codes and the exception that carries them to Python callers.

The codes are defined once, in opbuild/abi/vocabulary.py (ACLNN_STATUSES), which C's headers are
generated from; they are named here for the runtime's callers.
"""

from __future__ import annotations

from opbuild.abi.vocabulary import ACLNN_STATUS, ACLNN_STATUSES

ACLNN_SUCCESS = ACLNN_STATUS["ACLNN_SUCCESS"]
ACLNN_ERR_PARAM_NULLPTR = ACLNN_STATUS["ACLNN_ERR_PARAM_NULLPTR"]
ACLNN_ERR_PARAM_INVALID = ACLNN_STATUS["ACLNN_ERR_PARAM_INVALID"]
ACLNN_ERR_RUNTIME_ERROR = ACLNN_STATUS["ACLNN_ERR_RUNTIME_ERROR"]
ACLNN_ERR_INNER = ACLNN_STATUS["ACLNN_ERR_INNER"]
ACLNN_ERR_INNER_NULLPTR = ACLNN_STATUS["ACLNN_ERR_INNER_NULLPTR"]

STATUS_NAMES = {s.code: s.name for s in ACLNN_STATUSES}


class AclnnError(Exception):
    """A failed aclnn call: `status` is the aclnn status code the C API would return."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"[{STATUS_NAMES.get(status, status)} {status}] {message}")
        self.status = status
        self.message = message


FOREIGN_STATUS: tuple[tuple[str, int, str], ...] = (
    ("MemoryError", ACLNN_ERR_INNER, "out of host memory"),
    ("RecursionError", ACLNN_ERR_INNER, "recursion too deep"),
    ("DeviceError", ACLNN_ERR_RUNTIME_ERROR, "device error"),
    ("ValueError", ACLNN_ERR_PARAM_INVALID, "invalid value"),
)
"""What a non-aclnn exception that reaches the aclnn API becomes: (exception class name in the
MRO, status, what the message says first). Checked in order, so RecursionError (a RuntimeError)
and DeviceError (a RuntimeError) are told apart from other errors; anything else is 561000."""


def as_aclnn_error(exc: BaseException, api: str) -> AclnnError:
    """The AclnnError a foreign exception raised inside aclnn API `api` stands for.

    The aclnn API raises nothing else (CANN's C functions return a status): the public entry
    points (generated phase-1/phase-2 functions, one-shot calls) convert with this at their
    boundary, only on the failure path."""
    if isinstance(exc, AclnnError):
        return exc
    names = {cls.__name__ for cls in type(exc).__mro__}
    for name, status, what in FOREIGN_STATUS:
        if name in names:
            return AclnnError(status, f"{api}: {what}: {type(exc).__name__}: {exc}")
    return AclnnError(ACLNN_ERR_INNER, f"{api}: internal error: {type(exc).__name__}: {exc}")
