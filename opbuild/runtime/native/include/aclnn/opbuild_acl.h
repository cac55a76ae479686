/* aclnn/opbuild_acl.h: opbuild's own entry points of the acl library, beside the CANN API.
 *
 *  - the bridge that generated aclnn wrappers (libcust_opapi.so) call: phase 1 and phase 2 of an
 *    op of a package, run by the Python runtime (opbuild.runtime, embedded when the process has
 *    no Python yet);
 *  - introspection for tests and tools: live objects per kind, the simulator in use, the
 *    simplified key an executor selected, the struct layout the Python side mirrors, the dump
 *    config aclInit read, the SoC table rtGetSocVersion answers from.
 */
#ifndef OPBUILD_ACLNN_OPBUILD_ACL_H_
#define OPBUILD_ACLNN_OPBUILD_ACL_H_

#include <stdint.h>

#include "acl/acl_base.h"
#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OPBUILD_ACL_ABI_VERSION 1u

/* Object kinds of opbuild_acl_live_objects. */
enum {
    OPBUILD_ACL_TENSOR = 0,
    OPBUILD_ACL_SCALAR = 1,
    OPBUILD_ACL_TENSOR_LIST = 2,
    OPBUILD_ACL_INT_ARRAY = 3,
    OPBUILD_ACL_FLOAT_ARRAY = 4,
    OPBUILD_ACL_BOOL_ARRAY = 5,
    OPBUILD_ACL_EXECUTOR = 6,
    OPBUILD_ACL_STREAM = 7,    /* aclrtCreateStream minus aclrtDestroyStream */
    OPBUILD_ACL_HOST_MEM = 8,  /* aclrtMallocHost minus aclrtFreeHost */
    OPBUILD_ACL_TENSOR_DESC = 9,
    OPBUILD_ACL_DATA_BUFFER = 10,
    OPBUILD_ACL_OP_ATTR = 11,
    OPBUILD_ACL_DATASET = 12,
    OPBUILD_ACL_MODEL_DESC = 13,
    OPBUILD_ACL_EVENT = 14,
    OPBUILD_ACL_KIND_COUNT = 15,
};

ACL_FUNC_VISIBILITY uint32_t opbuild_acl_abi_version(void);
/* Objects of `kind` created and not destroyed yet (-1: all kinds); -1 for an unknown kind. */
ACL_FUNC_VISIBILITY int64_t opbuild_acl_live_objects(int kind);
/* Path of the device simulator library this library uses (loaded on first use); NULL if it
 * cannot be loaded (see aclGetRecentErrMsg). */
ACL_FUNC_VISIBILITY const char *opbuild_acl_sim_library(void);
/* The "dump" object of the acl.json aclInit read, as JSON text, or NULL (none, or no aclInit). */
ACL_FUNC_VISIBILITY const char *opbuild_acl_dump_config(void);

/* One field of a struct the Python side (opbuild/runtime/capi.py) reads; the table ends with
 * a NULL struct_name. */
typedef struct opbuild_acl_field {
    const char *struct_name;
    const char *field;
    uint32_t offset;
    uint32_t size;
} opbuild_acl_field;
ACL_FUNC_VISIBILITY const opbuild_acl_field *opbuild_acl_layout(void);

/* ---- the bridge of generated aclnn wrappers --------------------------------------------------
 *
 * Phase 1 of op `op_type` of the package at `package_root` (an absolute directory, the one
 * holding op_api/ and op_impl/). Arguments in IR order:
 *   inputs[i]   const aclTensor * (required/optional input; NULL = absent optional input) or
 *               const aclTensorList * (dynamic input);
 *   attrs[j]    int: const int64_t *; float: const double *; bool: const bool *;
 *               str: the const char * itself; list_int/list_float/list_bool: the
 *               const aclIntArray * / aclFloatArray * / aclBoolArray * itself.
 *               NULL: the attribute's default (161001 when it has none);
 *   outputs[k]  const aclTensor *.
 * On success *workspaceSize and *executor are set and 0 is returned; otherwise an aclnn
 * status, with the message printed to stderr and kept for aclGetRecentErrMsg(). */
ACL_FUNC_VISIBILITY aclnnStatus opbuild_aclnn_get_workspace_size(const char *package_root, const char *op_type,
                                                                 const void *const *inputs,
                                                                 const void *const *attrs,
                                                                 const aclTensor *const *outputs,
                                                                 uint64_t *workspaceSize, aclOpExecutor **executor);

/* Phase 2: launch the executor's kernel on `stream` (NULL: the synchronous default stream; else
 * a stream of aclrtCreateStream). A non-repeatable executor is released by this call, whether
 * the launch succeeds or not. */
ACL_FUNC_VISIBILITY aclnnStatus opbuild_aclnn_run(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                  aclrtStream stream);

/* Phase 2 of op `op_type` of the package at `package_root` (what generated wrappers call): as
 * opbuild_aclnn_run, and 161002 when the executor was made by another op's phase 1. */
ACL_FUNC_VISIBILITY aclnnStatus opbuild_aclnn_run_op(const char *package_root, const char *op_type, void *workspace,
                                                     uint64_t workspaceSize, aclOpExecutor *executor,
                                                     aclrtStream stream);

/* Empty the calling thread's op-parameter cache of C callers (ResetCacheThreadLocal keeps it, as
 * CANN's): every next call selects again. For tests and to give memory back. */
ACL_FUNC_VISIBILITY void opbuild_aclnn_clear_cache(void);

/* Counters of the calling thread's native op-parameter cache (phase-1 calls since the thread
 * started: served natively, not, plans cached, plans dropped because their package changed) and
 * its current size. */
typedef struct opbuild_aclnn_cache_counters {
    uint64_t hits, misses, inserts, stale, size, evictions;
} opbuild_aclnn_cache_counters;
ACL_FUNC_VISIBILITY void opbuild_aclnn_cache_stats(opbuild_aclnn_cache_counters *out);
/* The native cache's capacity per thread (plans; OPBUILD_PARAM_CACHE_SIZE, default 1024): a full
 * cache evicts its least recently used plan. `capacity` > 0 sets it (every thread's next insert
 * obeys it); returns the capacity in force. */
ACL_FUNC_VISIBILITY size_t opbuild_aclnn_cache_capacity(size_t capacity);

/* The deterministic / impl mode code (d * 4 + p) of later calls; set by opbuild.runtime.settings. */
ACL_FUNC_VISIBILITY void opbuild_aclnn_set_dp(int dp);
/* n launch hooks are registered (dump, profile): while n > 0 the native hit path declines, so
 * every launch goes through the Python path that calls them. */
ACL_FUNC_VISIBILITY void opbuild_aclnn_set_watched(int n);

/* The package root of the shared object containing `anchor` (an address in it): the directory
 * of that object joined with `relative` (e.g. "../.." for <root>/op_api/lib/libcust_opapi.so),
 * canonicalized. Cached per object; NULL on failure (reported like an aclnn error). */
ACL_FUNC_VISIBILITY const char *opbuild_aclnn_package_root(const void *anchor, const char *relative);

/* Report `param` of `api` as a null pointer: prints, keeps the message, returns 161001. */
ACL_FUNC_VISIBILITY aclnnStatus opbuild_aclnn_null_param(const char *api, const char *param);

/* The full simplified key the executor's binary was selected by (e.g.
 * "AddCustomTemplate/d=0,p=1/custom_fp32"); NULL for an unknown executor. */
ACL_FUNC_VISIBILITY const char *opbuild_aclnn_executor_key(const aclOpExecutor *executor);

#ifdef __cplusplus
}
#endif
#endif /* OPBUILD_ACLNN_OPBUILD_ACL_H_ */
