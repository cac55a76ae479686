"""op_fallback: call any aclnn op API by name, the way CANN's op_graph/op_fallback.h does.

    from opbuild.runtime import fallback as fb

    ctx = fb.OpExecuteContext()                       # gert::OpExecuteContext: workspace + stream
    rc = fb.syn_exec_aclnn(ctx, "aclnnAddCustomTemplate", x, y, z)      # CANN_OPS_OPB_SYN_EXEC_ACLNN
    rc = fb.asyn_exec_aclnn(ctx, "aclnnMulCustom", x, y, z)             # CANN_OPS_OPB_ASYN_EXEC_ACLNN
    rc = ctx.launch()                                                    # ... its phase 2
    fn = fb.get_op_api_func("aclnnMulCustomGetWorkspaceSize")          # GetOpApiFuncAddr

Symbol search (`get_op_api_func`): `libcust_opapi.so` of every custom package in priority order
(each ASCEND_CUSTOM_OPP_PATH entry, then `$ASCEND_OPP_PATH/vendors/<v>` in `vendors/config.ini`
load_priority order), then the built-in package's `libopapi.so`, `libopapi_math.so`,
`libopapi_nn.so`, `libopapi_cv.so`, `libopapi_transformer.so`, `libopapi_oam.so`,
`libopapi_ras.so` (all in `<root>/op_api/lib/`). The first library whose handle has the symbol
wins (dlsym on a handle also searches the library's dependencies: that is how
ResetCacheThreadLocal of the acl library is found through libcust_opapi.so). The search path is
resolved on every lookup from the environment (cached by the variables' values and the stat of
config.ini); library handles are opened once per absolute path for the life of the process;
found symbols are cached per (name, search path).

Execution (`syn_exec_aclnn` / `asyn_exec_aclnn`) follows the macros step by step: resolve
ResetCacheThreadLocal, aclnnXGetWorkspaceSize and aclnnX; call ResetCacheThreadLocal; convert
the arguments (ConvertTypes); phase 1; then either phase 2 at once on the context's stream
(sync) or an OpApiParams handed to the context for `ctx.launch()` (async). They return
GRAPH_SUCCESS (0) or GRAPH_FAILED (0xFFFFFFFF), logging the reason (logger "opbuild.fallback",
and `ctx.last_error` for an OpExecuteContext); they never raise for a failed call.

Layout (one job per module; this package re-exports the public API):
    search.py   the library search path, handles, symbol lookup, OpApiNotFound
    dtypes.py   the DT_* -> ACL_* tables and acl_dtype
    acllib.py   the acl library functions, prototyped for ctypes
    convert.py  argument conversion to acl objects and their deleters (ConvertTypes)
    context.py  OpExecuteContext, OpApiParams, AclStream, GRAPH_SUCCESS / GRAPH_FAILED
    execute.py  syn_exec_aclnn / asyn_exec_aclnn, clear_caches
"""

from __future__ import annotations

from opbuild.runtime.fallback.acllib import _get_acl, _recent_error  # noqa: F401 - re-exported (the package's API)
from opbuild.runtime.fallback.context import (  # noqa: F401 - re-exported (the package's API)
    GRAPH_FAILED,
    GRAPH_SUCCESS,
    PHASE2_PROTO,
    AclStream,
    OpApiParams,
    OpExecuteContext,
)
from opbuild.runtime.fallback.convert import ConversionError, OpApiAnyValue, _convert_args, _release  # noqa: F401 - re-exported (the package's API)
from opbuild.runtime.fallback.dtypes import ACL_DTYPE, DEFAULT_ACL, DT_TO_ACL, NUMPY_TO_DT, acl_dtype  # noqa: F401 - re-exported (the package's API)
from opbuild.runtime.fallback.execute import _resolve, asyn_exec_aclnn, clear_caches, syn_exec_aclnn  # noqa: F401 - re-exported (the package's API)
from opbuild.runtime.fallback.search import (  # noqa: F401 - re-exported (the package's API)
    BUILTIN_LIBS,
    CUSTOM_LIB,
    OP_API_LIB_DIR,
    RESET_CACHE,
    OpApiNotFound,
    SearchedLibrary,
    find_op_api,
    get_op_api_addr,
    get_op_api_func,
    library_opens,
    search_path,
)

__all__ = [
    "ACL_DTYPE", "BUILTIN_LIBS", "CUSTOM_LIB", "DT_TO_ACL", "GRAPH_FAILED", "GRAPH_SUCCESS", "NUMPY_TO_DT",
    "AclStream", "OpApiAnyValue", "OpApiNotFound", "OpApiParams", "OpExecuteContext", "acl_dtype",
    "asyn_exec_aclnn", "clear_caches", "get_op_api_addr", "get_op_api_func", "library_opens", "search_path",
    "syn_exec_aclnn",
]

# Not in __all__ but importable from here, as from the single module before: find_op_api,
# SearchedLibrary, ConversionError, PHASE2_PROTO, OP_API_LIB_DIR, RESET_CACHE, DEFAULT_ACL, and the
# internals bench/fallback_bench.py uses (_resolve, _get_acl, _convert_args, _release, _recent_error).
