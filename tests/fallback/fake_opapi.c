/* A fake op API library for the op_fallback tests: records what it is called with and returns
 * the statuses the test sets. Built three ways (see conftest.py):
 *   default            aclnnFakeEcho{GetWorkspaceSize,}, aclnnFakeNoRunGetWorkspaceSize,
 *                      aclnnFakeOnlyRun; linked to the acl library (ResetCacheThreadLocal);
 *   -DFAKE_NO_ACL      the same without the acl library: no ResetCacheThreadLocal anywhere. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define API __attribute__((visibility("default")))

API int32_t fake_phase1_status = 0;
API int32_t fake_phase2_status = 0;
API uint64_t fake_workspace_size = 0;
API int32_t fake_phase1_calls = 0;
API int32_t fake_phase2_calls = 0;

/* phase 1 arguments */
API const void *fake_tensor = 0;
API const void *fake_scalar = 0;
API int64_t fake_int = 0;
API bool fake_bool = 0;
API char fake_str[64] = {0};
API const void *fake_int_array = 0;
API const void *fake_float_array = 0;
API const void *fake_bool_array = 0;
API const void *fake_tensor_list = 0;
API double fake_double = 0;
API const void *fake_null = (const void *)1;

/* phase 2 arguments */
API void *fake_ws = 0;
API uint64_t fake_ws_size = 0;
API void *fake_executor = 0;
API void *fake_stream = 0;

API int32_t aclnnFakeEchoGetWorkspaceSize(const void *tensor, const void *scalar, int64_t i, bool b, const char *str,
                                          const void *intArray, const void *floatArray, const void *boolArray,
                                          const void *tensorList, double d, const void *nullable,
                                          uint64_t *workspaceSize, void **executor) {
    fake_phase1_calls++;
    fake_tensor = tensor;
    fake_scalar = scalar;
    fake_int = i;
    fake_bool = b;
    strncpy(fake_str, str ? str : "(null)", sizeof fake_str - 1);
    fake_int_array = intArray;
    fake_float_array = floatArray;
    fake_bool_array = boolArray;
    fake_tensor_list = tensorList;
    fake_double = d;
    fake_null = nullable;
    *workspaceSize = fake_workspace_size;
    *executor = 0;
    return fake_phase1_status;
}

API int32_t aclnnFakeEcho(void *workspace, uint64_t workspaceSize, void *executor, void *stream) {
    fake_phase2_calls++;
    fake_ws = workspace;
    fake_ws_size = workspaceSize;
    fake_executor = executor;
    fake_stream = stream;
    return fake_phase2_status;
}

/* phase 1 without phase 2, phase 2 without phase 1 */
API int32_t aclnnFakeNoRunGetWorkspaceSize(uint64_t *workspaceSize, void **executor) {
    *workspaceSize = 0;
    *executor = 0;
    return 0;
}

API int32_t aclnnFakeOnlyRun(void *workspace, uint64_t workspaceSize, void *executor, void *stream) {
    (void)workspace; (void)workspaceSize; (void)executor; (void)stream;
    return 0;
}

#ifndef FAKE_NO_ACL
/* reference the acl library so that the link keeps it as a dependency */
extern void ResetCacheThreadLocal(void);
API void *fake_reset_address(void) { return (void *)&ResetCacheThreadLocal; }
#endif
