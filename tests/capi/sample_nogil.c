/* The aclnn C ABI's cache hit never takes the GIL: after a first call (a miss: the embedded
 * interpreter starts and the plan is cached), a helper thread takes the GIL and holds it while
 * this thread makes 1000 more calls. Prints "nogil: ok <hits>"; if a hit waited for the GIL the
 * program would hang, so an alarm ends it with "nogil: blocked". With NOGIL_FORCE_MISS set, every
 * call is made a miss (the native cache emptied first), which must block: the test's control. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "acl/acl.h"
#include "aclnn/opbuild_acl.h"
#include "aclnn_add_custom_template.h"

static int (*gil_ensure)(void);
static void (*gil_release)(int);
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int held, done;

static void *hold_gil(void *unused) {
    (void)unused;
    int g = gil_ensure(); /* the interpreter the acl library embedded */
    pthread_mutex_lock(&mu);
    held = 1;
    pthread_cond_broadcast(&cv);
    while (!done) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    gil_release(g);
    return NULL;
}

static void blocked(int sig) {
    (void)sig;
    static const char msg[] = "nogil: blocked\n";
    (void)!write(1, msg, sizeof msg - 1);
    _exit(3);
}

int main(void) {
    if (aclInit(NULL) != ACL_SUCCESS) return 1;
    float x[4] = {1, 2, 3, 4}, y[4] = {10, 20, 30, 40}, z[4] = {0};
    int64_t shape[1] = {4}, strides[1] = {1};
    aclTensor *tx = aclCreateTensor(shape, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 1, x);
    aclTensor *ty = aclCreateTensor(shape, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 1, y);
    aclTensor *tz = aclCreateTensor(shape, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 1, z);
    uint64_t ws;
    aclOpExecutor *ex;
    if (aclnnAddCustomTemplateGetWorkspaceSize(tx, ty, tz, &ws, &ex) || aclnnAddCustomTemplate(NULL, ws, ex, NULL)) {
        printf("first call failed: %s\n", aclGetRecentErrMsg());
        return 1;
    }
    *(void **)&gil_ensure = dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
    *(void **)&gil_release = dlsym(RTLD_DEFAULT, "PyGILState_Release");
    if (gil_ensure == NULL || gil_release == NULL) {
        printf("no libpython in the process\n");
        return 1;
    }
    pthread_t holder;
    pthread_create(&holder, NULL, hold_gil, NULL);
    pthread_mutex_lock(&mu);
    while (!held) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    int force_miss = getenv("NOGIL_FORCE_MISS") != NULL;
    signal(SIGALRM, blocked);
    alarm(force_miss ? 3 : 20);
    opbuild_aclnn_cache_counters before, after;
    opbuild_aclnn_cache_stats(&before);
    for (int i = 0; i < 1000; i++) {
        z[0] = 0;
        if (force_miss) opbuild_aclnn_clear_cache();
        if (aclnnAddCustomTemplateGetWorkspaceSize(tx, ty, tz, &ws, &ex) || aclnnAddCustomTemplate(NULL, ws, ex, NULL) ||
            z[0] != 11.0f) {
            printf("call %d failed: %s\n", i, aclGetRecentErrMsg());
            return 1;
        }
    }
    alarm(0);
    opbuild_aclnn_cache_stats(&after);
    pthread_mutex_lock(&mu);
    done = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(holder, NULL);
    printf("nogil: ok %llu\n", (unsigned long long)(after.hits - before.hits));
    aclDestroyTensor(tx);
    aclDestroyTensor(ty);
    aclDestroyTensor(tz);
    aclFinalize();
    return 0;
}
