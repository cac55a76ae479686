/* AI CPU ops through the aclnn C ABI, in the style of CANN's aclnn samples.
 *
 * 1. aclnnNonZeroCustom: the out tensor is created at its upper bound [rank, size]; after the
 *    stream is synchronized, aclGetViewShape(out) gives the real shape (CANN's aclnnNonzero pattern).
 * 2. One stream, no synchronization in between: aclnnAddCustomTemplate (AI Core) z = x + y, then
 *    aclnnSortCustom (AI CPU) sorts z descending: the sort sees the add's result only if the
 *    stream keeps them in order.
 * Prints "name: values" lines and "done". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnn_add_custom_template.h"
#include "aclnn_non_zero_custom.h"
#include "aclnn_sort_custom.h"

#define CHECK(cond, what)                                                        \
    do {                                                                         \
        if (!(cond)) {                                                           \
            printf("%s failed: %s\n", what, aclGetRecentErrMsg());               \
            return 1;                                                            \
        }                                                                        \
    } while (0)

static aclTensor *tensor_of(void *dev, const int64_t *shape, int ndim, aclDataType dtype) {
    int64_t strides[8];
    strides[ndim - 1] = 1;
    for (int i = ndim - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
    return aclCreateTensor(shape, ndim, dtype, strides, 0, ACL_FORMAT_ND, shape, ndim, dev);
}

static void *device_copy(const void *host, size_t size) {
    void *dev = NULL;
    if (aclrtMalloc(&dev, size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return NULL;
    if (host) aclrtMemcpy(dev, size, host, size, ACL_MEMCPY_HOST_TO_DEVICE);
    return dev;
}

int main(void) {
    aclrtStream stream;
    CHECK(aclInit(NULL) == ACL_SUCCESS, "aclInit");
    CHECK(aclrtSetDevice(0) == ACL_SUCCESS, "aclrtSetDevice");
    CHECK(aclrtCreateStream(&stream) == ACL_SUCCESS, "aclrtCreateStream");

    /* 1. NonZero: x [2, 3] has 3 non-zero elements; out is allocated for [2, 6]. */
    float xHost[6] = {0.0f, 1.5f, 0.0f, 2.0f, 0.0f, -3.0f};
    int64_t xShape[2] = {2, 3}, boundShape[2] = {2, 6};
    void *xDev = device_copy(xHost, sizeof xHost), *outDev = device_copy(NULL, 12 * sizeof(int64_t));
    aclTensor *x = tensor_of(xDev, xShape, 2, ACL_FLOAT), *out = tensor_of(outDev, boundShape, 2, ACL_INT64);
    uint64_t ws = 0;
    aclOpExecutor *executor = NULL;
    CHECK(aclnnNonZeroCustomGetWorkspaceSize(x, out, &ws, &executor) == ACL_SUCCESS, "aclnnNonZeroCustomGetWorkspaceSize");
    CHECK(aclnnNonZeroCustom(NULL, ws, executor, stream) == ACL_SUCCESS, "aclnnNonZeroCustom");
    CHECK(aclrtSynchronizeStream(stream) == ACL_SUCCESS, "aclrtSynchronizeStream");
    int64_t *viewDims = NULL;
    uint64_t viewDimsNum = 0;
    CHECK(aclGetViewShape(out, &viewDims, &viewDimsNum) == ACL_SUCCESS, "aclGetViewShape");
    printf("nonzero_shape:");
    for (uint64_t i = 0; i < viewDimsNum; i++) printf(" %lld", (long long)viewDims[i]);
    printf("\n");
    int64_t count = viewDims[0] * viewDims[1], indices[12];
    free(viewDims);
    aclrtMemcpy(indices, sizeof indices, outDev, (size_t)count * sizeof(int64_t), ACL_MEMCPY_DEVICE_TO_HOST);
    printf("nonzero:");
    for (int64_t i = 0; i < count; i++) printf(" %lld", (long long)indices[i]);
    printf("\n");

    /* 2. AI Core add, then AI CPU sort of its result, on one stream. */
    float aHost[8] = {1, 7, 3, 5, 0, 2, 9, 4}, bHost[8] = {10, 10, 10, 10, 20, 20, 20, 20};
    int64_t shape[2] = {2, 4};
    void *aDev = device_copy(aHost, sizeof aHost), *bDev = device_copy(bHost, sizeof bHost);
    void *zDev = device_copy(NULL, sizeof aHost), *vDev = device_copy(NULL, sizeof aHost);
    void *iDev = device_copy(NULL, 8 * sizeof(int64_t));
    aclTensor *a = tensor_of(aDev, shape, 2, ACL_FLOAT), *b = tensor_of(bDev, shape, 2, ACL_FLOAT);
    aclTensor *z = tensor_of(zDev, shape, 2, ACL_FLOAT), *v = tensor_of(vDev, shape, 2, ACL_FLOAT);
    aclTensor *idx = tensor_of(iDev, shape, 2, ACL_INT64);
    CHECK(aclnnAddCustomTemplateGetWorkspaceSize(a, b, z, &ws, &executor) == ACL_SUCCESS, "add phase 1");
    void *addWs = ws ? device_copy(NULL, ws) : NULL;
    CHECK(aclnnAddCustomTemplate(addWs, ws, executor, stream) == ACL_SUCCESS, "add phase 2");
    uint64_t sortWs = 0;
    CHECK(aclnnSortCustomGetWorkspaceSize(z, true, v, idx, &sortWs, &executor) == ACL_SUCCESS, "sort phase 1");
    CHECK(aclnnSortCustom(NULL, sortWs, executor, stream) == ACL_SUCCESS, "sort phase 2");
    CHECK(aclrtSynchronizeStream(stream) == ACL_SUCCESS, "aclrtSynchronizeStream");
    float values[8];
    int64_t order[8];
    aclrtMemcpy(values, sizeof values, vDev, sizeof values, ACL_MEMCPY_DEVICE_TO_HOST);
    aclrtMemcpy(order, sizeof order, iDev, sizeof order, ACL_MEMCPY_DEVICE_TO_HOST);
    printf("sorted:");
    for (int i = 0; i < 8; i++) printf(" %g", values[i]);
    printf("\norder:");
    for (int i = 0; i < 8; i++) printf(" %lld", (long long)order[i]);
    printf("\n");

    aclDestroyTensor(x);
    aclDestroyTensor(out);
    aclDestroyTensor(a);
    aclDestroyTensor(b);
    aclDestroyTensor(z);
    aclDestroyTensor(v);
    aclDestroyTensor(idx);
    aclrtFree(xDev);
    aclrtFree(outDev);
    aclrtFree(aDev);
    aclrtFree(bDev);
    aclrtFree(zDev);
    aclrtFree(vDev);
    aclrtFree(iDev);
    if (addWs) aclrtFree(addWs);
    aclrtDestroyStream(stream);
    aclrtResetDevice(0);
    aclFinalize();
    printf("done\n");
    return 0;
}
