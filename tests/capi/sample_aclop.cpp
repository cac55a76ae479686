// An in-house op runner in the style of CANN's single-op samples (AclOfflineModel /
// AclOnlineModel): tensor descs + data buffers + an op attr, host and device buffers, one op run
// by type on a stream, output copied back and written to a file.
//
//   sample_aclop compile|model DTYPE ROWS COLS DIR [ACL_JSON]
//     compile: aclopCompileAndExecuteV2 (the op packages of ASCEND_CUSTOM_OPP_PATH / ASCEND_OPP_PATH)
//     model:   aclopSetModelDir(DIR) + aclopExecuteV2 (single-op .om files found by content)
//   reads DIR/x.bin, DIR/y.bin, writes DIR/z.bin; DTYPE is float16 or float32.
// Exit code: 0, or the failing aclError % 256 (the error printed as "error: <code> <message>").
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "acl/acl_op_compiler.h"
#include "aclnn/opbuild_acl.h"

#define CHECK(call)                                                                                  \
    do {                                                                                             \
        aclError rc_ = (call);                                                                       \
        if (rc_ != ACL_SUCCESS) {                                                                    \
            const char *m_ = aclGetRecentErrMsg();                                                   \
            std::printf("error: %d %s\n  at %s\n", rc_, m_ ? m_ : "", #call);                        \
            return rc_ % 256 ? rc_ % 256 : 1;                                                        \
        }                                                                                            \
    } while (0)

static bool read_file(const std::string &path, void *buf, size_t size) {
    FILE *f = std::fopen(path.c_str(), "rb");
    if (!f) return false;
    size_t n = std::fread(buf, 1, size, f);
    std::fclose(f);
    return n == size;
}

static bool write_file(const std::string &path, const void *buf, size_t size) {
    FILE *f = std::fopen(path.c_str(), "wb");
    if (!f) return false;
    size_t n = std::fwrite(buf, 1, size, f);
    std::fclose(f);
    return n == size;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        std::printf("usage: %s compile|model DTYPE ROWS COLS DIR [ACL_JSON]\n", argv[0]);
        return 2;
    }
    const bool compile = std::strcmp(argv[1], "compile") == 0;
    const aclDataType dt = std::strcmp(argv[2], "float16") == 0 ? ACL_FLOAT16 : ACL_FLOAT;
    const std::string dir = argv[5];
    std::vector<int64_t> shape{std::atoll(argv[3]), std::atoll(argv[4])};

    CHECK(aclInit(argc > 6 ? argv[6] : nullptr));
    CHECK(aclrtSetDevice(0));
    aclrtRunMode mode;
    CHECK(aclrtGetRunMode(&mode));
    std::printf("run mode: %s\n", mode == ACL_HOST ? "host" : "device");
    if (!compile) CHECK(aclopSetModelDir(dir.c_str()));

    std::vector<aclTensorDesc *> inDesc, outDesc;
    for (int i = 0; i < 2; i++) inDesc.push_back(aclCreateTensorDesc(dt, 2, shape.data(), ACL_FORMAT_ND));
    outDesc.push_back(aclCreateTensorDesc(dt, 2, shape.data(), ACL_FORMAT_ND));
    aclopAttr *attr = aclopCreateAttr();
    const size_t size = aclGetTensorDescSize(inDesc[0]);
    std::printf("desc: dims %zu [%lld, %lld] elements %zu size %zu type %d format %d\n",
                aclGetTensorDescNumDims(inDesc[0]), (long long)aclGetTensorDescDim(inDesc[0], 0),
                (long long)aclGetTensorDescDim(inDesc[0], 1), aclGetTensorDescElementCount(inDesc[0]), size,
                (int)aclGetTensorDescType(inDesc[0]), (int)aclGetTensorDescFormat(inDesc[0]));

    std::vector<void *> host(3), dev(3);
    std::vector<aclDataBuffer *> inBuf, outBuf;
    for (int i = 0; i < 3; i++) {
        CHECK(aclrtMallocHost(&host[i], size));
        CHECK(aclrtMalloc(&dev[i], size, ACL_MEM_MALLOC_HUGE_FIRST));
        (i < 2 ? inBuf : outBuf).push_back(aclCreateDataBuffer(dev[i], size));
    }
    if (!read_file(dir + "/x.bin", host[0], size) || !read_file(dir + "/y.bin", host[1], size)) {
        std::printf("error: cannot read %s/x.bin, y.bin\n", dir.c_str());
        return 2;
    }
    for (int i = 0; i < 2; i++) CHECK(aclrtMemcpy(dev[i], size, host[i], size, ACL_MEMCPY_HOST_TO_DEVICE));

    aclrtStream stream = nullptr;
    CHECK(aclrtCreateStream(&stream));
    if (compile) {
        CHECK(aclopCompileAndExecuteV2("AddCustomTemplate", 2, inDesc.data(), inBuf.data(), 1, outDesc.data(),
                                       outBuf.data(), attr, ACL_ENGINE_SYS, ACL_COMPILE_SYS, nullptr, stream));
    } else {
        CHECK(aclopExecuteV2("AddCustomTemplate", 2, inDesc.data(), inBuf.data(), 1, outDesc.data(), outBuf.data(),
                             attr, stream));
    }
    CHECK(aclrtSynchronizeStreamWithTimeout(stream, 5000));
    std::printf("buffer: size %zu addr ok %d\n", aclGetDataBufferSizeV2(outBuf[0]),
                aclGetDataBufferAddr(outBuf[0]) == dev[2]);
    CHECK(aclrtMemcpy(host[2], size, dev[2], size, ACL_MEMCPY_DEVICE_TO_HOST));
    if (!write_file(dir + "/z.bin", host[2], size)) return 2;

    CHECK(aclrtDestroyStream(stream));
    for (int i = 0; i < 3; i++) {
        CHECK(aclDestroyDataBuffer(i < 2 ? inBuf[i] : outBuf[0]));
        CHECK(aclrtFree(dev[i]));
        CHECK(aclrtFreeHost(host[i]));
    }
    for (auto *d : inDesc) aclDestroyTensorDesc(d);
    for (auto *d : outDesc) aclDestroyTensorDesc(d);
    aclopDestroyAttr(attr);
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    std::printf("live objects: %lld\n", (long long)opbuild_acl_live_objects(-1));
    std::printf("ok\n");
    return 0;
}
