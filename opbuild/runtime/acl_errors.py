"""The aclError codes the Python side of the aclop / aclmdl C API returns, and its exceptions.

The codes are vocabulary.ACL_ERRORS (which also generates acl/acl_base.h's #defines): named here
for the code that returns them.
"""

from __future__ import annotations

from typing import Final

from opbuild.abi.vocabulary import ACL_ERROR

ACL_SUCCESS: Final = ACL_ERROR["ACL_SUCCESS"]
ACL_ERROR_INVALID_PARAM: Final = ACL_ERROR["ACL_ERROR_INVALID_PARAM"]
ACL_ERROR_INVALID_FILE: Final = ACL_ERROR["ACL_ERROR_INVALID_FILE"]
ACL_ERROR_INVALID_DUMP_CONFIG: Final = ACL_ERROR["ACL_ERROR_INVALID_DUMP_CONFIG"]
ACL_ERROR_INVALID_MODEL_ID: Final = ACL_ERROR["ACL_ERROR_INVALID_MODEL_ID"]
ACL_ERROR_PARSE_MODEL: Final = ACL_ERROR["ACL_ERROR_PARSE_MODEL"]
ACL_ERROR_READ_MODEL_FAILURE: Final = ACL_ERROR["ACL_ERROR_READ_MODEL_FAILURE"]
ACL_ERROR_MODEL_INPUT_NOT_MATCH: Final = ACL_ERROR["ACL_ERROR_MODEL_INPUT_NOT_MATCH"]
ACL_ERROR_MODEL_OUTPUT_NOT_MATCH: Final = ACL_ERROR["ACL_ERROR_MODEL_OUTPUT_NOT_MATCH"]
ACL_ERROR_OP_TYPE_NOT_MATCH: Final = ACL_ERROR["ACL_ERROR_OP_TYPE_NOT_MATCH"]
ACL_ERROR_OP_INPUT_NOT_MATCH: Final = ACL_ERROR["ACL_ERROR_OP_INPUT_NOT_MATCH"]
ACL_ERROR_OP_OUTPUT_NOT_MATCH: Final = ACL_ERROR["ACL_ERROR_OP_OUTPUT_NOT_MATCH"]
ACL_ERROR_OP_ATTR_NOT_MATCH: Final = ACL_ERROR["ACL_ERROR_OP_ATTR_NOT_MATCH"]
ACL_ERROR_OP_NOT_FOUND: Final = ACL_ERROR["ACL_ERROR_OP_NOT_FOUND"]
ACL_ERROR_OP_LOAD_FAILED: Final = ACL_ERROR["ACL_ERROR_OP_LOAD_FAILED"]
ACL_ERROR_UNSUPPORTED_DATA_TYPE: Final = ACL_ERROR["ACL_ERROR_UNSUPPORTED_DATA_TYPE"]
ACL_ERROR_FORMAT_NOT_MATCH: Final = ACL_ERROR["ACL_ERROR_FORMAT_NOT_MATCH"]
ACL_ERROR_FEATURE_UNSUPPORTED: Final = ACL_ERROR["ACL_ERROR_FEATURE_UNSUPPORTED"]
ACL_ERROR_FAILURE: Final = ACL_ERROR["ACL_ERROR_FAILURE"]
ACL_ERROR_RT_FAILURE: Final = ACL_ERROR["ACL_ERROR_RT_FAILURE"]


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
