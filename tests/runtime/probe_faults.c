/* The aclnn C ABI on buggy kernels (tests/runtime/test_kernel_faults.py): ProbeCustom (y = scale * x)
 * called through aclnnProbeCustom for each scale given on the command line (the PROBE_MODES of
 * tests/runtime/conftest.py), on the default stream, or with a first argument "--stream" on a
 * created stream synchronized after each call. Prints per call
 * "scale S: status N: <aclGetRecentErrMsg or ok>" and finally "done". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnn_probe_custom.h"

int main(int argc, char **argv) {
    if (aclInit(NULL) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) return 2;
    int64_t shape[] = {16}, strides[] = {1};
    float host[16];
    for (int i = 0; i < 16; ++i) host[i] = 1.0f;
    void *x = NULL, *y = NULL;
    if (aclrtMalloc(&x, sizeof host, ACL_MEM_MALLOC_HUGE_FIRST) || aclrtMalloc(&y, sizeof host, ACL_MEM_MALLOC_HUGE_FIRST))
        return 2;
    aclrtMemcpy(x, sizeof host, host, sizeof host, ACL_MEMCPY_HOST_TO_DEVICE);
    aclTensor *tx = aclCreateTensor(shape, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 1, x);
    aclTensor *ty = aclCreateTensor(shape, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 1, y);
    aclrtStream stream = NULL;
    int first = 1;
    if (argc > 1 && strcmp(argv[1], "--stream") == 0) {
        if (aclrtCreateStream(&stream) != ACL_SUCCESS) return 2;
        first = 2;
    }
    for (int a = first; a < argc; ++a) {
        double scale = atof(argv[a]);
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        aclnnStatus st = aclnnProbeCustomGetWorkspaceSize(tx, scale, ty, &ws, &ex);
        void *wsp = NULL;
        if (st == 0 && ws) aclrtMalloc(&wsp, ws, ACL_MEM_MALLOC_HUGE_FIRST);
        if (st == 0) st = aclnnProbeCustom(wsp, ws, ex, stream);
        if (st == 0 && stream) st = aclrtSynchronizeStream(stream);
        if (wsp) aclrtFree(wsp);
        const char *msg = aclGetRecentErrMsg();
        aclrtMemcpy(host, sizeof host, y, sizeof host, ACL_MEMCPY_DEVICE_TO_HOST);
        printf("scale %s: status %d: %s (y[0] %g)\n", argv[a], (int)st, st ? (msg ? msg : "(no message)") : "ok",
               (double)host[0]);
        fflush(stdout);
    }
    if (stream) aclrtDestroyStream(stream);
    aclDestroyTensor(tx);
    aclDestroyTensor(ty);
    aclrtFree(x);
    aclrtFree(y);
    printf("done\n");
    return 0;
}
