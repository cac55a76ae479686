"""aclnn status codes and the exception that carries them to Python callers."""

from __future__ import annotations

ACLNN_SUCCESS = 0
ACLNN_ERR_PARAM_NULLPTR = 161001
ACLNN_ERR_PARAM_INVALID = 161002
ACLNN_ERR_RUNTIME_ERROR = 361001
ACLNN_ERR_INNER = 561000

STATUS_NAMES = {
    ACLNN_SUCCESS: "ACLNN_SUCCESS",
    ACLNN_ERR_PARAM_NULLPTR: "ACLNN_ERR_PARAM_NULLPTR",
    ACLNN_ERR_PARAM_INVALID: "ACLNN_ERR_PARAM_INVALID",
    ACLNN_ERR_RUNTIME_ERROR: "ACLNN_ERR_RUNTIME_ERROR",
    ACLNN_ERR_INNER: "ACLNN_ERR_INNER",
}


class AclnnError(Exception):
    """A failed aclnn call: `status` is the aclnn status code the C API would return."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"[{STATUS_NAMES.get(status, status)} {status}] {message}")
        self.status = status
        self.message = message
