"""The aclError codes the Python side of the aclop / aclmdl C API returns (acl/acl_base.h).

The header is the definition; tests/capi/test_acl_api.py holds these equal to its #defines.
"""

from __future__ import annotations

ACL_SUCCESS = 0
ACL_ERROR_INVALID_PARAM = 100000
ACL_ERROR_INVALID_FILE = 100003
ACL_ERROR_INVALID_DUMP_CONFIG = 100009
ACL_ERROR_INVALID_MODEL_ID = 100011
ACL_ERROR_PARSE_MODEL = 100013
ACL_ERROR_READ_MODEL_FAILURE = 100014
ACL_ERROR_MODEL_INPUT_NOT_MATCH = 100017
ACL_ERROR_MODEL_OUTPUT_NOT_MATCH = 100018
ACL_ERROR_OP_TYPE_NOT_MATCH = 100020
ACL_ERROR_OP_INPUT_NOT_MATCH = 100021
ACL_ERROR_OP_OUTPUT_NOT_MATCH = 100022
ACL_ERROR_OP_ATTR_NOT_MATCH = 100023
ACL_ERROR_OP_NOT_FOUND = 100024
ACL_ERROR_OP_LOAD_FAILED = 100025
ACL_ERROR_UNSUPPORTED_DATA_TYPE = 100026
ACL_ERROR_FORMAT_NOT_MATCH = 100027
ACL_ERROR_FEATURE_UNSUPPORTED = 200006
ACL_ERROR_FAILURE = 500001
ACL_ERROR_RT_FAILURE = 500003

CODES = {name: value for name, value in globals().items() if name.startswith("ACL_")}
"""Every code above by its name (what the header test compares)."""


class ModelFileError(Exception):
    """Base of the errors of a model file (opbuild.om.errors.OmError): the C API reports them as
    ACL_ERROR_PARSE_MODEL. (The .om layer sits above the runtime: it derives from this class
    instead of this module importing it.)"""


class AclError(Exception):
    """A failed aclop / aclmdl call: `code` is the aclError the C API returns."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def from_aclnn(status: int) -> int:
    """The aclError of an aclnn status (an op that failed inside the runtime)."""
    from opbuild.runtime.errors import ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR, ACLNN_ERR_RUNTIME_ERROR

    if status in (ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR):
        return ACL_ERROR_INVALID_PARAM
    if status == ACLNN_ERR_RUNTIME_ERROR:
        return ACL_ERROR_RT_FAILURE
    return ACL_ERROR_FAILURE


def failure(exc: BaseException) -> tuple[int, str]:
    """(code, message) of any exception reaching the C API (a traceback only for a bug)."""
    import traceback

    from opbuild.runtime.errors import AclnnError

    if isinstance(exc, AclError):
        return exc.code, exc.message
    if isinstance(exc, AclnnError):
        return from_aclnn(exc.status), str(exc)
    if isinstance(exc, ModelFileError):
        return ACL_ERROR_PARSE_MODEL, str(exc)
    text = "".join(traceback.format_exception(exc)).rstrip()
    return ACL_ERROR_FAILURE, f"internal error: {type(exc).__name__}: {exc}\n{text}"
