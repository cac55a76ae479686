/* sim_isolate.c: kernel launches in a worker process (OPBUILD_ISOLATION=process, with
 * OPBUILD_KERNEL_TIMEOUT) and the kernel memory checker (OPBUILD_MEMCHECK=1, AddressSanitizer).
 *
 * The worker is a process made by clone(CLONE_VM) for each launch: it shares the caller's memory
 * (device memory, host arrays, tiling data, loaded kernels: nothing is copied or mapped again) but
 * is a process of its own, so a signal that kills it (a NULL write, abort(), a stack overflow on
 * its own guarded stack) or SIGKILL after the timeout ends the worker and not the caller, which
 * reports the block it was running. The worker runs the blocks one after another in its single
 * thread and uses its caller thread's thread-local storage (the caller waits meanwhile, as after
 * vfork), which is why it has no threads of its own and why intercore_sync kernels (whose blocks
 * must run at once) are not isolated. Memory is shared, so a stray write can still corrupt the
 * caller: finding those is the memory checker's job.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sim_internal.h"

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif

/* ---- configuration -------------------------------------------------------------------------- */

static pthread_mutex_t cfg_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int cfg_state; /* 0: not read yet, 1: usable, 2: bad (cfg_error) */
static int cfg_process;
static uint32_t cfg_timeout_ms; /* 0: none */
static double cfg_timeout_s;
static char cfg_error[SIM_ERROR_LEN];

static struct {
    void (*set_callback)(void (*)(const char *));
    void *(*address)(void);
    size_t (*access_size)(void);
    int (*access_type)(void); /* 1: write */
    const char *(*description)(void);
    const char *(*locate)(void *addr, char *name, size_t name_size, void **region, size_t *region_size);
    void (*unpoison)(void const volatile *addr, size_t size);
} asan;

static void memcheck_report(const char *report);

/* What the memory checker needs of AddressSanitizer (docs/runtime.md). */
#define MEMCHECK_ASAN_OPTIONS "halt_on_error=0:suppress_equal_pcs=0:detect_leaks=0"

static int cfg_fail(const char *fmt, const char *value) {
    snprintf(cfg_error, sizeof cfg_error, fmt, value);
    return 2;
}

static int memcheck_start(void) {
    asan.set_callback = (void (*)(void (*)(const char *)))dlsym(RTLD_DEFAULT, "__asan_set_error_report_callback");
    asan.address = (void *(*)(void))dlsym(RTLD_DEFAULT, "__asan_get_report_address");
    asan.access_size = (size_t(*)(void))dlsym(RTLD_DEFAULT, "__asan_get_report_access_size");
    asan.access_type = (int (*)(void))dlsym(RTLD_DEFAULT, "__asan_get_report_access_type");
    asan.description = (const char *(*)(void))dlsym(RTLD_DEFAULT, "__asan_get_report_description");
    asan.locate = (const char *(*)(void *, char *, size_t, void **, size_t *))dlsym(RTLD_DEFAULT,
                                                                                    "__asan_locate_address");
    asan.unpoison = (void (*)(void const volatile *, size_t))dlsym(RTLD_DEFAULT, "__asan_unpoison_memory_region");
    if (!asan.set_callback || !asan.address || !asan.access_size || !asan.access_type)
        return cfg_fail("OPBUILD_MEMCHECK=%s: the AddressSanitizer runtime is not loaded; run with "
                        "LD_PRELOAD=$(cc -print-file-name=libasan.so) ASAN_OPTIONS=" MEMCHECK_ASAN_OPTIONS " "
                        "(docs/runtime.md, kernel memory checker)",
                        "1");
    const char *options = getenv("ASAN_OPTIONS");
    if (!options || !strstr(options, "halt_on_error=0") || !strstr(options, "suppress_equal_pcs=0"))
        return cfg_fail("OPBUILD_MEMCHECK=1 needs ASAN_OPTIONS=" MEMCHECK_ASAN_OPTIONS " (a kernel goes on after a "
                        "bad access and its launch fails with the first report; every launch reports), not "
                        "ASAN_OPTIONS='%s'",
                        options ? options : "");
    asan.set_callback(memcheck_report);
    return 1;
}

/* Parse the three settings (NULL: the environment variable). */
static int parse_config(const char *mode, const char *timeout, const char *memcheck) {
    if (!mode) mode = getenv("OPBUILD_ISOLATION");
    if (!timeout) timeout = getenv("OPBUILD_KERNEL_TIMEOUT");
    if (!memcheck) memcheck = getenv("OPBUILD_MEMCHECK");
    cfg_timeout_ms = 0;
    cfg_timeout_s = 0;
    if (timeout && *timeout) {
        char *end = NULL;
        errno = 0;
        double v = strtod(timeout, &end);
        if (errno || end == timeout || *end || !isfinite(v) || v <= 0 || v > 1e6)
            return cfg_fail("OPBUILD_KERNEL_TIMEOUT='%s' is not a number of seconds in (0, 1000000]", timeout);
        cfg_timeout_s = v;
        cfg_timeout_ms = (uint32_t)ceil(v * 1000.0);
    }
    if (!mode || !*mode) {
        cfg_process = cfg_timeout_ms > 0; /* a timeout needs a process to kill */
    } else if (strcmp(mode, "process") == 0) {
        cfg_process = 1;
    } else if (strcmp(mode, "in-process") == 0) {
        if (cfg_timeout_ms)
            return cfg_fail("OPBUILD_KERNEL_TIMEOUT needs OPBUILD_ISOLATION=process (a kernel running in the "
                            "caller's process cannot be stopped), not '%s'", mode);
        cfg_process = 0;
    } else {
        return cfg_fail("OPBUILD_ISOLATION='%s' is neither 'process' nor 'in-process'", mode);
    }
    if (memcheck && *memcheck && strcmp(memcheck, "0") != 0) {
        if (strcmp(memcheck, "1") != 0) return cfg_fail("OPBUILD_MEMCHECK='%s' is neither 1 nor 0", memcheck);
        return memcheck_start();
    }
    return 1;
}

SIM_API int sim_set_isolation(const char *mode, const char *timeout, const char *memcheck) {
    pthread_mutex_lock(&cfg_mu);
    int state = parse_config(mode, timeout, memcheck);
    atomic_store(&cfg_state, state);
    pthread_mutex_unlock(&cfg_mu);
    if (state == 1) return SIM_OK;
    copy_msg((char *)sim_last_error(), SIM_ERROR_LEN, cfg_error);
    return SIM_EINVAL;
}

SIM_HIDDEN int isolation_config(int *process, char *msg) {
    int state = atomic_load_explicit(&cfg_state, memory_order_acquire);
    if (state == 0) {
        pthread_mutex_lock(&cfg_mu);
        state = atomic_load(&cfg_state);
        if (state == 0) {
            state = parse_config(NULL, NULL, NULL);
            atomic_store(&cfg_state, state);
        }
        pthread_mutex_unlock(&cfg_mu);
    }
    if (state != 1) {
        copy_msg(msg, SIM_ERROR_LEN, cfg_error);
        return SIM_EINVAL;
    }
    *process = cfg_process;
    return SIM_OK;
}

/* ---- the worker ------------------------------------------------------------------------------ */

#define ISO_GUARD ((size_t)256 << 10) /* below the stack: big frames of a runaway recursion hit it */
#define ISO_STACK ((size_t)8 << 20)   /* as a simulator thread's (kernels keep UB-sized buffers there) */
#define ISO_ALTSTACK ((size_t)64 << 10)
#define ISO_MAP (ISO_GUARD + ISO_STACK + ISO_ALTSTACK)

typedef struct iso_job {
    opbuild_kernel_launch_fn fn;
    void *const *args;
    uint32_t nargs;
    uint32_t block_dim;
    char *altstack;
    int rc;
    char msg[SIM_ERROR_LEN];
    volatile sig_atomic_t fault_sig;
    volatile int has_addr;
    volatile uintptr_t fault_addr;
} iso_job;

/* The job of the worker running on this thread's TLS (the worker's), and whether this (main)
 * thread waits for a worker (on_sigint). */
static __thread iso_job *iso_current __attribute__((tls_model("initial-exec")));
static __thread int iso_waiting __attribute__((tls_model("initial-exec")));

SIM_HIDDEN int isolated_wait_interrupt(void) { return iso_waiting; }

static const int worker_fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define N_WORKER_FATAL (sizeof worker_fatal / sizeof worker_fatal[0])

/* In the worker: note the signal and its address, then die of it (default action). */
static void worker_on_fatal(int sig, siginfo_t *info, void *uctx) {
    (void)uctx;
    iso_job *j = iso_current;
    if (j && !j->fault_sig) {
        if (sig != SIGABRT && info && info->si_code > 0) {
            j->fault_addr = (uintptr_t)info->si_addr;
            j->has_addr = 1;
        }
        j->fault_sig = sig;
    }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    if (sig == SIGABRT || !info || info->si_code <= 0) /* sent, not a fault: send again */
        syscall(SYS_tgkill, (pid_t)syscall(SYS_getpid), (pid_t)syscall(SYS_gettid), sig);
}

static int worker_main(void *arg) {
    iso_job *j = arg;
    sigset_t mask; /* SIGINT & co. are the caller's to handle: it kills the worker */
    sigfillset(&mask);
    for (size_t i = 0; i < N_WORKER_FATAL; ++i) sigdelset(&mask, worker_fatal[i]);
    sigprocmask(SIG_SETMASK, &mask, NULL);
    stack_t st = {.ss_sp = j->altstack, .ss_size = ISO_ALTSTACK, .ss_flags = 0};
    sigaltstack(&st, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = worker_on_fatal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < N_WORKER_FATAL; ++i) sigaction(worker_fatal[i], &sa, NULL);
    cur.altstack = 1; /* the caller thread's TLS: restored by the caller */
    cur.jmp = NULL;
    cur.job = NULL;
    j->rc = run_inline(j->fn, j->args, j->nargs, j->block_dim, j->msg);
    return 0;
}

/* Worker stacks of normally ended workers are kept for the next launches (a crashed worker's
 * is unmapped). */
#define ISO_KEEP 4
static pthread_mutex_t stacks_mu = PTHREAD_MUTEX_INITIALIZER;
static char *kept_stacks[ISO_KEEP];
static uint32_t nkept;

static char *stack_get(void) {
    char *base = NULL;
    pthread_mutex_lock(&stacks_mu);
    if (nkept) base = kept_stacks[--nkept];
    pthread_mutex_unlock(&stacks_mu);
    if (base) return base;
    base = mmap(NULL, ISO_MAP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (base == MAP_FAILED) return NULL;
    mprotect(base, ISO_GUARD, PROT_NONE);
    return base;
}

static void stack_put(char *base, int reuse) {
    /* A worker that died in instrumented frames left their redzones poisoned in the (shared)
     * shadow memory: clear them, or the next mapping there trips AddressSanitizer. */
    if (!reuse && asan.unpoison) asan.unpoison(base + ISO_GUARD, ISO_STACK + ISO_ALTSTACK);
    pthread_mutex_lock(&stacks_mu);
    if (reuse && nkept < ISO_KEEP) {
        kept_stacks[nkept++] = base;
        base = NULL;
    }
    pthread_mutex_unlock(&stacks_mu);
    if (base) munmap(base, ISO_MAP);
}

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int reap(pid_t pid, int *status) {
    for (;;) {
        pid_t r = waitpid(pid, status, __WALL);
        if (r == pid) return 0;
        if (r < 0 && errno != EINTR) return -1;
    }
}

static void describe_block(char *out, size_t len, int in_block, uint32_t idx, uint32_t block_dim) {
    if (in_block)
        snprintf(out, len, "block %u of %u", idx, block_dim);
    else
        snprintf(out, len, "outside any block of %u", block_dim);
}

SIM_HIDDEN int execute_isolated(opbuild_kernel_launch_fn fn, void *const *args, uint32_t nargs, uint32_t block_dim,
                                char *msg) {
    char *base = stack_get();
    if (!base) {
        snprintf(msg, SIM_ERROR_LEN, "cannot map a stack for the isolated worker: %s", strerror(errno));
        return SIM_ENOMEM;
    }
    iso_job job = {.fn = fn, .args = args, .nargs = nargs, .block_dim = block_dim,
                   .altstack = base + ISO_GUARD + ISO_STACK};
    char *top = job.altstack; /* the stack grows down from the signal stack's start */

    current_block saved = cur; /* the worker writes this thread's TLS */
    iso_job *saved_job = iso_current;
    iso_current = &job;
    cur.fn = NULL;
    int pidfd = -1;
    int flags = CLONE_VM | CLONE_FS | CLONE_FILES; /* exit signal 0: reaped with __WALL only */
    pid_t pid = clone(worker_main, top, flags | CLONE_PIDFD, &job, &pidfd);
    if (pid < 0 && errno == EINVAL) pid = clone(worker_main, top, flags, &job); /* kernel before 5.2 */
    if (pid < 0) {
        int e = errno;
        cur = saved;
        iso_current = saved_job;
        stack_put(base, 1);
        snprintf(msg, SIM_ERROR_LEN, "cannot start the isolated worker process: %s", strerror(e));
        return SIM_ENOMEM;
    }

    int main_thread = atomic_load(&interrupt_ready) && pthread_equal(pthread_self(), interrupt_thread);
    if (main_thread) {
        atomic_store(&interrupt_requested, 0);
        iso_waiting = 1;
        atomic_store(&main_in_launch, 1);
    }
    uint32_t timeout_ms = cfg_timeout_ms;
    uint64_t deadline = timeout_ms ? now_ms() + timeout_ms : 0;
    int status = 0, outcome = 0; /* 0 ended, 1 timed out, 2 interrupted */
    uint32_t nap_us = 20;
    for (;;) {
        pid_t r = waitpid(pid, &status, __WALL | WNOHANG);
        if (r == pid) break;
        if (main_thread && atomic_load(&interrupt_requested)) outcome = 2;
        else if (deadline && now_ms() >= deadline) outcome = 1;
        if (outcome) {
            syscall(SYS_kill, pid, SIGKILL);
            reap(pid, &status);
            break;
        }
        int wait_ms = deadline ? (int)(deadline - now_ms()) : -1;
        if (deadline && wait_ms < 0) wait_ms = 0;
        if (pidfd >= 0) {
            struct pollfd p = {.fd = pidfd, .events = POLLIN};
            poll(&p, 1, wait_ms); /* a signal (SIGINT) ends it early: EINTR */
        } else {
            struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)nap_us * 1000};
            nanosleep(&ts, NULL);
            if (nap_us < 10000) nap_us *= 2;
        }
    }
    if (main_thread) {
        iso_waiting = 0;
        atomic_store(&main_in_launch, 0);
    }
    if (pidfd >= 0) close(pidfd);
    int in_block = cur.fn != NULL;
    uint32_t idx = cur.idx;
    cur = saved;
    iso_current = saved_job;

    char where[64];
    describe_block(where, sizeof where, in_block, idx, block_dim);
    int ended = outcome == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    stack_put(base, ended);
    if (ended) {
        copy_msg(msg, SIM_ERROR_LEN, job.msg);
        return job.rc;
    }
    if (outcome == 2) {
        snprintf(msg, SIM_ERROR_LEN, "launch interrupted (SIGINT) %s; the isolated worker was killed", where);
        return SIM_EINTR;
    }
    if (outcome == 1) {
        snprintf(msg, SIM_ERROR_LEN,
                 "%s: still running after OPBUILD_KERNEL_TIMEOUT=%g s; the isolated worker (pid %d) was killed", where,
                 cfg_timeout_s, (int)pid);
    } else if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        char addr[64] = "";
        if (job.fault_sig == sig && job.has_addr)
            snprintf(addr, sizeof addr, " at address 0x%lx%s", (unsigned long)job.fault_addr,
                     job.fault_addr - (uintptr_t)base < ISO_GUARD ? " (stack overflow)" : "");
        snprintf(msg, SIM_ERROR_LEN, "%s: %s%s; the isolated worker (pid %d) died of it", where,
                 sig == SIGKILL ? "SIGKILL (killed)" : signal_name(sig), addr, (int)pid);
    } else {
        snprintf(msg, SIM_ERROR_LEN, "%s: the isolated worker (pid %d) exited with status %d", where, (int)pid,
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    return SIM_EKERNEL;
}

/* ---- the memory checker ---------------------------------------------------------------------- */

/* The name of argument i from "input x,output y,workspace,tiling" into out. */
static void arg_name(const char *names, uint32_t i, char *out, size_t len) {
    for (uint32_t k = 0; names && *names; ++k) {
        const char *end = strchr(names, ',');
        size_t n = end ? (size_t)(end - names) : strlen(names);
        if (k == i) {
            snprintf(out, len, "%.*s", (int)n, names);
            return;
        }
        if (!end) break;
        names = end + 1;
    }
    snprintf(out, len, "argument %u", i);
}

/* "WRITE of 4 bytes at offset 64 of output y (a 64-byte buffer: 0 bytes past its end)". */
static void describe_access(char *out, size_t len) {
    uintptr_t addr = (uintptr_t)asan.address();
    size_t size = asan.access_size();
    const char *kind = asan.access_type() ? "WRITE" : "READ";
    void *region = NULL;
    size_t rsize = 0;
    char heap[16];
    if (asan.locate) asan.locate((void *)addr, heap, sizeof heap, &region, &rsize);
    uintptr_t lo = (uintptr_t)region, hi = lo + rsize;
    int best = -1;
    uintptr_t bp = 0;
    for (uint32_t i = 0; i < cur.nargs; ++i) {
        uintptr_t p = (uintptr_t)cur.args[i];
        if (!p || (region && (p < lo || p > hi))) continue;
        int better;
        if (best < 0) better = 1;
        else if (region) /* the buffer starting last at or before the address; else the first one */
            better = p <= addr ? (bp > addr || p > bp) : (bp > addr && p < bp);
        else /* no heap region known: the nearest start */
            better = (p > addr ? p - addr : addr - p) < (bp > addr ? bp - addr : addr - bp);
        if (better) {
            best = (int)i;
            bp = p;
        }
    }
    if (best < 0) {
        snprintf(out, len, "%s of %zu bytes at %#lx, in none of the launch's buffers", kind, size, (unsigned long)addr);
        return;
    }
    char name[64];
    arg_name(cur.arg_names ? cur.arg_names : kernel_arg_names(cur.fn), (uint32_t)best, name, sizeof name);
    long long offset = (long long)(addr - bp);
    char where[96] = "";
    if (region) {
        unsigned long long bsize = hi - bp;
        if (offset < 0)
            snprintf(where, sizeof where, " (a %llu-byte buffer: %lld bytes before its start)", bsize, -offset);
        else if ((unsigned long long)offset >= bsize)
            snprintf(where, sizeof where, " (a %llu-byte buffer: %llu bytes past its end)", bsize,
                     (unsigned long long)offset - bsize);
        else
            snprintf(where, sizeof where, " (a %llu-byte buffer)", bsize);
    }
    snprintf(out, len, "%s of %zu byte%s at offset %lld of %s%s", kind, size, size == 1 ? "" : "s", offset, name,
             where);
}

/* AddressSanitizer's report callback, run after its report (on stderr): the first report of a
 * kernel block becomes the block's failure (run_block), the kernel goes on (halt_on_error=0). */
static void memcheck_report(const char *report) {
    (void)report;
    if (!cur.fn || !cur.note || cur.note[0]) return; /* not in a kernel block, or noted already */
    char access[320];
    describe_access(access, sizeof access);
    const char *what = asan.description ? asan.description() : NULL;
    snprintf(cur.note, OPBUILD_KERNEL_ERROR_LEN, "memcheck: %s [AddressSanitizer: %s]", access,
             what ? what : "invalid access");
}
