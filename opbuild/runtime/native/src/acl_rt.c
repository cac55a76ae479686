/* acl_rt.c: aclInit/aclFinalize and the aclrt* runtime on top of the device simulator.
 *
 * The simulator library is dlopened by path on first use, with the rule opbuild/runtime/device.py
 * uses: env OPBUILD_SIM_LIB, else the _opbuild_sim library built next to this one (its file name
 * is baked in by setup.py as OPBUILD_SIM_BASENAME). dlopen of a file already loaded returns the
 * loaded copy, so the process has one simulator - one heap of device memory, one thread pool -
 * whether Python or C loads it first.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acl_internal.h"

/* Messages and paths are cut at their buffer size on purpose. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#ifndef OPBUILD_SIM_BASENAME
#error "OPBUILD_SIM_BASENAME must name the simulator library file (defined by setup.py)"
#endif

/* ---- where this library is ------------------------------------------------------------------ */

static char g_lib_dir[PATH_MAX];
static pthread_once_t g_lib_dir_once = PTHREAD_ONCE_INIT;

static void find_library_dir(void) {
    Dl_info info;
    char resolved[PATH_MAX];
    if (dladdr((const void *)&find_library_dir, &info) == 0 || info.dli_fname == NULL) return;
    const char *path = realpath(info.dli_fname, resolved) ? resolved : info.dli_fname;
    snprintf(g_lib_dir, sizeof g_lib_dir, "%s", path);
    char *slash = strrchr(g_lib_dir, '/');
    if (slash != NULL) *slash = '\0';
    else snprintf(g_lib_dir, sizeof g_lib_dir, ".");
}

const char *acl_library_dir(void) {
    pthread_once(&g_lib_dir_once, find_library_dir);
    return g_lib_dir;
}

/* ---- the simulator -------------------------------------------------------------------------- */

static sim_api g_sim;
static int g_sim_ok;
static char g_sim_path[PATH_MAX];
static char g_sim_error[ACL_MSG_LEN];
static pthread_once_t g_sim_once = PTHREAD_ONCE_INIT;

static void load_sim(void) {
    const char *env = getenv(OPBUILD_ENV_SIM_LIB);
    if (env != NULL && *env != '\0') snprintf(g_sim_path, sizeof g_sim_path, "%s", env);
    else snprintf(g_sim_path, sizeof g_sim_path, "%s/%s", acl_library_dir(), OPBUILD_SIM_BASENAME);
    void *h = dlopen(g_sim_path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        snprintf(g_sim_error, sizeof g_sim_error,
                 "cannot load the device simulator %s: %s; rebuild it with `pip install -e .`", g_sim_path, dlerror());
        return;
    }
    struct { const char *name; void **slot; } syms[] = {
        {"sim_abi_version", (void **)&g_sim.abi_version},
        {"sim_last_error", (void **)&g_sim.last_error},
        {"sim_malloc", (void **)&g_sim.malloc_},
        {"sim_free", (void **)&g_sim.free_},
        {"sim_stream_create", (void **)&g_sim.stream_create},
        {"sim_stream_synchronize", (void **)&g_sim.stream_synchronize},
        {"sim_stream_destroy", (void **)&g_sim.stream_destroy},
        {"sim_stream_enqueue_host", (void **)&g_sim.stream_enqueue_host},
        {"sim_launch", (void **)&g_sim.launch},
        {"sim_launch_then", (void **)&g_sim.launch_then},
        {"sim_allocation", (void **)&g_sim.allocation},
        {"sim_allocation_generation", (void **)&g_sim.allocation_generation},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        *syms[i].slot = dlsym(h, syms[i].name);
        if (*syms[i].slot == NULL) {
            snprintf(g_sim_error, sizeof g_sim_error, "%s is not a device simulator library: no symbol %s",
                     g_sim_path, syms[i].name);
            return;
        }
    }
    uint32_t version = g_sim.abi_version();
    if (version != SIM_ABI_VERSION) {
        snprintf(g_sim_error, sizeof g_sim_error, "%s has simulator ABI version %u, expected %u; rebuild it with "
                 "`pip install -e .`", g_sim_path, version, SIM_ABI_VERSION);
        return;
    }
    g_sim_ok = 1;
}

const sim_api *acl_sim(void) {
    pthread_once(&g_sim_once, load_sim);
    if (!g_sim_ok) {
        acl_error("ASCENDCL", "%s", g_sim_error);
        return NULL;
    }
    return &g_sim;
}

const char *opbuild_acl_sim_library(void) { return acl_sim() ? g_sim_path : NULL; }

static aclError sim_code_to_acl(int code) {
    switch (code) {
    case SIM_OK: return ACL_SUCCESS;
    case SIM_EKERNEL: return ACL_ERROR_RT_AICORE_EXCEPTION;
    case SIM_EINVAL: return ACL_ERROR_RT_PARAM_INVALID;
    case SIM_ENOMEM: return ACL_ERROR_RT_MEMORY_ALLOCATION;
    default: return ACL_ERROR_RT_INTERNAL_ERROR;
    }
}

#define REQUIRE_SIM(sim)                                                    \
    const sim_api *sim = acl_sim();                                         \
    if (sim == NULL) return ACL_ERROR_RT_FAILURE

/* ---- init, devices -------------------------------------------------------------------------- */

static pthread_mutex_t g_state_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_initialized;
static __thread int tls_device_set;

aclError aclInit(const char *configPath) {
    pthread_mutex_lock(&g_state_lock);
    int already = g_initialized;
    pthread_mutex_unlock(&g_state_lock);
    if (already) return acl_fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit: already initialized");
    aclError rc = acl_read_config(configPath); /* acl_config.c */
    if (rc != ACL_SUCCESS) return rc;
    const char *dump = opbuild_acl_dump_config();
    if (dump != NULL) { /* checked and started in Python, which writes the dump */
        rc = acl_dump_configure(configPath, dump);
        if (rc != ACL_SUCCESS) return rc;
    }
    REQUIRE_SIM(sim);
    (void)sim;
    pthread_mutex_lock(&g_state_lock);
    int again = g_initialized;
    g_initialized = 1;
    pthread_mutex_unlock(&g_state_lock);
    if (again) return acl_fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit: already initialized");
    return ACL_SUCCESS;
}

aclError aclFinalize(void) {
    pthread_mutex_lock(&g_state_lock);
    int was = g_initialized;
    g_initialized = 0;
    pthread_mutex_unlock(&g_state_lock);
    if (!was) return acl_fail(ACL_ERROR_REPEAT_FINALIZE, "aclFinalize: not initialized (aclInit was not called, or "
                              "aclFinalize was called already)");
    acl_op_finalize();
    return ACL_SUCCESS;
}

aclError aclrtSetDevice(int32_t deviceId) {
    if (deviceId != 0)
        return acl_fail(ACL_ERROR_RT_INVALID_DEVICEID, "aclrtSetDevice: device %d does not exist; the simulator has "
                        "device 0 only", (int)deviceId);
    REQUIRE_SIM(sim);
    (void)sim;
    tls_device_set = 1;
    return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t deviceId) {
    if (deviceId != 0)
        return acl_fail(ACL_ERROR_RT_INVALID_DEVICEID, "aclrtResetDevice: device %d does not exist; the simulator has "
                        "device 0 only", (int)deviceId);
    tls_device_set = 0;
    return ACL_SUCCESS;
}

aclError aclrtGetDevice(int32_t *deviceId) {
    if (deviceId == NULL) return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice: deviceId is a null pointer");
    if (!tls_device_set)
        return acl_fail(ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetDevice: no device was set in this thread (aclrtSetDevice)");
    *deviceId = 0;
    return ACL_SUCCESS;
}

aclError aclrtGetDeviceCount(uint32_t *count) {
    if (count == NULL) return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount: count is a null pointer");
    *count = 1;
    return ACL_SUCCESS;
}

/* ---- streams -------------------------------------------------------------------------------- */

static pthread_mutex_t g_streams_lock = PTHREAD_MUTEX_INITIALIZER;
static sim_stream **g_streams;
static size_t g_nstreams, g_streams_cap;

static int stream_index_locked(const void *stream) {
    for (size_t i = 0; i < g_nstreams; i++)
        if (g_streams[i] == stream) return (int)i;
    return -1;
}

bool acl_stream_is_live(aclrtStream stream) {
    pthread_mutex_lock(&g_streams_lock);
    int found = stream_index_locked(stream) >= 0;
    pthread_mutex_unlock(&g_streams_lock);
    return found;
}

aclError aclrtCreateStream(aclrtStream *stream) {
    if (stream == NULL) return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream: stream is a null pointer");
    REQUIRE_SIM(sim);
    pthread_mutex_lock(&g_streams_lock);
    if (g_nstreams == g_streams_cap) {
        size_t cap = g_streams_cap ? 2 * g_streams_cap : 16;
        sim_stream **grown = realloc(g_streams, cap * sizeof *grown);
        if (grown == NULL) {
            pthread_mutex_unlock(&g_streams_lock);
            return acl_fail(ACL_ERROR_BAD_ALLOC, "aclrtCreateStream: out of memory");
        }
        g_streams = grown;
        g_streams_cap = cap;
    }
    sim_stream *s = sim->stream_create();
    if (s == NULL) {
        pthread_mutex_unlock(&g_streams_lock);
        return acl_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtCreateStream: %s", sim->last_error());
    }
    g_streams[g_nstreams++] = s;
    pthread_mutex_unlock(&g_streams_lock);
    acl_live_add(OPBUILD_ACL_STREAM, 1);
    *stream = s;
    return ACL_SUCCESS;
}

aclError aclrtDestroyStream(aclrtStream stream) {
    if (stream == NULL) return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream: stream is a null pointer");
    REQUIRE_SIM(sim);
    pthread_mutex_lock(&g_streams_lock);
    int i = stream_index_locked(stream);
    if (i >= 0) g_streams[i] = g_streams[--g_nstreams];
    pthread_mutex_unlock(&g_streams_lock);
    if (i < 0)
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream: %p is not a live stream of aclrtCreateStream",
                        stream);
    acl_live_add(OPBUILD_ACL_STREAM, -1);
    char err[SIM_ERROR_LEN];
    int rc = sim->stream_destroy(stream, err, sizeof err);
    if (rc) return acl_fail(sim_code_to_acl(rc), "aclrtDestroyStream: work on the stream failed: %s", err);
    return ACL_SUCCESS;
}

static aclError sync_stream(const sim_api *sim, sim_stream *s, const char *api) {
    char err[SIM_ERROR_LEN];
    int rc = sim->stream_synchronize(s, err, sizeof err);
    if (rc) return acl_fail(sim_code_to_acl(rc), "%s: %s", api, err);
    return ACL_SUCCESS;
}

/* Synchronizing and destroying the same stream concurrently is a caller error, as in CANN: the
 * registry lock is not held while waiting (a host function on a stream may need the GIL, whose
 * holder may be validating a stream). */
aclError aclrtSynchronizeStream(aclrtStream stream) {
    if (stream == NULL) return ACL_SUCCESS; /* the default stream is synchronous */
    REQUIRE_SIM(sim);
    if (!acl_stream_is_live(stream))
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtSynchronizeStream: %p is not a live stream of aclrtCreateStream",
                        stream);
    return sync_stream(sim, stream, "aclrtSynchronizeStream");
}

aclError aclrtSynchronizeDevice(void) {
    REQUIRE_SIM(sim);
    pthread_mutex_lock(&g_streams_lock);
    size_t n = g_nstreams;
    sim_stream **copy = n ? malloc(n * sizeof *copy) : NULL;
    if (copy != NULL) memcpy(copy, g_streams, n * sizeof *copy);
    pthread_mutex_unlock(&g_streams_lock);
    if (n && copy == NULL) return acl_fail(ACL_ERROR_BAD_ALLOC, "aclrtSynchronizeDevice: out of memory");
    aclError first = ACL_SUCCESS;
    for (size_t i = 0; i < n; i++) {
        aclError rc = sync_stream(sim, copy[i], "aclrtSynchronizeDevice");
        if (rc != ACL_SUCCESS && first == ACL_SUCCESS) first = rc;
    }
    free(copy);
    return first;
}

/* ---- memory --------------------------------------------------------------------------------- */

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
    if (devPtr == NULL) return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: devPtr is a null pointer");
    if (size == 0) return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: size must be greater than 0");
    if ((int)policy < ACL_MEM_MALLOC_HUGE_FIRST || (int)policy > ACL_MEM_MALLOC_NORMAL_ONLY_P2P)
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: unknown aclrtMemMallocPolicy %d", (int)policy);
    REQUIRE_SIM(sim);
    void *p = sim->malloc_(size);
    if (p == NULL) return acl_fail(ACL_ERROR_BAD_ALLOC, "aclrtMalloc: cannot allocate %zu bytes: %s", size,
                                   sim->last_error());
    *devPtr = p;
    return ACL_SUCCESS;
}

static const sim_api *loaded_sim(void) {
    static const sim_api *loaded; /* (acl_sim once: its pthread_once is not free on a cache hit) */
    const sim_api *sim = __atomic_load_n(&loaded, __ATOMIC_ACQUIRE);
    if (sim == NULL) {
        sim = acl_sim();
        __atomic_store_n(&loaded, sim, __ATOMIC_RELEASE);
    }
    return sim;
}

const uint64_t *acl_device_generation_counter;

uint64_t acl_device_generation_slow(void) {
    const sim_api *sim = loaded_sim();
    if (sim == NULL) return 0;
    const uint64_t *c = sim->allocation_generation();
    __atomic_store_n(&acl_device_generation_counter, c, __ATOMIC_RELEASE);
    return __atomic_load_n(c, __ATOMIC_ACQUIRE);
}

int acl_device_room(const void *ptr, uint64_t *room) {
    const sim_api *sim = loaded_sim();
    uint64_t start, size;
    if (sim == NULL || !sim->allocation(ptr, &start, &size)) return 0;
    *room = size - ((uintptr_t)ptr - start);
    return 1;
}

aclError aclrtFree(void *devPtr) {
    if (devPtr == NULL) return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtFree: devPtr is a null pointer");
    REQUIRE_SIM(sim);
    if (sim->free_(devPtr) != SIM_OK)
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtFree: %p was not allocated by aclrtMalloc, or was freed already",
                        devPtr);
    return ACL_SUCCESS;
}

aclError aclrtMallocHost(void **hostPtr, size_t size) {
    if (hostPtr == NULL) return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtMallocHost: hostPtr is a null pointer");
    if (size == 0) return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtMallocHost: size must be greater than 0");
    void *p = NULL;
    if (posix_memalign(&p, 64, size) != 0)
        return acl_fail(ACL_ERROR_BAD_ALLOC, "aclrtMallocHost: cannot allocate %zu bytes", size);
    acl_live_add(OPBUILD_ACL_HOST_MEM, 1);
    *hostPtr = p;
    return ACL_SUCCESS;
}

aclError aclrtFreeHost(void *hostPtr) {
    if (hostPtr == NULL) return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtFreeHost: hostPtr is a null pointer");
    free(hostPtr);
    acl_live_add(OPBUILD_ACL_HOST_MEM, -1);
    return ACL_SUCCESS;
}

static aclError check_copy(const char *api, void *dst, size_t destMax, const void *src, size_t count,
                           aclrtMemcpyKind kind) {
    if ((int)kind < ACL_MEMCPY_HOST_TO_HOST || (int)kind > ACL_MEMCPY_DEFAULT)
        return acl_fail(ACL_ERROR_INVALID_PARAM, "%s: unknown aclrtMemcpyKind %d", api, (int)kind);
    if (count > destMax)
        return acl_fail(ACL_ERROR_INVALID_PARAM, "%s: count %zu is larger than destMax %zu", api, count, destMax);
    if (count > 0 && (dst == NULL || src == NULL))
        return acl_fail(ACL_ERROR_INVALID_PARAM, "%s: %s is a null pointer", api, dst == NULL ? "dst" : "src");
    return ACL_SUCCESS;
}

aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind) {
    aclError rc = check_copy("aclrtMemcpy", dst, destMax, src, count, kind);
    if (rc != ACL_SUCCESS) return rc;
    if (count) memmove(dst, src, count);
    return ACL_SUCCESS;
}

typedef struct copy_task {
    void *dst;
    const void *src;
    size_t count;
} copy_task;

static void run_copy_task(void *arg) {
    copy_task *t = arg;
    memmove(t->dst, t->src, t->count);
    free(t);
}

aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream) {
    aclError rc = check_copy("aclrtMemcpyAsync", dst, destMax, src, count, kind);
    if (rc != ACL_SUCCESS) return rc;
    if (stream == NULL || count == 0) {
        if (count) memmove(dst, src, count);
        return ACL_SUCCESS;
    }
    REQUIRE_SIM(sim);
    copy_task *t = malloc(sizeof *t);
    if (t == NULL) return acl_fail(ACL_ERROR_BAD_ALLOC, "aclrtMemcpyAsync: out of memory");
    t->dst = dst;
    t->src = src;
    t->count = count;
    pthread_mutex_lock(&g_streams_lock);
    int live = stream_index_locked(stream) >= 0;
    int code = live ? sim->stream_enqueue_host(stream, run_copy_task, t) : SIM_EINVAL;
    pthread_mutex_unlock(&g_streams_lock);
    if (code != SIM_OK) {
        free(t);
        if (!live)
            return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtMemcpyAsync: %p is not a live stream of aclrtCreateStream",
                            stream);
        return acl_fail(sim_code_to_acl(code), "aclrtMemcpyAsync: %s", sim->last_error());
    }
    return ACL_SUCCESS;
}

aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count) {
    if (devPtr == NULL) return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtMemset: devPtr is a null pointer");
    if (count > maxCount)
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtMemset: count %zu is larger than maxCount %zu", count, maxCount);
    memset(devPtr, (int)(value & 0xff), count);
    return ACL_SUCCESS;
}
