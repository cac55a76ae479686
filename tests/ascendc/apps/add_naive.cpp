// An in-house C++ app in the style of CANN's AclNNInvocationNaive samples: z = x + y through
// aclnnAddAscendcGetWorkspaceSize / aclnnAddAscendc on a created stream, fp16 data as uint16_t
// bit patterns converted with aclFloatToFloat16. Prints "test pass" when every element matches.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnn_add_ascendc.h"

#define CHECK(cond, what)                                   \
    do {                                                    \
        if (!(cond)) {                                      \
            std::printf("%s failed (line %d)\n", what, __LINE__); \
            return 1;                                       \
        }                                                   \
    } while (0)

static aclTensor *MakeTensor(std::vector<uint16_t> &host, const std::vector<int64_t> &shape, void **dev)
{
    const size_t bytes = host.size() * sizeof(uint16_t);
    if (aclrtMalloc(dev, bytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return nullptr;
    if (aclrtMemcpy(*dev, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS) return nullptr;
    std::vector<int64_t> strides(shape.size(), 1);
    for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) strides[i] = shape[i + 1] * strides[i + 1];
    return aclCreateTensor(shape.data(), shape.size(), ACL_FLOAT16, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                           shape.size(), *dev);
}

int main()
{
    CHECK(aclInit(nullptr) == ACL_SUCCESS, "aclInit");
    CHECK(aclrtSetDevice(0) == ACL_SUCCESS, "aclrtSetDevice");
    aclrtStream stream = nullptr;
    CHECK(aclrtCreateStream(&stream) == ACL_SUCCESS, "aclrtCreateStream");

    const std::vector<int64_t> shape = {8, 2048};
    const size_t n = 8 * 2048;
    std::vector<uint16_t> x(n), y(n), z(n, 0);
    for (size_t i = 0; i < n; ++i) {
        x[i] = aclFloatToFloat16(static_cast<float>(i % 17) * 0.5f);
        y[i] = aclFloatToFloat16(static_cast<float>(i % 5) - 2.0f);
    }
    void *xd = nullptr, *yd = nullptr, *zd = nullptr;
    aclTensor *xt = MakeTensor(x, shape, &xd), *yt = MakeTensor(y, shape, &yd), *zt = MakeTensor(z, shape, &zd);
    CHECK(xt && yt && zt, "aclCreateTensor");

    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    CHECK(aclnnAddAscendcGetWorkspaceSize(xt, yt, zt, &workspaceSize, &executor) == ACL_SUCCESS,
          "aclnnAddAscendcGetWorkspaceSize");
    void *workspace = nullptr;
    if (workspaceSize > 0) CHECK(aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS, "aclrtMalloc");
    CHECK(aclnnAddAscendc(workspace, workspaceSize, executor, stream) == ACL_SUCCESS, "aclnnAddAscendc");
    CHECK(aclrtSynchronizeStream(stream) == ACL_SUCCESS, "aclrtSynchronizeStream");
    CHECK(aclrtMemcpy(z.data(), n * 2, zd, n * 2, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS, "aclrtMemcpy");

    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
        const float want = static_cast<float>(i % 17) * 0.5f + (static_cast<float>(i % 5) - 2.0f);
        if (std::fabs(aclFloat16ToFloat(z[i]) - want) > 1e-3f) ++bad;
    }
    aclDestroyTensor(xt);
    aclDestroyTensor(yt);
    aclDestroyTensor(zt);
    aclrtFree(xd);
    aclrtFree(yd);
    aclrtFree(zd);
    if (workspace) aclrtFree(workspace);
    aclrtDestroyStream(stream);
    aclrtResetDevice(0);
    aclFinalize();
    if (bad != 0) {
        std::printf("test failed: %zu of %zu elements differ\n", bad, n);
        return 1;
    }
    std::printf("test pass\n");
    return 0;
}
