/* An aclnn program in the style of CANN's AclNNInvocationNaive sample: z = x + y in float16 with
 * aclnnAddCustomTemplate. Host data is aclFloat16, filled with aclFloatToFloat16 and read back
 * with aclFloat16ToFloat. It also calls aclnnInit/aclnnFinalize, the tensor getters, and re-points
 * a repeatable executor's input with aclSetInputTensorAddr. Prints "name: values" lines and "done". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "aclnn_add_custom_template.h"

#define CHECK_RET(cond, return_expr) \
    do {                             \
        if (!(cond)) {               \
            return_expr;             \
        }                            \
    } while (0)

#define LOG_PRINT(message, ...)         \
    do {                                \
        printf(message, ##__VA_ARGS__); \
    } while (0)

#define N 8

static int64_t GetShapeSize(const int64_t *shape, uint64_t n) {
    int64_t size = 1;
    for (uint64_t i = 0; i < n; i++) size *= shape[i];
    return size;
}

static int CreateAclTensor(const aclFloat16 *hostData, const int64_t *shape, uint64_t ndim, void **deviceAddr,
                           aclDataType dataType, aclTensor **tensor) {
    int64_t size = GetShapeSize(shape, ndim) * (int64_t)aclDataTypeSize(dataType);
    int ret = aclrtMalloc(deviceAddr, size, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
    ret = aclrtMemcpy(*deviceAddr, size, hostData, size, ACL_MEMCPY_HOST_TO_DEVICE);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);
    *tensor = aclCreateTensor(shape, ndim, dataType, NULL, 0, ACL_FORMAT_ND, shape, ndim, *deviceAddr);
    CHECK_RET(*tensor != NULL, LOG_PRINT("aclCreateTensor failed\n"); return -1);
    return 0;
}

static int Run(aclOpExecutor *executor, uint64_t workspaceSize, aclrtStream stream, void *zDev, const char *name) {
    void *workspaceAddr = NULL;
    if (workspaceSize > 0) {
        int ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
        CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
    }
    int ret = aclnnAddCustomTemplate(workspaceAddr, workspaceSize, executor, stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnAddCustomTemplate failed. ERROR: %d\n", ret); return ret);
    ret = aclrtSynchronizeStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);
    aclFloat16 result[N];
    ret = aclrtMemcpy(result, sizeof(result), zDev, sizeof(result), ACL_MEMCPY_DEVICE_TO_HOST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result failed. ERROR: %d\n", ret); return ret);
    LOG_PRINT("%s:", name);
    for (int i = 0; i < N; i++) LOG_PRINT(" %g", aclFloat16ToFloat(result[i]));
    LOG_PRINT("\n");
    if (workspaceSize > 0) aclrtFree(workspaceAddr);
    return 0;
}

int main(void) {
    int32_t deviceId = 0;
    aclrtStream stream;
    int ret = aclInit(NULL);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed. ERROR: %d\n", ret); return ret);
    ret = aclnnInit(NULL);
    CHECK_RET(ret == ACLNN_SUCCESS, LOG_PRINT("aclnnInit failed. ERROR: %d\n", ret); return ret);
    ret = aclrtSetDevice(deviceId);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed. ERROR: %d\n", ret); return ret);
    ret = aclrtCreateStream(&stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateStream failed. ERROR: %d\n", ret); return ret);

    int64_t shape[] = {2, 4};
    aclFloat16 xHost[N], yHost[N], x2Host[N], zHost[N];
    for (int i = 0; i < N; i++) {
        xHost[i] = aclFloatToFloat16((float)i);
        yHost[i] = aclFloatToFloat16(0.5f * (float)i + 1.0f);
        x2Host[i] = aclFloatToFloat16(100.0f);
        zHost[i] = aclFloatToFloat16(0.0f);
    }
    void *xDev = NULL, *yDev = NULL, *zDev = NULL, *x2Dev = NULL;
    aclTensor *x = NULL, *y = NULL, *z = NULL, *x2 = NULL;
    CHECK_RET(CreateAclTensor(xHost, shape, 2, &xDev, ACL_FLOAT16, &x) == 0, return 1);
    CHECK_RET(CreateAclTensor(yHost, shape, 2, &yDev, ACL_FLOAT16, &y) == 0, return 1);
    CHECK_RET(CreateAclTensor(zHost, shape, 2, &zDev, ACL_FLOAT16, &z) == 0, return 1);
    CHECK_RET(CreateAclTensor(x2Host, shape, 2, &x2Dev, ACL_FLOAT16, &x2) == 0, return 1);

    /* the getters */
    int64_t *dims = NULL, *strides = NULL, *storage = NULL;
    uint64_t ndims = 0, nstrides = 0, nstorage = 0;
    int64_t offset = -1;
    aclDataType dt = ACL_DT_UNDEFINED;
    aclFormat fmt = ACL_FORMAT_UNDEFINED;
    void *raw = NULL;
    CHECK_RET(aclGetViewShape(x, &dims, &ndims) == ACLNN_SUCCESS, return 1);
    CHECK_RET(aclGetViewStrides(x, &strides, &nstrides) == ACLNN_SUCCESS, return 1);
    CHECK_RET(aclGetStorageShape(x, &storage, &nstorage) == ACLNN_SUCCESS, return 1);
    CHECK_RET(aclGetViewOffset(x, &offset) == ACLNN_SUCCESS, return 1);
    CHECK_RET(aclGetDataType(x, &dt) == ACLNN_SUCCESS, return 1);
    CHECK_RET(aclGetFormat(x, &fmt) == ACLNN_SUCCESS, return 1);
    CHECK_RET(aclGetRawTensorAddr(x, &raw) == ACLNN_SUCCESS, return 1);
    LOG_PRINT("view_shape: %lld %lld\n", (long long)dims[0], (long long)dims[1]);
    LOG_PRINT("strides: %lld %lld\n", (long long)strides[0], (long long)strides[1]);
    LOG_PRINT("storage_shape: %lld %lld\n", (long long)storage[0], (long long)storage[1]);
    LOG_PRINT("offset_dtype_format: %lld %d %d\n", (long long)offset, (int)dt, (int)fmt);
    LOG_PRINT("raw_is_data: %d\n", raw == xDev);
    LOG_PRINT("null_getter: %d\n", (int)aclGetDataType(NULL, &dt));
    free(dims);
    free(strides);
    free(storage);
    int64_t ints[] = {1, 2, 3};
    aclIntArray *arr = aclCreateIntArray(ints, 3);
    uint64_t arrSize = 0;
    CHECK_RET(aclGetIntArraySize(arr, &arrSize) == ACLNN_SUCCESS, return 1);
    LOG_PRINT("int_array_size: %llu\n", (unsigned long long)arrSize);
    aclDestroyIntArray(arr);
    LOG_PRINT("fp16_sizes: %zu %zu\n", aclDataTypeSize(ACL_FLOAT16), aclDataTypeSize(ACL_FLOAT));

    uint64_t workspaceSize = 0;
    aclOpExecutor *executor;
    ret = aclnnAddCustomTemplateGetWorkspaceSize(x, y, z, &workspaceSize, &executor);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnAddCustomTemplateGetWorkspaceSize failed. ERROR: %d\n", ret);
              return ret);
    CHECK_RET(aclSetAclOpExecutorRepeatable(executor) == ACLNN_SUCCESS, return 1);
    CHECK_RET(Run(executor, workspaceSize, stream, zDev, "result") == 0, return 1);
    /* the same executor, input 0 now reading x2's memory */
    ret = aclSetInputTensorAddr(executor, 0, x, x2Dev);
    CHECK_RET(ret == ACLNN_SUCCESS, LOG_PRINT("aclSetInputTensorAddr failed. ERROR: %d\n", ret); return ret);
    CHECK_RET(Run(executor, workspaceSize, stream, zDev, "repointed") == 0, return 1);
    LOG_PRINT("bad_index: %d\n", (int)aclSetInputTensorAddr(executor, 5, x, x2Dev));
    aclDestroyAclOpExecutor(executor);

    /* again with the same shapes: the native cache's executor; re-point y at x's old memory */
    CHECK_RET(aclSetRawTensorAddr(x, xDev) == ACLNN_SUCCESS, return 1);
    ret = aclnnAddCustomTemplateGetWorkspaceSize(x, y, z, &workspaceSize, &executor);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("second GetWorkspaceSize failed. ERROR: %d\n", ret); return ret);
    CHECK_RET(aclSetAclOpExecutorRepeatable(executor) == ACLNN_SUCCESS, return 1);
    ret = aclSetTensorAddr(executor, 1, y, xDev);
    CHECK_RET(ret == ACLNN_SUCCESS, LOG_PRINT("aclSetTensorAddr failed. ERROR: %d\n", ret); return ret);
    CHECK_RET(Run(executor, workspaceSize, stream, zDev, "repointed_again") == 0, return 1);
    aclDestroyAclOpExecutor(executor);

    aclDestroyTensor(x);
    aclDestroyTensor(y);
    aclDestroyTensor(z);
    aclDestroyTensor(x2);
    aclrtFree(xDev);
    aclrtFree(yDev);
    aclrtFree(zDev);
    aclrtFree(x2Dev);
    aclrtDestroyStream(stream);
    aclrtResetDevice(deviceId);
    aclnnFinalize();
    aclFinalize();
    LOG_PRINT("done\n");
    return 0;
}
