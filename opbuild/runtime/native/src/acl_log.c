/* acl_log.c: error reporting and live-object counters of the acl library.
 *
 * A failure is printed to stderr as a CANN-style log line
 *     [ERROR] OP(1234,app):2025-01-02-03:04:05.678.901 [opbuild] aclnnFooGetWorkspaceSize failed (...): ...
 * unless ASCEND_GLOBAL_LOG_LEVEL is 4 (null), and its message is kept per thread for
 * aclGetRecentErrMsg().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "acl_internal.h"

static __thread char tls_recent[ACL_MSG_LEN];
static __thread char tls_returned[ACL_MSG_LEN];
static __thread int tls_has_recent;

/* Live-object counters, in per-thread-group shards (one cache line each) so that threads creating
 * and releasing executors concurrently do not write one shared line; a query sums the shards. */
#define LIVE_SHARDS 16
static struct {
    int64_t v[OPBUILD_ACL_KIND_COUNT];
    char pad[64 - (OPBUILD_ACL_KIND_COUNT * sizeof(int64_t)) % 64];
} g_live[LIVE_SHARDS] __attribute__((aligned(64)));
static unsigned g_next_shard;
static __thread int tls_shard = -1;

void acl_live_add(int kind, int64_t delta) {
    if (kind < 0 || kind >= OPBUILD_ACL_KIND_COUNT) return;
    if (tls_shard < 0) tls_shard = (int)(__atomic_fetch_add(&g_next_shard, 1, __ATOMIC_RELAXED) % LIVE_SHARDS);
    __atomic_add_fetch(&g_live[tls_shard].v[kind], delta, __ATOMIC_RELAXED);
}

static int64_t live_of(int kind) {
    int64_t total = 0;
    for (int i = 0; i < LIVE_SHARDS; i++) total += __atomic_load_n(&g_live[i].v[kind], __ATOMIC_RELAXED);
    return total;
}

int64_t opbuild_acl_live_objects(int kind) {
    if (kind == -1) {
        int64_t total = 0;
        for (int k = 0; k < OPBUILD_ACL_KIND_COUNT; k++) total += live_of(k);
        return total;
    }
    if (kind < 0 || kind >= OPBUILD_ACL_KIND_COUNT) return -1;
    return live_of(kind);
}

uint32_t opbuild_acl_abi_version(void) { return OPBUILD_ACL_ABI_VERSION; }

static int log_enabled(void) {
    const char *level = getenv("ASCEND_GLOBAL_LOG_LEVEL");
    if (level == NULL || *level == '\0') return 1;
    char *end = NULL;
    long v = strtol(level, &end, 10);
    if (end == level) return 1;
    return v <= 3; /* 0 debug, 1 info, 2 warning, 3 error, 4 null */
}

void acl_verror(const char *module, const char *fmt, va_list ap) {
    vsnprintf(tls_recent, sizeof tls_recent, fmt, ap);
    tls_has_recent = 1;
    if (!log_enabled()) return;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    localtime_r(&tv.tv_sec, &tm);
    char stamp[64];
    strftime(stamp, sizeof stamp, "%Y-%m-%d-%H:%M:%S", &tm);
    fprintf(stderr, "[ERROR] %s(%ld,%s):%s.%03ld.%03ld [opbuild] %s\n", module, (long)getpid(),
            program_invocation_short_name, stamp, (long)(tv.tv_usec / 1000), (long)(tv.tv_usec % 1000), tls_recent);
    fflush(stderr);
}

void acl_error(const char *module, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    acl_verror(module, fmt, ap);
    va_end(ap);
}

aclError acl_fail(aclError code, const char *fmt, ...) {
    char msg[ACL_MSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    acl_error("ASCENDCL", "%s [error %d]", msg, code);
    return code;
}

const char *aclnn_status_name(aclnnStatus status) {
    switch (status) {
    case ACLNN_SUCCESS: return "ACLNN_SUCCESS";
    case ACLNN_ERR_PARAM_NULLPTR: return "ACLNN_ERR_PARAM_NULLPTR";
    case ACLNN_ERR_PARAM_INVALID: return "ACLNN_ERR_PARAM_INVALID";
    case ACLNN_ERR_RUNTIME_ERROR: return "ACLNN_ERR_RUNTIME_ERROR";
    case ACLNN_ERR_INNER: return "ACLNN_ERR_INNER";
    default: return "ACLNN_ERR";
    }
}

aclnnStatus aclnn_fail(aclnnStatus status, const char *api, const char *fmt, ...) {
    char msg[ACL_MSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    acl_error("OP", "%s failed (%d %s): %s", api ? api : "aclnn", (int)status, aclnn_status_name(status), msg);
    return status;
}

aclnnStatus opbuild_aclnn_null_param(const char *api, const char *param) {
    return aclnn_fail(ACLNN_ERR_PARAM_NULLPTR, api, "%s is a null pointer", param ? param : "a parameter");
}

const char *aclGetRecentErrMsg(void) {
    if (!tls_has_recent) return NULL;
    memcpy(tls_returned, tls_recent, sizeof tls_returned);
    tls_has_recent = 0;
    tls_recent[0] = '\0';
    return tls_returned;
}
