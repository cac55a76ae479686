/* sim.c: the opbuild device simulator (see sim.h for the model). C11 + pthreads. */
#define _GNU_SOURCE
#include "sim.h"
#include "sim_internal.h"
#include "opbuild/aicpu.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <time.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SIM_STACK_SIZE ((size_t)8 << 20) /* kernels may keep UB-sized buffers on the stack */
#define SIM_NO_BLOCK UINT32_MAX

/* ---- errors ------------------------------------------------------------------------------- */

static __thread char last_error[SIM_ERROR_LEN];

SIM_API uint32_t sim_abi_version(void) { return SIM_ABI_VERSION; }
SIM_API const char *sim_last_error(void) { return last_error; }

SIM_HIDDEN void copy_msg(char *dst, uint32_t dstlen, const char *msg) {
    if (!dst || dstlen == 0) return;
    size_t n = strlen(msg);
    if (n >= dstlen) n = dstlen - 1;
    memcpy(dst, msg, n);
    dst[n] = '\0';
}

/* Record `msg` as this thread's last error and in err; returns code. */
static int report(int code, char *err, uint32_t errlen, const char *msg) {
    if (msg != last_error) copy_msg(last_error, SIM_ERROR_LEN, msg);
    copy_msg(err, errlen, msg);
    return code;
}

static int reportf(int code, char *err, uint32_t errlen, const char *fmt, ...) {
    char buf[SIM_ERROR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return report(code, err, errlen, buf);
}

static int start_thread(pthread_t *tid, void *(*fn)(void *), void *arg, int detached) {
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) return -1;
    pthread_attr_setstacksize(&attr, SIM_STACK_SIZE);
    if (detached) pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(tid, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    return rc;
}

/* ---- device memory ------------------------------------------------------------------------ */

#define SIM_MEM_MAGIC 0x4f50425344455631ull /* "OPBSDEV1" */
#define SIM_MEM_FREED 0x4f50425346524545ull /* "OPBSFREE" */

typedef struct mem_header {
    uint64_t magic;
    uint64_t size;
    void *base;
} mem_header;

/* Launches abandoned by an interrupt whose blocks still run on other threads. */
static atomic_uint abandoned_launches;

static atomic_uint_fast64_t mem_in_use;
static atomic_uint_fast64_t mem_peak;
static atomic_uint_fast64_t mem_blocks;

/* The live allocations as address ranges sorted by start, so that a pointer anywhere inside one
 * finds it (sim_allocation): what lets the acl layer check a tensor's storage against the buffer
 * aclrtMalloc handed out. Inserts and removals are O(n) moves; lookups a binary search under a
 * read lock. */
typedef struct mem_range {
    uintptr_t start;
    uint64_t size;
} mem_range;

static pthread_rwlock_t ranges_lock = PTHREAD_RWLOCK_INITIALIZER;
static mem_range *ranges;
static size_t ranges_len, ranges_cap;
/* Bumped by every insert and removal (under the write lock): a thread's hints of an older
 * generation are stale. */
static _Atomic uint64_t ranges_gen = 1;

/* What a thread learnt from its recent lookups: [lo, hi) is one allocation (`found`) or a gap
 * between two (none there), true at generation `gen`. A hit of the aclnn C ABI checks the same
 * few tensors call after call: answered from here without the lock. */
typedef struct range_hint {
    uintptr_t lo, hi;
    uint64_t gen;
    uint64_t size; /* the allocation's size (found) */
    int found;
} range_hint;
#define RANGE_HINTS 4
static __thread range_hint range_hints[RANGE_HINTS] __attribute__((tls_model("initial-exec")));
static __thread unsigned range_hint_next __attribute__((tls_model("initial-exec")));

/* The index of the first range starting above `addr` (caller holds ranges_lock). */
static size_t ranges_upper(uintptr_t addr) {
    size_t lo = 0, hi = ranges_len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ranges[mid].start <= addr) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static int ranges_add(uintptr_t start, uint64_t size) {
    pthread_rwlock_wrlock(&ranges_lock);
    if (ranges_len == ranges_cap) {
        size_t cap = ranges_cap ? 2 * ranges_cap : 256;
        mem_range *grown = realloc(ranges, cap * sizeof *grown);
        if (grown == NULL) {
            pthread_rwlock_unlock(&ranges_lock);
            return -1;
        }
        ranges = grown;
        ranges_cap = cap;
    }
    size_t at = ranges_upper(start);
    memmove(ranges + at + 1, ranges + at, (ranges_len - at) * sizeof *ranges);
    ranges[at] = (mem_range){start, size};
    ranges_len++;
    atomic_fetch_add_explicit(&ranges_gen, 1, memory_order_release);
    pthread_rwlock_unlock(&ranges_lock);
    return 0;
}

static void ranges_remove(uintptr_t start) {
    pthread_rwlock_wrlock(&ranges_lock);
    size_t at = ranges_upper(start);
    if (at > 0 && ranges[at - 1].start == start) {
        memmove(ranges + at - 1, ranges + at, (ranges_len - at) * sizeof *ranges);
        ranges_len--;
        atomic_fetch_add_explicit(&ranges_gen, 1, memory_order_release);
    }
    pthread_rwlock_unlock(&ranges_lock);
}

/* The bytes an allocation owns: a 0-byte allocation owns its one address (its pointer is unique). */
static uint64_t range_extent(const mem_range *r) { return r->size ? r->size : 1; }

SIM_API const uint64_t *sim_allocation_generation(void) { return (const uint64_t *)&ranges_gen; }

SIM_API int sim_allocation(const void *ptr, uint64_t *start, uint64_t *size) {
    uintptr_t addr = (uintptr_t)ptr;
    uint64_t gen = atomic_load_explicit(&ranges_gen, memory_order_acquire);
    for (unsigned i = 0; i < RANGE_HINTS; ++i) {
        const range_hint *h = &range_hints[i];
        if (h->gen == gen && addr >= h->lo && addr < h->hi) {
            if (!h->found) return 0;
            if (start) *start = h->lo;
            if (size) *size = h->size;
            return 1;
        }
    }
    range_hint learnt = {0, UINTPTR_MAX, 0, 0, 0};
    pthread_rwlock_rdlock(&ranges_lock);
    learnt.gen = atomic_load_explicit(&ranges_gen, memory_order_relaxed);
    size_t at = ranges_upper(addr);
    if (at < ranges_len) learnt.hi = ranges[at].start;
    if (at > 0) {
        const mem_range *r = &ranges[at - 1];
        if (addr - r->start < range_extent(r)) {
            learnt = (range_hint){r->start, r->start + range_extent(r), learnt.gen, r->size, 1};
            if (start) *start = r->start;
            if (size) *size = r->size;
        } else {
            learnt.lo = r->start + range_extent(r);
        }
    }
    pthread_rwlock_unlock(&ranges_lock);
    range_hints[range_hint_next++ % RANGE_HINTS] = learnt;
    return learnt.found;
}

SIM_API void *sim_malloc(size_t size) {
    if (size > SIZE_MAX - SIM_MEM_ALIGN) {
        reportf(SIM_ENOMEM, NULL, 0, "sim_malloc: %zu bytes is too large", size);
        return NULL;
    }
    void *base = NULL;
    int rc = posix_memalign(&base, SIM_MEM_ALIGN, SIM_MEM_ALIGN + size);
    if (rc != 0 || base == NULL) {
        reportf(SIM_ENOMEM, NULL, 0, "sim_malloc: out of memory allocating %zu bytes", size);
        return NULL;
    }
    uint8_t *user = (uint8_t *)base + SIM_MEM_ALIGN;
    if (ranges_add((uintptr_t)user, size) != 0) {
        free(base);
        reportf(SIM_ENOMEM, NULL, 0, "sim_malloc: out of memory recording an allocation of %zu bytes", size);
        return NULL;
    }
    mem_header *h = (mem_header *)(user - sizeof(mem_header));
    h->magic = SIM_MEM_MAGIC;
    h->size = size;
    h->base = base;
    uint64_t now = atomic_fetch_add(&mem_in_use, size) + size;
    uint64_t peak = atomic_load(&mem_peak);
    while (now > peak && !atomic_compare_exchange_weak(&mem_peak, &peak, now)) {
    }
    atomic_fetch_add(&mem_blocks, 1);
    return user;
}

SIM_API int sim_free(void *ptr) {
    if (ptr == NULL) return SIM_OK;
    if ((uintptr_t)ptr % SIM_MEM_ALIGN != 0)
        return reportf(SIM_EINVAL, NULL, 0, "sim_free: %p is not a device pointer (not %u-byte aligned)", ptr,
                       SIM_MEM_ALIGN);
    mem_header *h = (mem_header *)((uint8_t *)ptr - sizeof(mem_header));
    if (h->magic == SIM_MEM_FREED)
        return reportf(SIM_EINVAL, NULL, 0, "sim_free: %p was freed already", ptr);
    if (h->magic != SIM_MEM_MAGIC || (uint8_t *)h->base + SIM_MEM_ALIGN != (uint8_t *)ptr)
        return reportf(SIM_EINVAL, NULL, 0, "sim_free: %p was not allocated by sim_malloc", ptr);
    h->magic = SIM_MEM_FREED;
    ranges_remove((uintptr_t)ptr);
    atomic_fetch_sub(&mem_in_use, h->size);
    atomic_fetch_sub(&mem_blocks, 1);
    if (atomic_load_explicit(&abandoned_launches, memory_order_relaxed))
        return SIM_OK; /* an interrupted launch may still write it: never reused (leaked) */
    free(h->base);
    return SIM_OK;
}

SIM_API void sim_free_host_fn(void *ptr) { (void)sim_free(ptr); }
SIM_API uint64_t sim_mem_in_use(void) { return atomic_load(&mem_in_use); }
SIM_API uint64_t sim_mem_peak(void) { return atomic_load(&mem_peak); }
SIM_API uint64_t sim_mem_blocks(void) { return atomic_load(&mem_blocks); }

/* ---- crash reports ------------------------------------------------------------------------ */

SIM_HIDDEN __thread current_block cur __attribute__((tls_model("initial-exec")));

#define SIM_MAX_LABELS 4096u
static struct {
    opbuild_kernel_launch_fn fn;
    char label[SIM_LABEL_LEN];
    char args[SIM_LABEL_LEN];
} labels[SIM_MAX_LABELS];
static atomic_uint nlabels;
static pthread_mutex_t labels_mu = PTHREAD_MUTEX_INITIALIZER;

/* The entry of fn (added if new and add is set), or -1. */
static int label_slot(opbuild_kernel_launch_fn fn, int add) {
    unsigned n = atomic_load_explicit(&nlabels, memory_order_acquire);
    for (unsigned i = 0; i < n; ++i)
        if (labels[i].fn == fn) return (int)i;
    if (!add || n >= SIM_MAX_LABELS) return -1;
    labels[n].fn = fn;
    atomic_store_explicit(&nlabels, n + 1, memory_order_release);
    return (int)n;
}

SIM_API int sim_register_kernel(opbuild_kernel_launch_fn fn, const char *label) {
    if (!fn || !label) return report(SIM_EINVAL, NULL, 0, "sim_register_kernel: NULL kernel or label");
    pthread_mutex_lock(&labels_mu);
    int i = label_slot(fn, 1);
    if (i >= 0 && !labels[i].label[0]) copy_msg(labels[i].label, SIM_LABEL_LEN, label);
    pthread_mutex_unlock(&labels_mu);
    return SIM_OK;
}

SIM_API int sim_register_kernel_args(opbuild_kernel_launch_fn fn, const char *names) {
    if (!fn || !names) return report(SIM_EINVAL, NULL, 0, "sim_register_kernel_args: NULL kernel or names");
    pthread_mutex_lock(&labels_mu);
    int i = label_slot(fn, 1);
    if (i >= 0) copy_msg(labels[i].args, SIM_LABEL_LEN, names);
    pthread_mutex_unlock(&labels_mu);
    return SIM_OK;
}

SIM_HIDDEN const char *kernel_label(opbuild_kernel_launch_fn fn) {
    int i = label_slot(fn, 0);
    return i >= 0 && labels[i].label[0] ? labels[i].label : NULL;
}

SIM_HIDDEN const char *kernel_arg_names(opbuild_kernel_launch_fn fn) {
    int i = label_slot(fn, 0);
    return i >= 0 && labels[i].args[0] ? labels[i].args : NULL;
}

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define N_FATAL (sizeof fatal_signals / sizeof fatal_signals[0])
static struct sigaction previous_action[N_FATAL];

/* Async-signal-safe formatting into buf[*n..SIM_ERROR_LEN). */
static void put_str(char *buf, size_t *n, const char *s) {
    while (*s && *n < SIM_ERROR_LEN - 2) buf[(*n)++] = *s++;
}

static void put_num(char *buf, size_t *n, uint64_t v, unsigned base) {
    char tmp[24];
    int k = 0;
    do {
        tmp[k++] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v);
    while (k && *n < SIM_ERROR_LEN - 2) buf[(*n)++] = tmp[--k];
}

SIM_HIDDEN const char *signal_name(int sig) {
    switch (sig) {
    case SIGSEGV: return "SIGSEGV (invalid memory access)";
    case SIGBUS: return "SIGBUS (bus error)";
    case SIGFPE: return "SIGFPE (arithmetic error)";
    case SIGILL: return "SIGILL (illegal instruction)";
    case SIGABRT: return "SIGABRT (abort)";
    default: return "a fatal signal";
    }
}

static void on_fatal_signal(int sig, siginfo_t *info, void *uctx) {
    (void)uctx;
    int saved_errno = errno;
    opbuild_kernel_launch_fn fn = cur.fn;
    if (fn) {
        char line[SIM_ERROR_LEN];
        size_t n = 0;
        const char *label = kernel_label(fn);
        put_str(line, &n, "opbuild: kernel crashed: ");
        if (label) {
            put_str(line, &n, label);
        } else {
            put_str(line, &n, "unregistered kernel at 0x");
            put_num(line, &n, (uint64_t)(uintptr_t)fn, 16);
        }
        put_str(line, &n, ", block ");
        put_num(line, &n, cur.idx, 10);
        put_str(line, &n, " of ");
        put_num(line, &n, cur.block_dim, 10);
        put_str(line, &n, ": ");
        put_str(line, &n, signal_name(sig));
        if (sig != SIGABRT && info && info->si_code > 0) {
            put_str(line, &n, " at address 0x");
            put_num(line, &n, (uint64_t)(uintptr_t)info->si_addr, 16);
        }
        line[n++] = '\n';
        ssize_t w = write(STDERR_FILENO, line, n);
        (void)w;
        cur.fn = NULL; /* one line per thread, even if the previous action returns here */
    }
    /* Hand the signal to what was there before (Python's faulthandler, or the default action:
     * the process dies as it would have without opbuild). */
    for (size_t i = 0; i < N_FATAL; ++i)
        if (fatal_signals[i] == sig) sigaction(sig, &previous_action[i], NULL);
    if (sig == SIGABRT || !info || info->si_code <= 0) raise(sig); /* sent, not a fault: send again */
    errno = saved_errno;                                           /* a fault: it recurs on return */
}

static void install_fatal_handlers(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < N_FATAL; ++i) sigaction(fatal_signals[i], &sa, &previous_action[i]);
}

/* A signal stack for this thread, so that a kernel's stack overflow is reported too. */
static void ensure_altstack(void) {
    if (cur.altstack) return;
    cur.altstack = 1;
    stack_t old;
    if (sigaltstack(NULL, &old) == 0 && !(old.ss_flags & SS_DISABLE)) return; /* has one (faulthandler) */
    size_t size = 64 * 1024;
    stack_t st = {.ss_sp = malloc(size), .ss_size = size, .ss_flags = 0};
    if (st.ss_sp && sigaltstack(&st, NULL) != 0) {
        free(st.ss_sp);
        st.ss_sp = NULL;
    }
    cur.altstack_mem = st.ss_sp;
}

/* Before a simulator thread exits: give its signal stack back. */
static void release_altstack(void) {
    if (!cur.altstack_mem) return;
    stack_t off = {.ss_flags = SS_DISABLE};
    sigaltstack(&off, NULL);
    free(cur.altstack_mem);
    cur.altstack_mem = NULL;
    cur.altstack = 0;
}

/* ---- running one block -------------------------------------------------------------------- */

/* Sync context given to kernels launched without intercore_sync: SyncAll there is a bug (the
 * blocks are not concurrent), reported as an error of the block instead of being ignored. */
typedef struct misuse_flag {
    int called;
} misuse_flag;

static void sync_misuse(void *ctx) { ((misuse_flag *)ctx)->called = 1; }

/* ---- block timing (sim_profile_blocks) ---------------------------------------------------- */

#define PROF_MAX_RECORDS ((size_t)1 << 20)

static int g_prof_on;
static pthread_mutex_t g_prof_lock = PTHREAD_MUTEX_INITIALIZER;
static sim_block_time *g_prof_buf;
static size_t g_prof_n, g_prof_cap;
static uint64_t g_prof_dropped;
static __thread uint32_t prof_tid;

static int64_t prof_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void prof_note(opbuild_kernel_launch_fn fn, uint32_t idx, int64_t start, int64_t end) {
    if (prof_tid == 0) prof_tid = (uint32_t)gettid();
    pthread_mutex_lock(&g_prof_lock);
    if (g_prof_n == g_prof_cap && g_prof_cap < PROF_MAX_RECORDS) {
        size_t cap = g_prof_cap ? g_prof_cap * 2 : 1024;
        sim_block_time *b = realloc(g_prof_buf, cap * sizeof *b);
        if (b != NULL) {
            g_prof_buf = b;
            g_prof_cap = cap;
        }
    }
    if (g_prof_n < g_prof_cap)
        g_prof_buf[g_prof_n++] = (sim_block_time){(uint64_t)(uintptr_t)fn, idx, prof_tid, start, end};
    else
        g_prof_dropped++;
    pthread_mutex_unlock(&g_prof_lock);
}

SIM_API void sim_profile_blocks(int on) { __atomic_store_n(&g_prof_on, on ? 1 : 0, __ATOMIC_RELAXED); }

SIM_API size_t sim_profile_take(sim_block_time *out, size_t max) {
    pthread_mutex_lock(&g_prof_lock);
    size_t n = g_prof_n < max ? g_prof_n : max;
    if (n) {
        memcpy(out, g_prof_buf, n * sizeof *out);
        memmove(g_prof_buf, g_prof_buf + n, (g_prof_n - n) * sizeof *out);
        g_prof_n -= n;
    }
    pthread_mutex_unlock(&g_prof_lock);
    return n;
}

SIM_API uint64_t sim_profile_dropped(void) {
    pthread_mutex_lock(&g_prof_lock);
    uint64_t n = g_prof_dropped;
    pthread_mutex_unlock(&g_prof_lock);
    return n;
}

/* Runs block idx; returns 0, or nonzero with the block's message in kerr[OPBUILD_KERNEL_ERROR_LEN]. */
static int run_block(opbuild_kernel_launch_fn fn, void *const *args, uint32_t nargs, uint32_t idx,
                     uint32_t block_dim, opbuild_sync_all_fn sync, void *sync_ctx, char *kerr) {
    misuse_flag misuse = {0};
    if (sync == NULL) {
        sync = sync_misuse;
        sync_ctx = &misuse;
    }
    char note[OPBUILD_KERNEL_ERROR_LEN];
    note[0] = '\0';
    kerr[0] = '\0';
    if (!cur.altstack) ensure_altstack();
    cur.note = note;
    cur.idx = idx;
    cur.block_dim = block_dim;
    cur.args = args;
    cur.nargs = nargs;
    cur.fn = fn;
    int64_t t0 = __builtin_expect(__atomic_load_n(&g_prof_on, __ATOMIC_RELAXED) != 0, 0) ? prof_now() : 0;
    atomic_signal_fence(memory_order_seq_cst);
    int32_t rc = fn(args, nargs, idx, block_dim, sync, sync_ctx, kerr, OPBUILD_KERNEL_ERROR_LEN);
    atomic_signal_fence(memory_order_seq_cst);
    if (t0) prof_note(fn, idx, t0, prof_now());
    cur.fn = NULL;
    cur.note = NULL;
    kerr[OPBUILD_KERNEL_ERROR_LEN - 1] = '\0';
    if (note[0]) { /* the memory checker's report (sim_isolate.c) */
        copy_msg(kerr, OPBUILD_KERNEL_ERROR_LEN, note);
        return 1;
    }
    if (rc != 0) {
        if (kerr[0] == '\0') snprintf(kerr, OPBUILD_KERNEL_ERROR_LEN, "kernel failed with status %d", (int)rc);
        return 1;
    }
    if (misuse.called) {
        snprintf(kerr, OPBUILD_KERNEL_ERROR_LEN,
                 "SyncAll() called by a kernel launched without intercore_sync "
                 "(set kernel.intercore_sync: true in the op spec)");
        return 1;
    }
    return 0;
}

/* Lowest failing block of a launch. Callers serialise access. */
typedef struct failure {
    uint32_t idx;
    char msg[OPBUILD_KERNEL_ERROR_LEN];
} failure;

static void failure_note(failure *f, uint32_t idx, const char *msg) {
    if (idx < f->idx) {
        f->idx = idx;
        copy_msg(f->msg, sizeof f->msg, msg);
    }
}

static int failure_report(const failure *f, char *msg) {
    if (f->idx == SIM_NO_BLOCK) return SIM_OK;
    snprintf(msg, SIM_ERROR_LEN, "block %u: %s", f->idx, f->msg);
    return SIM_EKERNEL;
}

/* ---- thread pool (kernels without inter-core sync) ------------------------------------------ */

typedef struct pool_job {
    opbuild_kernel_launch_fn fn;
    void *const *args;
    uint32_t nargs;
    uint32_t block_dim;
    atomic_uint_fast64_t next; /* next block to claim */
    uint32_t refs;             /* workers attached (pool.mu) */
    int queued;                /* in the pool queue (pool.mu) */
    struct pool_job *prev, *nextjob;
    pthread_cond_t cv; /* with pool.mu: refs reached 0 */
    failure fail;      /* pool.mu */
    int abandoned;     /* pool.mu: the caller left (interrupt); the last worker frees the job */
    void *argv[];      /* the launch arguments (copied: an abandoned job outlives the caller's) */
} pool_job;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* work available or shutdown */
    pool_job *head, *tail;
    pthread_t *workers;
    uint32_t nworkers;
    int shutdown;
    atomic_int ready;      /* workers started (with nthreads) */
    uint32_t requested;    /* sim_set_threads value, 0 = default */
    uint32_t nthreads;     /* size of the running pool */
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* Serialises pool creation and sim_set_threads. */
static pthread_mutex_t config_mu = PTHREAD_MUTEX_INITIALIZER;

static uint32_t cpu_count(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    if (n > (long)SIM_MAX_THREADS) n = SIM_MAX_THREADS;
    return (uint32_t)n;
}

/* The size a new pool would get; 0 with msg set when OPBUILD_SIM_THREADS is invalid. */
static uint32_t wanted_threads(char *msg) {
    if (pool.requested) return pool.requested;
    const char *env = getenv(OPBUILD_ENV_SIM_THREADS);
    if (env && *env) {
        char *end = NULL;
        errno = 0;
        unsigned long v = strtoul(env, &end, 10);
        if (errno || end == env || *end != '\0' || v < 1 || v > SIM_MAX_THREADS || env[0] == '-') {
            if (msg)
                snprintf(msg, SIM_ERROR_LEN, "OPBUILD_SIM_THREADS='%.64s' is not an integer in 1..%u", env,
                         SIM_MAX_THREADS);
            return 0;
        }
        return (uint32_t)v;
    }
    return cpu_count();
}

static void pool_unlink(pool_job *j) {
    if (!j->queued) return;
    if (j->prev) j->prev->nextjob = j->nextjob; else pool.head = j->nextjob;
    if (j->nextjob) j->nextjob->prev = j->prev; else pool.tail = j->prev;
    j->prev = j->nextjob = NULL;
    j->queued = 0;
}

/* Claim and run blocks of j until none is left. */
static void pool_work(pool_job *j) {
    char kerr[OPBUILD_KERNEL_ERROR_LEN];
    for (;;) {
        uint64_t b = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (b >= j->block_dim) return;
        if (run_block(j->fn, j->args, j->nargs, (uint32_t)b, j->block_dim, NULL, NULL, kerr)) {
            pthread_mutex_lock(&pool.mu);
            failure_note(&j->fail, (uint32_t)b, kerr);
            pthread_mutex_unlock(&pool.mu);
        }
    }
}

static void *pool_worker(void *unused) {
    (void)unused;
    pthread_mutex_lock(&pool.mu);
    for (;;) {
        while (!pool.shutdown && pool.head == NULL) pthread_cond_wait(&pool.cv, &pool.mu);
        if (pool.shutdown) break;
        pool_job *j = pool.head;
        j->refs++;
        pthread_mutex_unlock(&pool.mu);
        pool_work(j);
        pthread_mutex_lock(&pool.mu);
        pool_unlink(j); /* every block is claimed */
        if (--j->refs == 0) {
            if (j->abandoned) {
                pthread_cond_destroy(&j->cv);
                free(j);
                atomic_fetch_sub(&abandoned_launches, 1);
            } else {
                pthread_cond_signal(&j->cv);
            }
        }
    }
    pthread_mutex_unlock(&pool.mu);
    release_altstack();
    return NULL;
}

/* Stop the workers (pool.ready becomes 0). Caller holds config_mu. Jobs still queued are finished
 * by their callers, which always help. */
static void pool_stop_locked(void) {
    if (!atomic_load(&pool.ready)) return;
    pthread_mutex_lock(&pool.mu);
    pool.shutdown = 1;
    pthread_cond_broadcast(&pool.cv);
    pthread_mutex_unlock(&pool.mu);
    for (uint32_t i = 0; i < pool.nworkers; ++i) pthread_join(pool.workers[i], NULL);
    free(pool.workers);
    pthread_mutex_lock(&pool.mu);
    pool.workers = NULL;
    __atomic_store_n(&pool.nworkers, 0, __ATOMIC_RELAXED);
    pool.shutdown = 0;
    atomic_store(&pool.ready, 0);
    pthread_mutex_unlock(&pool.mu);
}

static int pool_ensure(char *msg) {
    if (atomic_load_explicit(&pool.ready, memory_order_acquire)) return SIM_OK;
    int rc = SIM_OK;
    pthread_mutex_lock(&config_mu);
    if (!atomic_load(&pool.ready)) {
        uint32_t n = wanted_threads(msg);
        if (n == 0) {
            rc = SIM_EINVAL;
        } else {
            pthread_t *w = n > 1 ? calloc(n - 1, sizeof *w) : NULL;
            uint32_t started = 0;
            if (n > 1 && !w) {
                snprintf(msg, SIM_ERROR_LEN, "out of memory creating the thread pool");
                rc = SIM_ENOMEM;
            }
            for (; rc == SIM_OK && started < n - 1; ++started) {
                int e = start_thread(&w[started], pool_worker, NULL, 0);
                if (e != 0) {
                    snprintf(msg, SIM_ERROR_LEN, "cannot start simulator thread %u of %u: %s", started + 1, n,
                             strerror(e));
                    rc = SIM_ENOMEM;
                    break;
                }
            }
            pthread_mutex_lock(&pool.mu);
            pool.workers = w;
            __atomic_store_n(&pool.nworkers, started, __ATOMIC_RELAXED);
            pool.nthreads = n;
            pthread_mutex_unlock(&pool.mu);
            atomic_store_explicit(&pool.ready, 1, memory_order_release);
            if (rc != SIM_OK) pool_stop_locked();
        }
    }
    pthread_mutex_unlock(&config_mu);
    return rc;
}

SIM_API int sim_set_threads(uint32_t n) {
    if (n > SIM_MAX_THREADS)
        return reportf(SIM_EINVAL, NULL, 0, "sim_set_threads: %u threads is more than the maximum %u", n,
                       SIM_MAX_THREADS);
    pthread_mutex_lock(&config_mu);
    pool_stop_locked();
    pool.requested = n;
    pthread_mutex_unlock(&config_mu);
    return SIM_OK;
}

SIM_API uint32_t sim_threads(void) {
    pthread_mutex_lock(&config_mu);
    uint32_t n = atomic_load(&pool.ready) ? pool.nthreads : wanted_threads(NULL);
    pthread_mutex_unlock(&config_mu);
    return n;
}

SIM_HIDDEN int run_inline(opbuild_kernel_launch_fn fn, void *const *args, uint32_t nargs, uint32_t block_dim,
                      char *msg) {
    char kerr[OPBUILD_KERNEL_ERROR_LEN];
    failure f;
    f.idx = SIM_NO_BLOCK; /* msg is written with the first failure (no 256-byte clear per launch) */
    for (uint32_t b = 0; b < block_dim; ++b)
        if (run_block(fn, args, nargs, b, block_dim, NULL, NULL, kerr)) failure_note(&f, b, kerr);
    return failure_report(&f, msg);
}

/* The caller leaves job j (an interrupt): no more blocks are claimed, workers still running
 * blocks finish them and the last one frees j. Caller holds pool.mu. */
static void pool_abandon_locked(pool_job *j) {
    pool_unlink(j);
    atomic_store(&j->next, j->block_dim);
    if (j->refs == 0) {
        pthread_cond_destroy(&j->cv);
        free(j);
    } else {
        j->abandoned = 1;
        atomic_fetch_add(&abandoned_launches, 1);
    }
}

static int interrupted_msg(char *msg) {
    snprintf(msg, SIM_ERROR_LEN, "launch interrupted (SIGINT); blocks still running were abandoned");
    return SIM_EINTR;
}

SIM_HIDDEN atomic_int interrupt_requested;

static int run_pool(opbuild_kernel_launch_fn fn, void *const *args, uint32_t nargs, uint32_t block_dim,
                    char *msg) {
    int rc = pool_ensure(msg);
    if (rc != SIM_OK) return rc;
    uint32_t workers = __atomic_load_n(&pool.nworkers, __ATOMIC_RELAXED);
    if (workers == 0) return run_inline(fn, args, nargs, block_dim, msg);

    pool_job *j = calloc(1, sizeof *j + (size_t)nargs * sizeof(void *));
    if (!j) {
        snprintf(msg, SIM_ERROR_LEN, "out of memory launching %u blocks", block_dim);
        return SIM_ENOMEM;
    }
    if (nargs) memcpy(j->argv, args, (size_t)nargs * sizeof(void *));
    j->fn = fn;
    j->args = j->argv;
    j->nargs = nargs;
    j->block_dim = block_dim;
    atomic_init(&j->next, 0);
    j->fail.idx = SIM_NO_BLOCK;
    pthread_cond_init(&j->cv, NULL);

    pthread_mutex_lock(&pool.mu);
    j->prev = pool.tail;
    if (pool.tail) pool.tail->nextjob = j; else pool.head = j;
    pool.tail = j;
    j->queued = 1;
    uint32_t wake = block_dim - 1 < pool.nworkers ? block_dim - 1 : pool.nworkers;
    for (uint32_t i = 0; i < wake; ++i) pthread_cond_signal(&pool.cv);
    pthread_mutex_unlock(&pool.mu);

    int interruptible = cur.jmp != NULL;
    if (interruptible) cur.job = j;
    pool_work(j);
    cur.job = NULL;

    pthread_mutex_lock(&pool.mu);
    pool_unlink(j);
    while (j->refs > 0) {
        if (!interruptible) {
            pthread_cond_wait(&j->cv, &pool.mu);
            continue;
        }
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 50 * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec += 1;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&j->cv, &pool.mu, &until);
        if (j->refs > 0 && atomic_load(&interrupt_requested)) {
            pool_abandon_locked(j);
            pthread_mutex_unlock(&pool.mu);
            return interrupted_msg(msg);
        }
    }
    pthread_mutex_unlock(&pool.mu);
    rc = failure_report(&j->fail, msg);
    pthread_cond_destroy(&j->cv);
    free(j);
    return rc;
}

/* ---- inter-core sync kernels: one thread per block ---------------------------------------- */

typedef struct sim_barrier {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint32_t active;  /* blocks that have not returned */
    uint32_t arrived; /* blocks waiting in this round */
    uint64_t round;
} sim_barrier;

static void barrier_wait(void *ctx) {
    sim_barrier *b = ctx;
    pthread_mutex_lock(&b->mu);
    uint64_t round = b->round;
    if (++b->arrived >= b->active) {
        b->arrived = 0;
        b->round++;
        pthread_cond_broadcast(&b->cv);
    } else {
        while (round == b->round) pthread_cond_wait(&b->cv, &b->mu);
    }
    pthread_mutex_unlock(&b->mu);
}

static void barrier_leave(sim_barrier *b) {
    pthread_mutex_lock(&b->mu);
    b->active--;
    if (b->arrived > 0 && b->arrived >= b->active) {
        b->arrived = 0;
        b->round++;
        pthread_cond_broadcast(&b->cv);
    }
    pthread_mutex_unlock(&b->mu);
}

typedef struct gang_job {
    opbuild_kernel_launch_fn fn;
    void *const *args;
    uint32_t nargs;
    uint32_t block_dim;
    sim_barrier bar;
    pthread_mutex_t mu;
    pthread_cond_t cv;  /* remaining reached 0 */
    uint32_t remaining; /* blocks not finished (mu) */
    failure fail;       /* mu */
} gang_job;

typedef struct gang_thread {
    pthread_cond_t cv; /* with gang.mu: job assigned */
    gang_job *job;
    uint32_t idx;
    struct gang_thread *next; /* idle list */
} gang_thread;

static struct {
    pthread_mutex_t mu;
    gang_thread *idle;
    uint32_t nidle;
    uint32_t keep; /* idle threads kept for reuse; more exit after their block */
} gang = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void gang_run(gang_job *j, uint32_t idx) {
    char kerr[OPBUILD_KERNEL_ERROR_LEN];
    int failed = run_block(j->fn, j->args, j->nargs, idx, j->block_dim, barrier_wait, &j->bar, kerr);
    barrier_leave(&j->bar);
    pthread_mutex_lock(&j->mu);
    if (failed) failure_note(&j->fail, idx, kerr);
    if (--j->remaining == 0) pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu); /* j may be gone after this */
}

static void *gang_worker(void *arg) {
    gang_thread *self = arg;
    pthread_mutex_lock(&gang.mu);
    for (;;) {
        while (self->job == NULL) pthread_cond_wait(&self->cv, &gang.mu);
        gang_job *j = self->job;
        uint32_t idx = self->idx;
        pthread_mutex_unlock(&gang.mu);
        gang_run(j, idx);
        pthread_mutex_lock(&gang.mu);
        self->job = NULL;
        if (gang.nidle >= gang.keep) break;
        self->next = gang.idle;
        gang.idle = self;
        gang.nidle++;
    }
    pthread_mutex_unlock(&gang.mu);
    pthread_cond_destroy(&self->cv);
    free(self);
    release_altstack();
    return NULL;
}

/* Put threads back on the idle list without work. Caller holds gang.mu. */
static void gang_release_locked(gang_thread **t, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
        t[i]->next = gang.idle;
        gang.idle = t[i];
        gang.nidle++;
    }
}

static int run_gang(opbuild_kernel_launch_fn fn, void *const *args, uint32_t nargs, uint32_t block_dim,
                    char *msg) {
    if (block_dim == 1) {
        sim_barrier bar = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .active = 1};
        char kerr[OPBUILD_KERNEL_ERROR_LEN];
        failure f = {.idx = SIM_NO_BLOCK};
        if (run_block(fn, args, nargs, 0, 1, barrier_wait, &bar, kerr)) failure_note(&f, 0, kerr);
        return failure_report(&f, msg);
    }
    uint32_t need = block_dim - 1; /* the caller runs block 0 */
    gang_thread *stack_threads[64];
    gang_thread **threads = need <= 64 ? stack_threads : malloc(need * sizeof *threads);
    if (!threads) {
        snprintf(msg, SIM_ERROR_LEN, "out of memory launching %u blocks", block_dim);
        return SIM_ENOMEM;
    }

    uint32_t have = 0;
    pthread_mutex_lock(&gang.mu);
    if (gang.keep == 0) {
        uint32_t cpus = cpu_count();
        gang.keep = cpus > 64 ? cpus : 64;
    }
    while (have < need && gang.idle) {
        threads[have++] = gang.idle;
        gang.idle = gang.idle->next;
        gang.nidle--;
    }
    pthread_mutex_unlock(&gang.mu);

    int rc = SIM_OK;
    while (have < need) {
        gang_thread *t = calloc(1, sizeof *t);
        if (!t) {
            snprintf(msg, SIM_ERROR_LEN, "out of memory starting threads for %u concurrent blocks", block_dim);
            rc = SIM_ENOMEM;
            break;
        }
        pthread_cond_init(&t->cv, NULL);
        pthread_t tid;
        int e = start_thread(&tid, gang_worker, t, 1);
        if (e != 0) {
            pthread_cond_destroy(&t->cv);
            free(t);
            snprintf(msg, SIM_ERROR_LEN,
                     "cannot start %u threads to run the blocks of an intercore_sync kernel concurrently: %s",
                     need, strerror(e));
            rc = SIM_ENOMEM;
            break;
        }
        threads[have++] = t;
    }
    if (rc != SIM_OK) {
        pthread_mutex_lock(&gang.mu);
        gang_release_locked(threads, have);
        pthread_mutex_unlock(&gang.mu);
        if (threads != stack_threads) free(threads);
        return rc;
    }

    gang_job j;
    memset(&j, 0, sizeof j);
    j.fn = fn;
    j.args = args;
    j.nargs = nargs;
    j.block_dim = block_dim;
    pthread_mutex_init(&j.bar.mu, NULL);
    pthread_cond_init(&j.bar.cv, NULL);
    j.bar.active = block_dim;
    pthread_mutex_init(&j.mu, NULL);
    pthread_cond_init(&j.cv, NULL);
    j.remaining = block_dim;
    j.fail.idx = SIM_NO_BLOCK;

    pthread_mutex_lock(&gang.mu);
    for (uint32_t i = 0; i < need; ++i) {
        threads[i]->idx = i + 1;
        threads[i]->job = &j;
        pthread_cond_signal(&threads[i]->cv);
    }
    pthread_mutex_unlock(&gang.mu);
    if (threads != stack_threads) free(threads);

    gang_run(&j, 0);

    pthread_mutex_lock(&j.mu);
    while (j.remaining > 0) pthread_cond_wait(&j.cv, &j.mu);
    pthread_mutex_unlock(&j.mu);
    rc = failure_report(&j.fail, msg);
    pthread_cond_destroy(&j.cv);
    pthread_mutex_destroy(&j.mu);
    pthread_cond_destroy(&j.bar.cv);
    pthread_mutex_destroy(&j.bar.mu);
    return rc;
}

/* ---- launch ------------------------------------------------------------------------------- */

/* Runs a validated launch in the calling thread, `process` the isolation setting (isolation_config);
 * msg gets the error. The one place that decides: every launch (default stream, streams, Python
 * and C callers). */
static int execute_as(opbuild_kernel_launch_fn fn, void *const *args, uint32_t nargs, uint32_t block_dim,
                      int intercore_sync, int process, char *msg) {
    if (process && !intercore_sync) return execute_isolated(fn, args, nargs, block_dim, msg);
    if (intercore_sync) return run_gang(fn, args, nargs, block_dim, msg);
    if (block_dim == 1) return run_inline(fn, args, nargs, block_dim, msg);
    return run_pool(fn, args, nargs, block_dim, msg);
}

/* execute_as with the isolation setting read now. */
static int execute(opbuild_kernel_launch_fn fn, void *const *args, uint32_t nargs, uint32_t block_dim,
                   int intercore_sync, char *msg) {
    int process = 0;
    int rc = isolation_config(&process, msg);
    if (rc != SIM_OK) return rc;
    return execute_as(fn, args, nargs, block_dim, intercore_sync, process, msg);
}

static int validate(opbuild_kernel_launch_fn fn, void *const *args, uint32_t nargs, uint32_t block_dim,
                    int intercore_sync, char *msg) {
    if (fn == NULL) {
        snprintf(msg, SIM_ERROR_LEN, "kernel launch function is NULL");
        return SIM_EINVAL;
    }
    if (nargs > 0 && args == NULL) {
        snprintf(msg, SIM_ERROR_LEN, "args is NULL but nargs is %u", nargs);
        return SIM_EINVAL;
    }
    if (block_dim == 0) {
        snprintf(msg, SIM_ERROR_LEN, "block_dim is 0");
        return SIM_EINVAL;
    }
    if (intercore_sync && block_dim > SIM_MAX_SYNC_BLOCKS) {
        snprintf(msg, SIM_ERROR_LEN,
                 "block_dim %u is more than %u, the limit for an intercore_sync kernel (all blocks run at once)",
                 block_dim, SIM_MAX_SYNC_BLOCKS);
        return SIM_EINVAL;
    }
    return SIM_OK;
}

static int stream_enqueue_launch(sim_stream *s, opbuild_kernel_launch_fn fn, void *const *args, uint32_t nargs,
                                 uint32_t block_dim, int intercore_sync, sim_host_fn then_fn, void *then_arg,
                                 char *msg);

/* ---- interrupts ---------------------------------------------------------------------------- */

SIM_HIDDEN pthread_t interrupt_thread;
SIM_HIDDEN atomic_int interrupt_ready;
SIM_HIDDEN atomic_int main_in_launch;
static struct sigaction previous_int;

static void on_sigint(int sig, siginfo_t *info, void *uctx) {
    int saved_errno = errno;
    const struct sigaction *p = &previous_int;
    if (p->sa_flags & SA_SIGINFO) {
        if (p->sa_sigaction) p->sa_sigaction(sig, info, uctx);
    } else if (p->sa_handler == SIG_IGN) {
        errno = saved_errno;
        return;
    } else if (p->sa_handler == SIG_DFL) {
        sigaction(SIGINT, p, NULL);
        raise(SIGINT);
        errno = saved_errno;
        return;
    } else {
        p->sa_handler(sig);
    }
    if (pthread_equal(pthread_self(), interrupt_thread)) {
        if (isolated_wait_interrupt()) {
            atomic_store(&interrupt_requested, 1); /* the waiting main thread kills its worker */
        } else if (cur.jmp) {
            atomic_store(&interrupt_requested, 1);
            if (cur.fn) { /* inside a kernel block: leave it */
                sigjmp_buf *jb = cur.jmp;
                cur.fn = NULL;
                siglongjmp(*jb, 1);
            }
        }
    } else if (atomic_load(&main_in_launch)) {
        atomic_store(&interrupt_requested, 1);
        pthread_kill(interrupt_thread, SIGINT); /* the main thread may be inside a kernel */
    }
    errno = saved_errno;
}

SIM_API int sim_install_interrupt(unsigned long main_thread) {
    pthread_mutex_lock(&config_mu);
    if (!atomic_load(&interrupt_ready)) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sigint;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        interrupt_thread = (pthread_t)main_thread;
        if (sigaction(SIGINT, &sa, &previous_int) == 0) atomic_store(&interrupt_ready, 1);
    }
    pthread_mutex_unlock(&config_mu);
    return atomic_load(&interrupt_ready) ? SIM_OK : report(SIM_ESTATE, NULL, 0, "cannot install the SIGINT handler");
}

/* A synchronous launch by the main thread: SIGINT leaves it (see sim_install_interrupt). */
static int execute_interruptible(opbuild_kernel_launch_fn fn, void *const *args, uint32_t nargs,
                                 uint32_t block_dim, char *msg) {
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0)) {
        /* left a kernel block from the SIGINT handler: SIGINT is still blocked, unblock it */
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);
        cur.jmp = NULL;
        cur.fn = NULL;
        atomic_store(&main_in_launch, 0);
        if (cur.job) {
            pthread_mutex_lock(&pool.mu);
            pool_abandon_locked(cur.job);
            pthread_mutex_unlock(&pool.mu);
            cur.job = NULL;
        }
        return interrupted_msg(msg);
    }
    atomic_store(&interrupt_requested, 0);
    cur.jmp = &jb;
    atomic_store(&main_in_launch, 1);
    atomic_signal_fence(memory_order_seq_cst);
    int rc = execute_as(fn, args, nargs, block_dim, 0, 0, msg); /* sim_launch read the setting: in process */
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store(&main_in_launch, 0);
    cur.jmp = NULL;
    return rc;
}

SIM_API int sim_launch(sim_stream *stream, opbuild_kernel_launch_fn fn, void *const *args, uint32_t nargs,
                       uint32_t block_dim, int intercore_sync, char *err, uint32_t errlen) {
    char msg[SIM_ERROR_LEN];
    int process = 0;
    int rc = validate(fn, args, nargs, block_dim, intercore_sync, msg);
    if (rc == SIM_OK) {
        if (stream)
            rc = stream_enqueue_launch(stream, fn, args, nargs, block_dim, intercore_sync, NULL, NULL, msg);
        else if (!intercore_sync && atomic_load_explicit(&interrupt_ready, memory_order_relaxed) && !cur.jmp &&
                 pthread_equal(pthread_self(), interrupt_thread) && !isolation_config(&process, msg) && !process)
            rc = execute_interruptible(fn, args, nargs, block_dim, msg);
        else
            rc = execute(fn, args, nargs, block_dim, intercore_sync, msg);
    }
    return rc == SIM_OK ? SIM_OK : report(rc, err, errlen, msg);
}

SIM_API int sim_launch_then(sim_stream *stream, opbuild_kernel_launch_fn fn, void *const *args, uint32_t nargs,
                            uint32_t block_dim, int intercore_sync, sim_host_fn then_fn, void *then_arg, char *err,
                            uint32_t errlen) {
    char msg[SIM_ERROR_LEN];
    if (!stream) return report(SIM_EINVAL, err, errlen, "sim_launch_then: stream is NULL (a created stream only)");
    int rc = validate(fn, args, nargs, block_dim, intercore_sync, msg);
    if (rc == SIM_OK) rc = stream_enqueue_launch(stream, fn, args, nargs, block_dim, intercore_sync, then_fn, then_arg, msg);
    return rc == SIM_OK ? SIM_OK : report(rc, err, errlen, msg);
}

/* ---- the AI CPU ---------------------------------------------------------------------------- */

#define AICPU_MAX_BUFFERS 64 /* tensors of one task the memory checker can name */

typedef struct aicpu_job {
    struct aicpu_job *next;
    sim_aicpu_fn fn;
    void *ctx;
    uint32_t rc;       /* fn's status */
    int done;
    int sim_rc;        /* SIM_OK, or the isolated worker's failure (crash, timeout) / a bad setting */
    char msg[SIM_ERROR_LEN];
    char names[SIM_LABEL_LEN]; /* the memory checker's names of the task's launch arguments */
} aicpu_job;

/* An AI CPU task as a one-block launch shim: it runs as a kernel block does (run_block), so that
 * OPBUILD_ISOLATION=process runs it in a worker process like a kernel (CLONE_VM: the status it
 * writes is the caller's memory) and the memory checker reports its accesses. args[0] is the job;
 * the others are its tensors' buffers, there for the memory checker to name (cur.arg_names). */
static int32_t aicpu_shim(void *const *args, uint32_t nargs, uint32_t block_idx, uint32_t block_num,
                          opbuild_sync_all_fn sync, void *sync_ctx, char *err, uint32_t errlen) {
    (void)nargs, (void)block_idx, (void)block_num, (void)sync, (void)sync_ctx, (void)err, (void)errlen;
    aicpu_job *j = args[0];
    cur.arg_names = j->names;
    j->rc = j->fn(j->ctx);
    cur.arg_names = NULL;
    return 0;
}

/* args[0] = the job, then the data of each input and output of its AicpuContext (opbuild/aicpu.h),
 * named in j->names; the count. */
SIM_API uint64_t sim_aicpu_block_fn(void) { return (uint64_t)(uintptr_t)aicpu_shim; }

static uint32_t aicpu_args(aicpu_job *j, void **args) {
    const AicpuContext *ctx = j->ctx;
    uint32_t n = 0;
    args[n++] = j;
    int at = snprintf(j->names, sizeof j->names, "AI CPU context");
    if (ctx == NULL) return n;
    const struct { const AicpuTensor *tensors; uint32_t count; const char *kind; } groups[2] = {
        {ctx->inputs, ctx->n_inputs, "input"}, {ctx->outputs, ctx->n_outputs, "output"}};
    for (int g = 0; g < 2; ++g) {
        for (uint32_t i = 0; i < groups[g].count && n < AICPU_MAX_BUFFERS; ++i) {
            args[n++] = groups[g].tensors[i].data;
            if (at >= 0 && (size_t)at < sizeof j->names)
                at += snprintf(j->names + at, sizeof j->names - (size_t)at, ",%s %u of %s", groups[g].kind, i,
                               ctx->op_type ? ctx->op_type : "the task");
        }
    }
    return n;
}

/* Runs one AI CPU task in the AI CPU thread: in place, or isolated like every kernel launch (the
 * same decision as execute()). */
static void aicpu_execute(aicpu_job *j) {
    int process = 0;
    j->sim_rc = isolation_config(&process, j->msg);
    if (j->sim_rc != SIM_OK) return;
    void *args[AICPU_MAX_BUFFERS];
    uint32_t nargs = aicpu_args(j, args);
    j->sim_rc = process ? execute_isolated(aicpu_shim, args, nargs, 1, j->msg)
                        : run_inline(aicpu_shim, args, nargs, 1, j->msg);
    static const char one_block[] = "block 0: "; /* a task is one block: its number says nothing */
    if (j->sim_rc != SIM_OK && strncmp(j->msg, one_block, sizeof one_block - 1) == 0)
        memmove(j->msg, j->msg + sizeof one_block - 1, strlen(j->msg) - (sizeof one_block - 1) + 1);
}

static struct {
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    aicpu_job *head, *tail;
    int started;
    uint64_t tasks;
} aicpu = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL, 0, 0};

static void *aicpu_worker(void *unused) {
    (void)unused;
    pthread_mutex_lock(&aicpu.mu);
    for (;;) {
        while (aicpu.head == NULL) pthread_cond_wait(&aicpu.work, &aicpu.mu);
        aicpu_job *j = aicpu.head;
        aicpu.head = j->next;
        if (!aicpu.head) aicpu.tail = NULL;
        pthread_mutex_unlock(&aicpu.mu);
        aicpu_execute(j);
        pthread_mutex_lock(&aicpu.mu);
        j->done = 1;
        aicpu.tasks++;
        pthread_cond_broadcast(&aicpu.done);
    }
    return NULL;
}

/* Hand fn(ctx) to the AI CPU and wait for it. */
static int aicpu_run(sim_aicpu_fn fn, void *ctx, const char *errmsg, char *msg) {
    aicpu_job job = {.fn = fn, .ctx = ctx};
    pthread_mutex_lock(&aicpu.mu);
    if (!aicpu.started) {
        pthread_t tid;
        int e = start_thread(&tid, aicpu_worker, NULL, 1);
        if (e != 0) {
            pthread_mutex_unlock(&aicpu.mu);
            snprintf(msg, SIM_ERROR_LEN, "cannot start the AI CPU thread: %s", strerror(e));
            return SIM_ENOMEM;
        }
        aicpu.started = 1;
    }
    if (aicpu.tail) aicpu.tail->next = &job; else aicpu.head = &job;
    aicpu.tail = &job;
    pthread_cond_signal(&aicpu.work);
    while (!job.done) pthread_cond_wait(&aicpu.done, &aicpu.mu);
    pthread_mutex_unlock(&aicpu.mu);
    if (job.sim_rc != SIM_OK) {
        snprintf(msg, SIM_ERROR_LEN, "AI CPU task: %.480s", job.msg);
        return job.sim_rc;
    }
    if (job.rc == 0) return SIM_OK;
    if (errmsg && errmsg[0])
        snprintf(msg, SIM_ERROR_LEN, "AI CPU task failed (%u): %s", job.rc, errmsg);
    else
        snprintf(msg, SIM_ERROR_LEN, "AI CPU task failed (%u)", job.rc);
    return SIM_EKERNEL;
}

SIM_API uint64_t sim_aicpu_tasks(void) {
    pthread_mutex_lock(&aicpu.mu);
    uint64_t n = aicpu.tasks;
    pthread_mutex_unlock(&aicpu.mu);
    return n;
}

/* ---- streams ------------------------------------------------------------------------------ */

/* A created stream: an in-order queue of task records served by one worker thread.
 * The hot path (a launch per call, a synchronize per many calls) costs one uncontended lock,
 * no allocation and, most of the time, no system call:
 *   - task records are reused: the worker hands them back to the stream's free list (at most
 *     STREAM_FREE_MAX kept), a push takes one from there (malloc only while the list is empty);
 *   - the worker takes every queued task at once (a batch), runs them in order without the lock
 *     and takes the lock once per batch to record the first error and lower `pending`;
 *   - the worker does not sleep right after a batch: for STREAM_ACTIVE_NS after its last batch it
 *     naps (a timed wait of STREAM_NAP_NS) and runs what was queued meanwhile. A push wakes a
 *     napping worker only when STREAM_WAKE_PENDING tasks are pending; a synchronize, a wait or a
 *     destroy wakes it at once, and so does a push to a worker asleep for good (idle longer than
 *     STREAM_ACTIVE_NS). So a caller launching back to back pays no wakeup (a futex call and a
 *     context switch) per launch, and an idle stream costs no CPU. A task may so start up to
 *     STREAM_NAP_NS after its push: the queue is asynchronous; who waits for it wakes the worker.
 * A kernel's failure is recorded as the stream's error (the first one since the last
 * synchronize) and reported by the next synchronize or destroy. */

#define TASK_INLINE_ARGS 16
#define STREAM_FREE_MAX 1024     /* task records a stream keeps for reuse */
#define STREAM_NAP_NS 200000L        /* a worker's nap after a batch */
#define STREAM_ACTIVE_NS 20000000L    /* naps after the last batch before the worker sleeps until woken */
#define STREAM_WAKE_PENDING 256u      /* pending tasks that wake a napping worker */

typedef struct sim_task {
    struct sim_task *next;
    int is_host;
    sim_aicpu_fn aicpu_fn; /* an AI CPU task (fn NULL) */
    void *aicpu_ctx;
    const char *aicpu_errmsg;
    opbuild_kernel_launch_fn fn;
    void **args;
    uint32_t nargs;
    uint32_t block_dim;
    int intercore_sync;
    sim_host_fn host_fn; /* a host task's function; on a kernel task, sim_launch_then's (or NULL) */
    void *host_arg;
    void *inline_args[TASK_INLINE_ARGS];
} sim_task;

struct sim_stream {
    pthread_mutex_t mu;
    pthread_cond_t cv_work; /* task queued or stop (signalled only while `sleeping`) */
    pthread_cond_t cv_idle; /* pending reached 0 */
    sim_task *head, *tail;  /* queued, not taken by the worker yet */
    sim_task *free_list;    /* records for reuse */
    uint32_t nfree;
    int sleeping;           /* the worker waits on cv_work: WORKER_NAPS or WORKER_SLEEPS */
    uint64_t pending;       /* queued + running */
    int stop;
    pthread_t thread;
    int err_code;
    char error[SIM_ERROR_LEN];
};

enum { WORKER_RUNS, WORKER_NAPS, WORKER_SLEEPS };

/* The stream's error, reported at its next synchronize: a kernel launch's message after the
 * kernel's registered label ("op X, binary Y (path)", sim_register_kernel), since the launch that
 * failed is long gone from the caller's view. */
static void stream_error(sim_stream *s, opbuild_kernel_launch_fn fn, const char *msg) {
    const char *label = fn ? kernel_label(fn) : NULL;
    if (label)
        snprintf(s->error, sizeof s->error, "%s: %s", label, msg);
    else if (fn)
        snprintf(s->error, sizeof s->error, "kernel at %p: %s", (void *)(uintptr_t)fn, msg);
    else
        copy_msg(s->error, sizeof s->error, msg);
}

static int64_t mono_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000L + t.tv_nsec;
}

/* Wake the worker if it waits (caller holds s->mu): `now` 1 for a synchronize, a wait, a destroy;
 * 0 for a push, which wakes a napping worker only once enough work is pending. */
static void stream_wake_locked(sim_stream *s, int now) {
    if (s->sleeping == WORKER_SLEEPS || (s->sleeping == WORKER_NAPS && (now || s->pending >= STREAM_WAKE_PENDING))) {
        s->sleeping = WORKER_RUNS; /* (one signal is enough) */
        pthread_cond_signal(&s->cv_work);
    }
}

/* The worker waits for work (s->mu held): naps while it was active lately, else sleeps. */
static void stream_wait_work(sim_stream *s, int64_t last_batch) {
    while (s->head == NULL && !s->stop) {
        int64_t now = mono_ns();
        if (now - last_batch < STREAM_ACTIVE_NS) {
            int64_t until = now + STREAM_NAP_NS;
            struct timespec ts = {.tv_sec = until / 1000000000L, .tv_nsec = until % 1000000000L};
            s->sleeping = WORKER_NAPS;
            pthread_cond_timedwait(&s->cv_work, &s->mu, &ts);
        } else {
            s->sleeping = WORKER_SLEEPS;
            pthread_cond_wait(&s->cv_work, &s->mu);
        }
        s->sleeping = WORKER_RUNS;
    }
}

/* Runs one task in the worker; its status, msg the error. */
static int stream_run(sim_task *t, char *msg) {
    if (t->is_host) {
        t->host_fn(t->host_arg);
        return SIM_OK;
    }
    if (t->aicpu_fn) return aicpu_run(t->aicpu_fn, t->aicpu_ctx, t->aicpu_errmsg, msg);
    int rc = execute(t->fn, (void *const *)t->args, t->nargs, t->block_dim, t->intercore_sync, msg);
    if (t->host_fn) t->host_fn(t->host_arg); /* sim_launch_then's function */
    return rc;
}

static void *stream_worker(void *arg) {
    sim_stream *s = arg;
    char msg[SIM_ERROR_LEN], first_msg[SIM_ERROR_LEN];
    int64_t last_batch = 0;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        stream_wait_work(s, last_batch);
        if (s->head == NULL) break; /* stop, drained */
        sim_task *batch = s->head, *last = NULL;
        s->head = s->tail = NULL;
        pthread_mutex_unlock(&s->mu);

        int first_rc = SIM_OK;
        opbuild_kernel_launch_fn first_fn = NULL;
        uint64_t n = 0;
        for (sim_task *t = batch; t != NULL; t = t->next) {
            int rc = stream_run(t, msg);
            if (rc != SIM_OK && first_rc == SIM_OK) {
                first_rc = rc;
                first_fn = t->is_host || t->aicpu_fn ? NULL : t->fn;
                copy_msg(first_msg, sizeof first_msg, msg);
            }
            if (t->args != t->inline_args) {
                free(t->args);
                t->args = t->inline_args;
            }
            n++;
            last = t;
        }

        pthread_mutex_lock(&s->mu);
        if (first_rc != SIM_OK && s->err_code == SIM_OK) {
            s->err_code = first_rc;
            stream_error(s, first_fn, first_msg);
        }
        if (s->nfree + n <= STREAM_FREE_MAX) {
            last->next = s->free_list;
            s->free_list = batch;
            s->nfree += (uint32_t)n;
        } else {
            for (sim_task *t = batch, *next; t != NULL; t = next) {
                next = t->next;
                free(t);
            }
        }
        s->pending -= n;
        if (s->pending == 0) pthread_cond_broadcast(&s->cv_idle);
        last_batch = mono_ns();
    }
    pthread_mutex_unlock(&s->mu);
    release_altstack();
    return NULL;
}

SIM_API sim_stream *sim_stream_create(void) {
    sim_stream *s = calloc(1, sizeof *s);
    if (!s) {
        reportf(SIM_ENOMEM, NULL, 0, "out of memory creating a stream");
        return NULL;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t monotonic;
    pthread_condattr_init(&monotonic);
    pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC); /* the worker's naps (stream_wait_work) */
    pthread_cond_init(&s->cv_work, &monotonic);
    pthread_condattr_destroy(&monotonic);
    pthread_cond_init(&s->cv_idle, NULL);
    int e = start_thread(&s->thread, stream_worker, s, 0);
    if (e != 0) {
        pthread_cond_destroy(&s->cv_idle);
        pthread_cond_destroy(&s->cv_work);
        pthread_mutex_destroy(&s->mu);
        free(s);
        reportf(SIM_ENOMEM, NULL, 0, "cannot start the stream thread: %s", strerror(e));
        return NULL;
    }
    return s;
}

/* Queue a copy of task `proto` (its arguments from `args`, nargs of them) at the stream's tail. */
static int stream_push(sim_stream *s, const sim_task *proto, void *const *args, char *msg) {
    uint32_t nargs = proto->nargs;
    void **big = NULL;
    if (nargs > TASK_INLINE_ARGS) {
        big = malloc(nargs * sizeof(void *));
        if (!big) {
            snprintf(msg, SIM_ERROR_LEN, "out of memory copying %u launch arguments", nargs);
            return SIM_ENOMEM;
        }
        memcpy(big, args, nargs * sizeof(void *));
    }
    pthread_mutex_lock(&s->mu);
    if (s->stop) {
        pthread_mutex_unlock(&s->mu);
        free(big);
        snprintf(msg, SIM_ERROR_LEN, "stream is being destroyed");
        return SIM_ESTATE;
    }
    sim_task *t = s->free_list;
    if (t != NULL) {
        s->free_list = t->next;
        s->nfree--;
    } else if ((t = malloc(sizeof *t)) == NULL) {
        pthread_mutex_unlock(&s->mu);
        free(big);
        snprintf(msg, SIM_ERROR_LEN, "out of memory enqueueing a task");
        return SIM_ENOMEM;
    }
    memcpy(t, proto, offsetof(sim_task, inline_args));
    t->next = NULL;
    if (big != NULL) {
        t->args = big;
    } else {
        t->args = t->inline_args;
        if (nargs) memcpy(t->inline_args, args, nargs * sizeof(void *));
    }
    if (s->tail) s->tail->next = t;
    else s->head = t;
    s->tail = t;
    s->pending++;
    stream_wake_locked(s, 0);
    pthread_mutex_unlock(&s->mu);
    return SIM_OK;
}

static int stream_enqueue_launch(sim_stream *s, opbuild_kernel_launch_fn fn, void *const *args, uint32_t nargs,
                                 uint32_t block_dim, int intercore_sync, sim_host_fn then_fn, void *then_arg,
                                 char *msg) {
    sim_task t = {.fn = fn, .nargs = nargs, .block_dim = block_dim, .intercore_sync = intercore_sync,
                  .host_fn = then_fn, .host_arg = then_arg};
    return stream_push(s, &t, args, msg);
}

SIM_API int sim_stream_enqueue_host(sim_stream *s, sim_host_fn fn, void *arg) {
    char msg[SIM_ERROR_LEN];
    if (!s) return report(SIM_EINVAL, NULL, 0, "sim_stream_enqueue_host: stream is NULL");
    if (!fn) return report(SIM_EINVAL, NULL, 0, "sim_stream_enqueue_host: function is NULL");
    sim_task t = {.is_host = 1, .host_fn = fn, .host_arg = arg};
    int rc = stream_push(s, &t, NULL, msg);
    return rc == SIM_OK ? SIM_OK : report(rc, NULL, 0, msg);
}

SIM_API int sim_aicpu_launch(sim_stream *s, sim_aicpu_fn fn, void *ctx, const char *errmsg, char *err,
                             uint32_t errlen) {
    char msg[SIM_ERROR_LEN];
    if (!fn) return report(SIM_EINVAL, err, errlen, "sim_aicpu_launch: function is NULL");
    if (!s) {
        int rc = aicpu_run(fn, ctx, errmsg, msg);
        return rc == SIM_OK ? SIM_OK : report(rc, err, errlen, msg);
    }
    sim_task t = {.aicpu_fn = fn, .aicpu_ctx = ctx, .aicpu_errmsg = errmsg};
    int rc = stream_push(s, &t, NULL, msg);
    return rc == SIM_OK ? SIM_OK : report(rc, err, errlen, msg);
}

/* Wait for the queue to drain and take the recorded error. */
static int stream_drain(sim_stream *s, char *msg, int stop) {
    pthread_mutex_lock(&s->mu);
    while (s->pending > 0) {
        stream_wake_locked(s, 1);
        pthread_cond_wait(&s->cv_idle, &s->mu);
    }
    int rc = s->err_code;
    if (rc != SIM_OK) copy_msg(msg, SIM_ERROR_LEN, s->error);
    s->err_code = SIM_OK;
    s->error[0] = '\0';
    if (stop) {
        s->stop = 1;
        pthread_cond_signal(&s->cv_work);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

SIM_API int sim_stream_wait(sim_stream *s, uint32_t timeout_ms) {
    if (!s) return SIM_OK;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec += 1;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&s->mu);
    int rc = 0;
    while (s->pending > 0 && rc != ETIMEDOUT) {
        stream_wake_locked(s, 1);
        rc = pthread_cond_timedwait(&s->cv_idle, &s->mu, &until);
    }
    int busy = s->pending > 0;
    pthread_mutex_unlock(&s->mu);
    return busy ? SIM_EBUSY : SIM_OK;
}

SIM_API int sim_stream_synchronize(sim_stream *s, char *err, uint32_t errlen) {
    if (!s) return SIM_OK; /* the default stream is synchronous */
    if (pthread_equal(pthread_self(), s->thread))
        return report(SIM_ESTATE, err, errlen, "cannot synchronize a stream from one of its own host functions");
    char msg[SIM_ERROR_LEN];
    int rc = stream_drain(s, msg, 0);
    return rc == SIM_OK ? SIM_OK : report(rc, err, errlen, msg);
}

SIM_API int sim_stream_destroy(sim_stream *s, char *err, uint32_t errlen) {
    if (!s) return SIM_OK;
    if (pthread_equal(pthread_self(), s->thread))
        return report(SIM_ESTATE, err, errlen, "cannot destroy a stream from one of its own host functions");
    char msg[SIM_ERROR_LEN];
    int rc = stream_drain(s, msg, 1);
    pthread_join(s->thread, NULL);
    for (sim_task *t = s->free_list, *next; t != NULL; t = next) {
        next = t->next;
        free(t);
    }
    pthread_cond_destroy(&s->cv_idle);
    pthread_cond_destroy(&s->cv_work);
    pthread_mutex_destroy(&s->mu);
    free(s);
    return rc == SIM_OK ? SIM_OK : report(rc, err, errlen, msg);
}

SIM_API uint64_t sim_stream_pending(sim_stream *s) {
    if (!s) return 0;
    pthread_mutex_lock(&s->mu);
    uint64_t n = s->pending;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* ---- fork --------------------------------------------------------------------------------- */

/* In a child of fork() only the forking thread exists: forget the pool and the idle sync threads
 * (leaking their bookkeeping) so launches there start fresh ones. Created streams of the parent
 * are unusable in the child. */
static void atfork_child(void) {
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t fresh_cv = PTHREAD_COND_INITIALIZER;
    config_mu = fresh;
    pool.mu = fresh;
    pool.cv = fresh_cv;
    pool.head = pool.tail = NULL;
    pool.workers = NULL;
    pool.nworkers = 0;
    pool.shutdown = 0;
    atomic_store(&pool.ready, 0);
    gang.mu = fresh;
    gang.idle = NULL;
    gang.nidle = 0;
    aicpu.mu = fresh;
    aicpu.work = fresh_cv;
    aicpu.done = fresh_cv;
    aicpu.head = aicpu.tail = NULL;
    aicpu.started = 0;
    isolation_atfork_child();
}

__attribute__((constructor)) static void sim_init(void) {
    pthread_atfork(NULL, NULL, atfork_child);
    install_fatal_handlers();
}
