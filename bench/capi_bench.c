/* capi_bench.c: the C rows of bench/runtime_bench.py (compiled and run by it).
 *
 *   capi_bench <iterations> <repeats> <threads>...
 *   capi_bench hits <iterations>     only <iterations> cache hits (bench/hit_ir.py counts their
 *                                    instructions under callgrind)
 *   capi_bench stream_hits <iterations>  the same on a created stream (a synchronize per 1,000)
 *
 * A C program calling aclnnAddCustomTemplate (1 fp32 element) through the generated aclnn C ABI,
 * as CANN's samples do. Prints, one per line ("name: value"):
 *   hit_us          best-of-<repeats> microseconds per two-phase call, cache hit (native path),
 *                   default stream
 *   stream_hit_us   the same on a stream of aclrtCreateStream, one aclrtSynchronizeStream per
 *                   STREAM_BATCH calls (included in the time)
 *   native_miss_us  the same after opbuild_aclnn_clear_cache() each call: the native miss path
 *                   (Python runtime's cache hit, the plan cached natively again)
 *   calls_per_s_<n> two-phase calls per second of <n> threads calling concurrently, each on its
 *                   own tensors (total over the threads)
 * and exits non-zero when a call fails or gives a wrong result.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acl/acl.h"
#include "aclnn/opbuild_acl.h"
#include "aclnn_add_custom_template.h"

typedef struct {
    float *x, *y, *z;
    aclTensor *tx, *ty, *tz;
} operands;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static aclTensor *tensor(float *data) {
    int64_t shape[1] = {1}, strides[1] = {1};
    return aclCreateTensor(shape, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 1, data);
}

static int make(operands *o) {
    if (aclrtMalloc((void **)&o->x, 64, ACL_MEM_MALLOC_HUGE_FIRST) || aclrtMalloc((void **)&o->y, 64, ACL_MEM_MALLOC_HUGE_FIRST) ||
        aclrtMalloc((void **)&o->z, 64, ACL_MEM_MALLOC_HUGE_FIRST))
        return -1;
    o->x[0] = 1.0f;
    o->y[0] = 2.0f;
    o->z[0] = 0.0f;
    o->tx = tensor(o->x);
    o->ty = tensor(o->y);
    o->tz = tensor(o->z);
    return o->tx && o->ty && o->tz ? 0 : -1;
}

static int call_on(const operands *o, aclrtStream stream) {
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    if (aclnnAddCustomTemplateGetWorkspaceSize(o->tx, o->ty, o->tz, &ws, &ex) != ACLNN_SUCCESS) return -1;
    return aclnnAddCustomTemplate(NULL, ws, ex, stream) == ACLNN_SUCCESS ? 0 : -1;
}

static int call(const operands *o) { return call_on(o, NULL); }

#define STREAM_BATCH 1000 /* calls per aclrtSynchronizeStream (issue 24's row) */

/* best-of-`repeats` seconds per call on `stream`, a synchronize after every STREAM_BATCH calls
 * and at the end (in the time); -1 when a call or a synchronize fails or the result is wrong */
static double per_call_stream(operands *o, aclrtStream stream, long n, int repeats) {
    double best = 1e30;
    for (int r = 0; r < repeats; r++) {
        o->z[0] = 0.0f;
        double t0 = now();
        for (long i = 0; i < n; i++) {
            if (call_on(o, stream)) return -1;
            if ((i + 1) % STREAM_BATCH == 0 && aclrtSynchronizeStream(stream) != ACL_SUCCESS) return -1;
        }
        if (aclrtSynchronizeStream(stream) != ACL_SUCCESS) return -1;
        double t = (now() - t0) / (double)n;
        if (o->z[0] != 3.0f) return -1;
        if (t < best) best = t;
    }
    return best;
}

static double per_call(const operands *o, long n, int repeats, int clear) {
    double best = 1e30;
    for (int r = 0; r < repeats; r++) {
        double t0 = now();
        for (long i = 0; i < n; i++) {
            if (clear) opbuild_aclnn_clear_cache();
            if (call(o)) return -1;
        }
        double t = (now() - t0) / (double)n;
        if (t < best) best = t;
    }
    return best;
}

typedef struct {
    long n;
    int failed;
    pthread_barrier_t *start;
    double t_start, t_end; /* when this thread's calls began and ended */
} worker_arg;

static void *worker(void *p) {
    worker_arg *a = p;
    operands o;
    if (make(&o) || call(&o)) { /* the first call fills this thread's cache */
        a->failed = 1;
        pthread_barrier_wait(a->start);
        return NULL;
    }
    pthread_barrier_wait(a->start);
    a->t_start = now();
    for (long i = 0; i < a->n && !a->failed; i++)
        if (call(&o)) a->failed = 1;
    a->t_end = now();
    if (o.z[0] != 3.0f) a->failed = 1;
    return NULL;
}

/* calls per second of `threads` threads, each making n calls after a warm-up call */
static double throughput(int threads, long n) {
    pthread_t tids[64];
    worker_arg args[64];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    for (int i = 0; i < threads; i++) {
        args[i] = (worker_arg){n, 0, &start, 0, 0};
        if (pthread_create(&tids[i], NULL, worker, &args[i])) return -1;
    }
    pthread_barrier_wait(&start);
    /* the span from the first thread's first call to the last thread's last call (the main
     * thread's own clock could start late: it competes for the CPUs with the workers) */
    int failed = 0;
    double first = 1e300, last = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(tids[i], NULL);
        failed |= args[i].failed;
        if (args[i].t_start < first) first = args[i].t_start;
        if (args[i].t_end > last) last = args[i].t_end;
    }
    double t = last - first;
    pthread_barrier_destroy(&start);
    return failed ? -1 : (double)threads * (double)n / t;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s <iterations> <repeats> <threads>...\n", argv[0]);
        return 2;
    }
    int stream_only = strcmp(argv[1], "stream_hits") == 0;
    int hits_only = stream_only || strcmp(argv[1], "hits") == 0;
    long n = atol(argv[hits_only ? 2 : 1]);
    int repeats = hits_only ? 1 : atoi(argv[2]);
    if (aclInit(NULL) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) return 1;
    operands o;
    if (make(&o) || call(&o) || o.z[0] != 3.0f) {
        fprintf(stderr, "first call failed: %s\n", aclGetRecentErrMsg());
        return 1;
    }
    aclrtStream stream = NULL;
    if (aclrtCreateStream(&stream) != ACL_SUCCESS) {
        fprintf(stderr, "aclrtCreateStream failed: %s\n", aclGetRecentErrMsg());
        return 1;
    }
    if (stream_only) {
        double hit = per_call_stream(&o, stream, n, 1);
        if (hit < 0) {
            fprintf(stderr, "call on a stream failed: %s\n", aclGetRecentErrMsg());
            return 1;
        }
        printf("stream_hit_us: %.4f\n", hit * 1e6);
        return aclrtDestroyStream(stream) == ACL_SUCCESS ? 0 : 1;
    }
    if (hits_only) {
        double hit = per_call(&o, n, 1, 0);
        if (hit < 0 || o.z[0] != 3.0f) {
            fprintf(stderr, "call failed: %s\n", aclGetRecentErrMsg());
            return 1;
        }
        printf("hit_us: %.4f\n", hit * 1e6);
        return 0;
    }
    double hit = per_call(&o, n, repeats, 0);
    double stream_hit = per_call_stream(&o, stream, n, repeats);
    double miss = per_call(&o, n / 20 + 1, repeats, 1);
    if (hit < 0 || stream_hit < 0 || miss < 0 || aclrtDestroyStream(stream) != ACL_SUCCESS) {
        fprintf(stderr, "call failed: %s\n", aclGetRecentErrMsg());
        return 1;
    }
    printf("hit_us: %.4f\n", hit * 1e6);
    printf("stream_hit_us: %.4f\n", stream_hit * 1e6);
    printf("native_miss_us: %.4f\n", miss * 1e6);
    for (int i = 3; i < argc; i++) {
        int threads = atoi(argv[i]);
        if (threads < 1 || threads > 64) continue;
        double best = 0;
        for (int r = 0; r < repeats; r++) {
            double cps = throughput(threads, n / threads + 1);
            if (cps < 0) {
                fprintf(stderr, "%d threads: a call failed: %s\n", threads, aclGetRecentErrMsg());
                return 1;
            }
            if (cps > best) best = cps;
        }
        printf("calls_per_s_%d: %.0f\n", threads, best);
    }
    aclrtResetDevice(0);
    aclFinalize();
    return 0;
}
