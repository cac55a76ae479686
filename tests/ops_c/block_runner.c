/* Test-only block runner: launches every block of a kernel binary on host threads.
 *
 * A stand-in for the device simulator while the real one is written: kernels that use SyncAll
 * run with one thread per block and a barrier that a returning block leaves (kernel.h's
 * contract); other kernels run on `threads` workers that pull block indices from a counter, so
 * the thread count differs from the block count.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opbuild/kernel.h"

typedef struct Barrier {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    uint32_t members;  /* blocks still running */
    uint32_t waiting;
    uint64_t generation;
} Barrier;

static void barrier_release_locked(Barrier *b) {
    b->waiting = 0;
    b->generation++;
    pthread_cond_broadcast(&b->cond);
}

static void barrier_wait(void *ctx) {
    Barrier *b = (Barrier *)ctx;
    pthread_mutex_lock(&b->mutex);
    uint64_t gen = b->generation;
    if (++b->waiting == b->members) {
        barrier_release_locked(b);
    } else {
        while (gen == b->generation) pthread_cond_wait(&b->cond, &b->mutex);
    }
    pthread_mutex_unlock(&b->mutex);
}

static void barrier_leave(Barrier *b) {
    pthread_mutex_lock(&b->mutex);
    b->members--;
    if (b->waiting > 0 && b->waiting == b->members) barrier_release_locked(b);
    pthread_mutex_unlock(&b->mutex);
}

typedef struct Shared {
    opbuild_kernel_launch_fn launch;
    void *const *args;
    uint32_t nargs;
    uint32_t block_num;
    Barrier *barrier; /* NULL: no SyncAll */
    uint32_t next_block;
    pthread_mutex_t err_mutex;
    int32_t status;
    char err[512];
} Shared;

typedef struct Worker {
    Shared *shared;
    uint32_t fixed_block; /* with a barrier: the one block this thread runs */
} Worker;

static void run_one(Shared *s, uint32_t block) {
    char msg[256] = {0};
    int32_t rc = s->launch(s->args, s->nargs, block, s->block_num, s->barrier ? barrier_wait : NULL, s->barrier,
                           msg, (uint32_t)sizeof msg);
    if (rc != 0) {
        pthread_mutex_lock(&s->err_mutex);
        if (s->status == 0) {
            s->status = rc;
            snprintf(s->err, sizeof s->err, "block %u: %s", block, msg);
        }
        pthread_mutex_unlock(&s->err_mutex);
    }
}

static void *worker_main(void *arg) {
    Worker *w = (Worker *)arg;
    Shared *s = w->shared;
    if (s->barrier) {
        run_one(s, w->fixed_block);
        barrier_leave(s->barrier);
        return NULL;
    }
    for (;;) {
        uint32_t block = __atomic_fetch_add(&s->next_block, 1u, __ATOMIC_RELAXED);
        if (block >= s->block_num) return NULL;
        run_one(s, block);
    }
}

__attribute__((visibility("default"))) int32_t opbuild_test_run_blocks(void *launch, void *const *args,
                                                                       uint32_t nargs, uint32_t block_num,
                                                                       uint32_t threads, int32_t use_sync,
                                                                       char *err, uint32_t errlen) {
    if (block_num == 0) {
        snprintf(err, errlen, "block_num is 0");
        return -1;
    }
    Shared s;
    memset(&s, 0, sizeof s);
    s.launch = (opbuild_kernel_launch_fn)launch;
    s.args = args;
    s.nargs = nargs;
    s.block_num = block_num;
    pthread_mutex_init(&s.err_mutex, NULL);
    Barrier barrier;
    if (use_sync) {
        memset(&barrier, 0, sizeof barrier);
        pthread_mutex_init(&barrier.mutex, NULL);
        pthread_cond_init(&barrier.cond, NULL);
        barrier.members = block_num;
        s.barrier = &barrier;
        threads = block_num;
    }
    if (threads == 0) threads = 1;
    if (threads > block_num) threads = block_num;
    pthread_t *tids = calloc(threads, sizeof *tids);
    Worker *workers = calloc(threads, sizeof *workers);
    if (!tids || !workers) {
        free(tids);
        free(workers);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    uint32_t started = 0;
    for (uint32_t t = 0; t < threads; ++t) {
        workers[t].shared = &s;
        workers[t].fixed_block = t;
        if (pthread_create(&tids[t], NULL, worker_main, &workers[t]) != 0) break;
        started++;
    }
    /* Blocks that never started leave the barrier so the started ones cannot hang. */
    for (uint32_t t = started; s.barrier && t < threads; ++t) barrier_leave(s.barrier);
    for (uint32_t t = 0; t < started; ++t) pthread_join(tids[t], NULL);
    free(tids);
    free(workers);
    if (started != threads) {
        snprintf(err, errlen, "could only start %u of %u threads", started, threads);
        return -1;
    }
    if (s.status != 0) snprintf(err, errlen, "%s", s.err);
    return s.status;
}
