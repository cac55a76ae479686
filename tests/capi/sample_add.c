/* A standalone aclnn program in the style of CANN's aclnn samples: z = x + y with
 * aclnnAddCustomTemplate, on a created stream. Prints "result[i] = v" lines and "done". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnn_add_custom_template.h"

#define CHECK_RET(cond, expr) \
    do {                      \
        if (!(cond)) {        \
            expr;             \
        }                     \
    } while (0)

#define LOG_PRINT(message, ...)         \
    do {                                \
        printf(message, ##__VA_ARGS__); \
    } while (0)

static int64_t GetShapeSize(const int64_t *shape, int n) {
    int64_t size = 1;
    for (int i = 0; i < n; i++) size *= shape[i];
    return size;
}

static int Init(int32_t deviceId, aclrtStream *stream) {
    int ret = aclInit(NULL);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed. ERROR: %d\n", ret); return ret);
    ret = aclrtSetDevice(deviceId);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed. ERROR: %d\n", ret); return ret);
    ret = aclrtCreateStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateStream failed. ERROR: %d\n", ret); return ret);
    return 0;
}

static int CreateAclTensor(const float *hostData, const int64_t *shape, int ndim, void **deviceAddr,
                           aclDataType dataType, aclTensor **tensor) {
    int64_t size = GetShapeSize(shape, ndim) * (int64_t)sizeof(float);
    int ret = aclrtMalloc(deviceAddr, size, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
    ret = aclrtMemcpy(*deviceAddr, size, hostData, size, ACL_MEMCPY_HOST_TO_DEVICE);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);
    int64_t strides[8];
    strides[ndim - 1] = 1;
    for (int i = ndim - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
    *tensor = aclCreateTensor(shape, ndim, dataType, strides, 0, ACL_FORMAT_ND, shape, ndim, *deviceAddr);
    CHECK_RET(*tensor != NULL, LOG_PRINT("aclCreateTensor failed\n"); return -1);
    return 0;
}

int main(void) {
    int32_t deviceId = 0;
    aclrtStream stream;
    int ret = Init(deviceId, &stream);
    CHECK_RET(ret == 0, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

    int64_t shape[] = {2, 4};
    float xHost[8], yHost[8], zHost[8];
    for (int i = 0; i < 8; i++) {
        xHost[i] = (float)i;
        yHost[i] = 0.5f * (float)i + 1.0f;
        zHost[i] = 0.0f;
    }
    void *xDev = NULL, *yDev = NULL, *zDev = NULL;
    aclTensor *x = NULL, *y = NULL, *z = NULL;
    ret = CreateAclTensor(xHost, shape, 2, &xDev, ACL_FLOAT, &x);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = CreateAclTensor(yHost, shape, 2, &yDev, ACL_FLOAT, &y);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = CreateAclTensor(zHost, shape, 2, &zDev, ACL_FLOAT, &z);
    CHECK_RET(ret == ACL_SUCCESS, return ret);

    uint64_t workspaceSize = 0;
    aclOpExecutor *executor;
    ret = aclnnAddCustomTemplateGetWorkspaceSize(x, y, z, &workspaceSize, &executor);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnAddCustomTemplateGetWorkspaceSize failed. ERROR: %d\n", ret);
              return ret);
    void *workspaceAddr = NULL;
    if (workspaceSize > 0) {
        ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
        CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
    }
    ret = aclnnAddCustomTemplate(workspaceAddr, workspaceSize, executor, stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnAddCustomTemplate failed. ERROR: %d\n", ret); return ret);
    ret = aclrtSynchronizeStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);

    float result[8];
    ret = aclrtMemcpy(result, sizeof(result), zDev, sizeof(result), ACL_MEMCPY_DEVICE_TO_HOST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result from device to host failed. ERROR: %d\n", ret); return ret);
    for (int i = 0; i < 8; i++) LOG_PRINT("result[%d] = %g\n", i, result[i]);

    aclDestroyTensor(x);
    aclDestroyTensor(y);
    aclDestroyTensor(z);
    aclrtFree(xDev);
    aclrtFree(yDev);
    aclrtFree(zDev);
    if (workspaceSize > 0) aclrtFree(workspaceAddr);
    aclrtDestroyStream(stream);
    aclrtResetDevice(deviceId);
    aclFinalize();
    LOG_PRINT("done\n");
    return 0;
}
