/* A CANN-style app for the dump tests: aclInit(argv[1]) (an acl.json), then aclnnBuggyAdd
 * called `calls` times (argv[2], default 3) on the default stream with the same tensors: the
 * first call is a miss, the others native cache hits. Prints "aclInit: <status> <message>"
 * and exits 2 when aclInit fails; else "done". */
#include <stdio.h>
#include <stdlib.h>

#include "acl/acl.h"
#include "aclnn_buggy_add.h"

#define N 256

int main(int argc, char **argv) {
    int ret = aclInit(argc > 1 ? argv[1] : NULL);
    if (ret != ACL_SUCCESS) {
        printf("aclInit: %d %s\n", ret, aclGetRecentErrMsg());
        return 2;
    }
    int calls = argc > 2 ? atoi(argv[2]) : 3;
    if (aclrtSetDevice(0) != ACL_SUCCESS) return 1;
    int64_t shape[] = {N}, strides[] = {1};
    float host[N];
    void *dev[3];
    aclTensor *t[3];
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < N; i++) host[i] = k == 2 ? 0.0f : (float)(i * (k + 1));
        if (aclrtMalloc(&dev[k], sizeof host, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return 1;
        aclrtMemcpy(dev[k], sizeof host, host, sizeof host, ACL_MEMCPY_HOST_TO_DEVICE);
        t[k] = aclCreateTensor(shape, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 1, dev[k]);
    }
    for (int c = 0; c < calls; c++) {
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        ret = aclnnBuggyAddGetWorkspaceSize(t[0], t[1], 1, t[2], &ws, &ex);
        if (ret == 0) ret = aclnnBuggyAdd(NULL, 0, ex, NULL);
        if (ret != 0) {
            printf("aclnnBuggyAdd: %d %s\n", ret, aclGetRecentErrMsg());
            return 1;
        }
    }
    for (int k = 0; k < 3; k++) {
        aclDestroyTensor(t[k]);
        aclrtFree(dev[k]);
    }
    aclrtResetDevice(0);
    aclFinalize();
    printf("done\n");
    return 0;
}
