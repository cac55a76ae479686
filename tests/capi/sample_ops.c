/* A standalone program exercising the aclnn C ABI beyond a plain add: a float attribute and a
 * Python key callback (LeakyReluCustom), a tensor list (AddNCustom), an int array + bool attribute
 * and deterministic mode (ReduceSumCustom), repeatable executors, error statuses and messages,
 * and the live-object counters. AddNCustom is a custom op (libcust_opapi.so), LeakyReluCustom and
 * ReduceSumCustom built-in ones (libopapi_nn.so, libopapi_math.so). Output lines are
 * "name: values" parsed by test_capi_programs.py. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnn/opbuild_acl.h"
#include "aclnn_add_n_custom.h"
#include "aclnn_leaky_relu_custom.h"
#include "aclnn_reduce_sum_custom.h"

#define CHECK(cond, ...)                                   \
    do {                                                   \
        if (!(cond)) {                                     \
            printf("FAILED line %d: ", __LINE__);          \
            printf(__VA_ARGS__);                           \
            printf("\n");                                  \
            exit(1);                                       \
        }                                                  \
    } while (0)

static void *dev_upload(const void *host, size_t bytes) {
    void *dev = NULL;
    CHECK(aclrtMalloc(&dev, bytes, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS, "aclrtMalloc");
    CHECK(aclrtMemcpy(dev, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE) == ACL_SUCCESS, "aclrtMemcpy");
    return dev;
}

static aclTensor *tensor(const int64_t *shape, int ndim, void *dev) {
    aclTensor *t = aclCreateTensor(shape, ndim, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, shape, ndim, dev);
    CHECK(t != NULL, "aclCreateTensor");
    return t;
}

static void print_floats(const char *name, const void *dev, int n) {
    float host[64];
    CHECK(aclrtMemcpy(host, sizeof host, dev, n * sizeof(float), ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS, "copy");
    printf("%s:", name);
    for (int i = 0; i < n; i++) printf(" %g", host[i]);
    printf("\n");
}

static void run(aclnnStatus (*phase2)(void *, uint64_t, aclOpExecutor *, aclrtStream), uint64_t ws,
                aclOpExecutor *exec, aclrtStream stream) {
    void *wsAddr = NULL;
    if (ws > 0) CHECK(aclrtMalloc(&wsAddr, ws, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS, "workspace");
    aclnnStatus st = phase2(wsAddr, ws, exec, stream);
    CHECK(st == ACLNN_SUCCESS, "phase 2: %d", st);
    CHECK(aclrtSynchronizeStream(stream) == ACL_SUCCESS, "sync");
    if (wsAddr) aclrtFree(wsAddr);
}

/* Several C threads (unknown to Python) calling concurrently: each gets a lasting thread state. */
typedef struct {
    int id;
    int ok;
} worker_arg;

static void *worker(void *p) {
    worker_arg *w = p;
    float a[4], b[4], out[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (float)(w->id * 10 + i);
        b[i] = 1.0f;
    }
    int64_t s4[] = {4};
    void *da = dev_upload(a, sizeof a), *db = dev_upload(b, sizeof b), *dout = dev_upload(b, sizeof b);
    w->ok = 1;
    for (int iter = 0; iter < 20; iter++) {
        const aclTensor *items[2] = {tensor(s4, 1, da), tensor(s4, 1, db)};
        aclTensorList *list = aclCreateTensorList(items, 2);
        aclTensor *o = tensor(s4, 1, dout);
        uint64_t ws = 0;
        aclOpExecutor *exec = NULL;
        if (aclnnAddNCustomGetWorkspaceSize(list, o, &ws, &exec) != ACLNN_SUCCESS) w->ok = 0;
        else if (aclnnAddNCustom(NULL, ws, exec, NULL) != ACLNN_SUCCESS) w->ok = 0;
        aclDestroyTensorList(list);
        aclDestroyTensor(o);
        aclrtMemcpy(out, sizeof out, dout, sizeof out, ACL_MEMCPY_DEVICE_TO_HOST);
        for (int i = 0; i < 4; i++)
            if (out[i] != a[i] + 1.0f) w->ok = 0;
    }
    aclrtFree(da);
    aclrtFree(db);
    aclrtFree(dout);
    return NULL;
}

int main(void) {
    aclrtStream stream = NULL;
    CHECK(aclInit(NULL) == ACL_SUCCESS, "aclInit");
    CHECK(aclrtSetDevice(0) == ACL_SUCCESS, "aclrtSetDevice");
    CHECK(aclrtCreateStream(&stream) == ACL_SUCCESS, "aclrtCreateStream");

    /* ---- LeakyRelu: float attr; slope 0 selects the ReLU binary through the Python key rule */
    float xh[6] = {-2, -1, 0, 1, 2, -4};
    int64_t shape[] = {2, 3};
    void *xd = dev_upload(xh, sizeof xh), *yd = dev_upload(xh, sizeof xh);
    aclTensor *x = tensor(shape, 2, xd), *y = tensor(shape, 2, yd);
    uint64_t ws = 0;
    aclOpExecutor *exec = NULL;
    CHECK(aclnnLeakyReluCustomGetWorkspaceSize(x, 0.25, y, &ws, &exec) == ACLNN_SUCCESS, "leaky phase 1");
    printf("leaky_key: %s\n", opbuild_aclnn_executor_key(exec));
    run(aclnnLeakyReluCustom, ws, exec, stream);
    print_floats("leaky", yd, 6);
    CHECK(aclnnLeakyReluCustomGetWorkspaceSize(x, 0.0, y, &ws, &exec) == ACLNN_SUCCESS, "relu phase 1");
    printf("relu_key: %s\n", opbuild_aclnn_executor_key(exec));
    run(aclnnLeakyReluCustom, ws, exec, NULL);
    print_floats("relu", yd, 6);

    /* ---- repeatable executor: runs twice, then destroyed explicitly */
    CHECK(aclnnLeakyReluCustomGetWorkspaceSize(x, 0.5, y, &ws, &exec) == ACLNN_SUCCESS, "repeat phase 1");
    CHECK(aclSetAclOpExecutorRepeatable(exec) == ACLNN_SUCCESS, "repeatable");
    run(aclnnLeakyReluCustom, ws, exec, stream);
    run(aclnnLeakyReluCustom, ws, exec, stream);
    print_floats("repeat", yd, 6);
    CHECK(aclDestroyAclOpExecutor(exec) == ACLNN_SUCCESS, "destroy executor");
    /* a non-repeatable executor is gone after its run */
    CHECK(aclnnLeakyReluCustomGetWorkspaceSize(x, 0.5, y, &ws, &exec) == ACLNN_SUCCESS, "once phase 1");
    run(aclnnLeakyReluCustom, ws, exec, NULL);
    printf("rerun_status: %d\n", aclnnLeakyReluCustom(NULL, ws, exec, NULL));
    const char *msg = aclGetRecentErrMsg();
    printf("rerun_msg: %s\n", msg ? (strstr(msg, "not a live aclOpExecutor") ? "not live" : msg) : "(null)");

    /* ---- AddN: a tensor list of three tensors (the list owns them) */
    float a0[4] = {1, 2, 3, 4}, a1[4] = {10, 20, 30, 40}, a2[4] = {100, 200, 300, 400}, zero[4] = {0};
    int64_t s4[] = {4};
    void *d0 = dev_upload(a0, sizeof a0), *d1 = dev_upload(a1, sizeof a1), *d2 = dev_upload(a2, sizeof a2);
    void *sd = dev_upload(zero, sizeof zero);
    const aclTensor *items[3] = {tensor(s4, 1, d0), tensor(s4, 1, d1), tensor(s4, 1, d2)};
    aclTensorList *list = aclCreateTensorList(items, 3);
    CHECK(list != NULL, "aclCreateTensorList");
    aclTensor *sum = tensor(s4, 1, sd);
    CHECK(aclnnAddNCustomGetWorkspaceSize(list, sum, &ws, &exec) == ACLNN_SUCCESS, "addn phase 1");
    printf("addn_key: %s\n", opbuild_aclnn_executor_key(exec));
    run(aclnnAddNCustom, ws, exec, stream);
    print_floats("addn", sd, 4);

    /* ---- ReduceSum: aclIntArray axes + bool keepDims, deterministic binaries */
    float rh[24];
    for (int i = 0; i < 24; i++) rh[i] = (float)i;
    int64_t rshape[] = {2, 3, 4}, oshape[] = {1, 3, 1};
    void *rd = dev_upload(rh, sizeof rh), *od = dev_upload(zero, 3 * sizeof(float));
    aclTensor *rx = tensor(rshape, 3, rd), *ro = tensor(oshape, 3, od);
    int64_t axesv[] = {0, 2};
    aclIntArray *axes = aclCreateIntArray(axesv, 2);
    CHECK(axes != NULL, "aclCreateIntArray");
    CHECK(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1) == ACL_SUCCESS, "deterministic");
    CHECK(aclnnReduceSumCustomGetWorkspaceSize(rx, axes, true, ro, &ws, &exec) == ACLNN_SUCCESS, "reduce phase 1");
    printf("reduce_key: %s\n", opbuild_aclnn_executor_key(exec));
    printf("reduce_ws: %llu\n", (unsigned long long)ws);
    run(aclnnReduceSumCustom, ws, exec, stream);
    print_floats("reduce", od, 3);
    CHECK(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 0) == ACL_SUCCESS, "non-deterministic");
    ResetCacheThreadLocal();

    /* ---- threads */
    pthread_t tids[4];
    worker_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i].id = i;
        CHECK(pthread_create(&tids[i], NULL, worker, &args[i]) == 0, "pthread_create");
    }
    int all_ok = 1;
    for (int i = 0; i < 4; i++) {
        pthread_join(tids[i], NULL);
        all_ok &= args[i].ok;
    }
    printf("threads: %s\n", all_ok ? "ok" : "FAILED");

    /* ---- where the packages are: found from libcust_opapi.so's / libopapi_math.so's own location */
    printf("root: %s\n", opbuild_aclnn_package_root((const void *)&aclnnAddNCustom, "../.."));
    printf("builtin_root: %s\n", opbuild_aclnn_package_root((const void *)&aclnnReduceSumCustom, "../.."));

    /* ---- errors */
    printf("null_status: %d\n", aclnnLeakyReluCustomGetWorkspaceSize(NULL, 0.1, y, &ws, &exec));
    msg = aclGetRecentErrMsg();
    printf("null_msg: %s\n", msg ? msg : "(null)");
    printf("null_again: %s\n", aclGetRecentErrMsg() ? "set" : "(null)");
    aclTensor *bad = aclCreateTensor(shape, 2, ACL_COMPLEX64, NULL, 0, ACL_FORMAT_ND, shape, 2, yd);
    printf("dtype_status: %d\n", aclnnLeakyReluCustomGetWorkspaceSize(x, 0.1, bad, &ws, &exec));
    msg = aclGetRecentErrMsg();
    printf("dtype_msg: %s\n", msg ? (strstr(msg, "ACL_COMPLEX64") ? "names the dtype" : msg) : "(null)");
    aclDestroyTensor(bad);
    char small[4];
    printf("memcpy_status: %d\n", aclrtMemcpy(small, sizeof small, xh, sizeof xh, ACL_MEMCPY_DEVICE_TO_HOST));
    printf("device_status: %d\n", aclrtSetDevice(3));

    /* ---- release everything; counters back to zero */
    aclDestroyTensor(x);
    aclDestroyTensor(y);
    aclDestroyTensorList(list);
    aclDestroyTensor(sum);
    aclDestroyTensor(rx);
    aclDestroyTensor(ro);
    aclDestroyIntArray(axes);
    void *ptrs[] = {xd, yd, d0, d1, d2, sd, rd, od};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) aclrtFree(ptrs[i]);
    CHECK(aclrtDestroyStream(stream) == ACL_SUCCESS, "destroy stream");
    printf("live: %lld\n", (long long)opbuild_acl_live_objects(-1));
    CHECK(aclrtResetDevice(0) == ACL_SUCCESS, "reset");
    CHECK(aclFinalize() == ACL_SUCCESS, "finalize");
    printf("done\n");
    return 0;
}
