/* 8 C threads calling aclnnAddCustomTemplate concurrently through the native hit path: each
 * thread has its own shapes (and two threads share each shape, so equal keys meet in different
 * threads' caches), checks every result, resets its per-call state now and then and empties its
 * cache once. Prints "thread <t>: ok hits <h> misses <m>" and "threads: ok". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "acl/acl.h"
#include "aclnn/opbuild_acl.h"
#include "aclnn_add_custom_template.h"

#define THREADS 8
#define ITERATIONS 300

typedef struct {
    int id;
    int failed;
    opbuild_aclnn_cache_counters stats;
} worker_arg;

static aclTensor *tensor(float *data, int64_t n) {
    int64_t shape[1] = {n}, strides[1] = {1};
    return aclCreateTensor(shape, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 1, data);
}

static void *worker(void *p) {
    worker_arg *arg = p;
    int64_t n = 1 + (arg->id / 2) * 37;
    float *x, *y, *z;
    if (aclrtMalloc((void **)&x, n * sizeof(float), ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS ||
        aclrtMalloc((void **)&y, n * sizeof(float), ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS ||
        aclrtMalloc((void **)&z, n * sizeof(float), ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
        arg->failed = 1;
        return NULL;
    }
    aclTensor *tx = tensor(x, n), *ty = tensor(y, n), *tz = tensor(z, n);
    for (int it = 0; it < ITERATIONS && !arg->failed; it++) {
        for (int64_t i = 0; i < n; i++) {
            x[i] = (float)(arg->id * 1000 + it);
            y[i] = (float)i;
            z[i] = -1.0f;
        }
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        if (aclnnAddCustomTemplateGetWorkspaceSize(tx, ty, tz, &ws, &ex) != ACLNN_SUCCESS ||
            aclnnAddCustomTemplate(NULL, ws, ex, NULL) != ACLNN_SUCCESS) {
            fprintf(stderr, "thread %d iteration %d: %s\n", arg->id, it, aclGetRecentErrMsg());
            arg->failed = 1;
            break;
        }
        for (int64_t i = 0; i < n; i++)
            if (z[i] != x[i] + y[i]) {
                fprintf(stderr, "thread %d iteration %d: z[%lld] = %g, expected %g\n", arg->id, it, (long long)i, z[i],
                        x[i] + y[i]);
                arg->failed = 1;
                break;
            }
        if (it % 50 == 25) ResetCacheThreadLocal();        /* keeps the cache */
        if (it == 150 && arg->id % 2) opbuild_aclnn_clear_cache(); /* this thread's cache only */
    }
    opbuild_aclnn_cache_stats(&arg->stats);
    aclDestroyTensor(tx);
    aclDestroyTensor(ty);
    aclDestroyTensor(tz);
    aclrtFree(x);
    aclrtFree(y);
    aclrtFree(z);
    return NULL;
}

int main(void) {
    if (aclInit(NULL) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) return 1;
    pthread_t tids[THREADS];
    worker_arg args[THREADS] = {{0}};
    for (int i = 0; i < THREADS; i++) {
        args[i].id = i;
        if (pthread_create(&tids[i], NULL, worker, &args[i]) != 0) return 2;
    }
    int failed = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(tids[i], NULL);
        failed |= args[i].failed;
        printf("thread %d: %s hits %llu misses %llu\n", i, args[i].failed ? "failed" : "ok",
               (unsigned long long)args[i].stats.hits, (unsigned long long)args[i].stats.misses);
    }
    printf("threads: %s\n", failed ? "failed" : "ok");
    printf("live executors: %lld\n", (long long)opbuild_acl_live_objects(OPBUILD_ACL_EXECUTOR));
    aclrtResetDevice(0);
    aclFinalize();
    return failed;
}
