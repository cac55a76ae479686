/* sim_isolate.c: kernel launches in a worker process (OPBUILD_ISOLATION=process, with
 * OPBUILD_KERNEL_TIMEOUT) and the kernel memory checker (OPBUILD_MEMCHECK=1, AddressSanitizer).
 *
 * The worker is a process made by clone(CLONE_VM): it shares the caller's memory (device memory,
 * host arrays, tiling data, loaded kernels: nothing is copied or mapped again) but is a process of
 * its own, so a signal that kills it (a NULL write, abort(), a stack overflow on its own guarded
 * stack) or SIGKILL after the timeout ends the worker and not the caller, which reports the block
 * it was running. The worker runs the blocks one after another in its single thread, on the
 * thread-local storage of a host thread (tls_host: a thread of the caller parked for good, whose
 * TLS is its worker's), never the caller thread's: that one's TLS (errno, its malloc cache, C++
 * thread_local destructors that exit() would run) stays the caller's. That is why the worker has
 * no threads of its own and why intercore_sync kernels (whose blocks must run at once) are not
 * isolated. Memory is shared, so a stray write can still corrupt the caller: finding those is the
 * memory checker's job.
 *
 * A worker is made once per host (by the spawner thread, its parent for good) with its signal
 * handlers, process group, filter and guarded stack, and then serves launch after launch: the
 * caller hands a launch over through a shared word (futex) and waits, as long as the timeout
 * allows, for the worker's eventfd, its end (pidfd) or its filter's questions (listener). A worker
 * is retired (killed with its process group, reaped; the next launch makes a new one) when it
 * crashed, was killed (timeout, Ctrl-C), exited, when its launch failed or left processes or
 * pending signals behind,
 * when the kernel changed state of the worker's own that would reach the next launch (signal
 * actions, the signal stack, limits, prctl: the filter lets those run and tells the caller), and
 * when isolation is turned off or the process exits. Restored after every launch instead: the
 * signal mask (one system call) and errno (set to 0 before it).
 *
 * What the worker must not do to its caller (docs/runtime.md, "What isolation protects against"):
 * - run the caller's exit handlers: exit() in the worker would run the process's atexit list,
 *   library destructors and the stdio flush on the shared memory (and the thread_local destructors
 *   of the thread whose TLS it uses: a host's, which has none). Each launch registers an exit
 *   trap (iso_exit_trap) as the newest handler, which ends the worker at once; a worker that ends
 *   before its launch finished (exit, _exit, the exit system call) is a failure with its status.
 * - start threads: a thread of the worker would outlive it and link itself into the caller's libc
 *   bookkeeping. A seccomp filter makes clone with CLONE_THREAD fail (EPERM) and the launch with it.
 * - leave processes behind: the worker leads a process group of its own that its children cannot
 *   leave (setsid and setpgid fail) and is the subreaper of its descendants; a launch that ends
 *   with any of them left retires the worker, which kills the group.
 * - outlive the caller: its parent-death signal (SIGKILL) comes when the spawner thread ends, at
 *   the process's end; a normal exit retires the idle workers first (isolation_fini). */
#define _GNU_SOURCE
#include "opbuild/vocabulary_gen.h" /* OPBUILD_ENV_* */

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
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
    if (!mode) mode = getenv(OPBUILD_ENV_ISOLATION);
    if (!timeout) timeout = getenv(OPBUILD_ENV_KERNEL_TIMEOUT);
    if (!memcheck) memcheck = getenv(OPBUILD_ENV_MEMCHECK);
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

static void retire_idle_workers(int at_exit);

SIM_API int sim_set_isolation(const char *mode, const char *timeout, const char *memcheck) {
    pthread_mutex_lock(&cfg_mu);
    int state = parse_config(mode, timeout, memcheck);
    atomic_store(&cfg_state, state);
    int process = cfg_process;
    pthread_mutex_unlock(&cfg_mu);
    if (state == 1 && !process) retire_idle_workers(0); /* isolation off: no worker stays */
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

SIM_API int sim_isolated(void) {
    int process = 0;
    char msg[SIM_ERROR_LEN];
    return isolation_config(&process, msg) == SIM_OK && process;
}

/* ---- the worker ------------------------------------------------------------------------------ */

#define ISO_GUARD ((size_t)256 << 10) /* below the stack: big frames of a runaway recursion hit it */
#define ISO_STACK ((size_t)8 << 20)   /* as a simulator thread's (kernels keep UB-sized buffers there) */
#define ISO_ALTSTACK ((size_t)64 << 10)
#define ISO_MAP (ISO_GUARD + ISO_STACK + ISO_ALTSTACK)

/* One launch, on its caller's stack; the worker reaches it through its TLS (iso_current). */
typedef struct iso_job {
    opbuild_kernel_launch_fn fn;
    void *const *args;
    uint32_t nargs;
    uint32_t block_dim;
    int rc;
    char msg[SIM_ERROR_LEN];
    volatile sig_atomic_t fault_sig;
    volatile int has_addr;
    volatile uintptr_t fault_addr;
    pid_t caller_pid;              /* the caller's process: exit traps there are not the worker's */
    atomic_int finished;           /* the worker ran the launch to its end (else it ended early) */
    volatile int left_behind;      /* at its end: processes the kernel started, or pending signals */
    volatile int exit_called;      /* exit(exit_status) was called in the worker (iso_exit_trap) */
    volatile int exit_status;
    volatile int refused_thread;   /* the kernel tried to start a thread (refused) */
    volatile uint32_t refused_idx; /* ... in this block (refused_in_block: in a block at all) */
    volatile int refused_in_block;
} iso_job;

/* The job of the worker running on this thread's TLS (a host's: the worker's), and whether this
 * (main) thread waits for a worker (on_sigint). */
static __thread iso_job *iso_current __attribute__((tls_model("initial-exec")));
static __thread int iso_waiting __attribute__((tls_model("initial-exec")));

/* ---- TLS hosts: the thread-local storage a worker runs on, and the worker kept with it ------- */

/* A thread of the caller that never runs again after it started: its TLS is lent to its worker
 * (CLONE_SETTLS). Made on demand, one per launch running at once, and kept with its worker (a
 * worker that crashed leaves the TLS as a crash would leave the caller's own thread's). The
 * worker is made at the first launch the host serves and then serves launch after launch until
 * it is retired (worker_end): it crashed, was killed, exited, its launch failed, or the launch
 * left state that could reach the next one (children, changed signal actions: host_retire_after). */
typedef struct tls_host {
    struct tls_host *next; /* hosts_mu: the free list */
    void *tp;              /* its thread pointer */
    current_block *cur;    /* its `cur` and `iso_current` (what the caller reads and sets) */
    iso_job **job;
    atomic_int ready;
    /* Its worker (pid 0: none yet, or retired). */
    pid_t pid;
    int pidfd;             /* -1: none (kernels before 5.2: its end is polled) */
    atomic_int listener;   /* its filter's listener (install_filter), -1: not made yet */
    int donefd;            /* eventfd the worker writes when a launch finished (the caller polls it) */
    char *stack;           /* guard, stack, signal stack (ISO_MAP), the host's for good */
    pid_t caller_pid;
    atomic_uint seq;       /* launches handed to the worker (it waits on this word: futex) */
    volatile pid_t alive;  /* nonzero until the worker ended (CLONE_CHILD_CLEARTID clears it) */
    volatile int dirty;    /* the worker changed its own state (answer): retire it after the launch */
} tls_host;

static pthread_mutex_t hosts_mu = PTHREAD_MUTEX_INITIALIZER;
static tls_host *free_hosts;

static void *host_main(void *arg) {
    tls_host *h = arg;
    h->tp = __builtin_thread_pointer();
    h->cur = &cur;
    h->job = &iso_current;
    atomic_store(&h->ready, 1);
    syscall(SYS_futex, &h->ready, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    /* From here on, only system calls that never fail (nothing touches the TLS: workers use it). */
    for (;;) syscall(SYS_ppoll, NULL, 0, NULL, NULL, (size_t)8);
    return NULL;
}

/* Starts a thread with every signal blocked (the process's signals are not its to take). */
static int start_blocked_thread(void *(*fn)(void *), void *arg, size_t stack) {
    pthread_attr_t attr;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int e = pthread_attr_init(&attr);
    if (e == 0) {
        pthread_attr_setstacksize(&attr, stack);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_t tid;
        e = pthread_create(&tid, &attr, fn, arg);
        pthread_attr_destroy(&attr);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return e;
}

static tls_host *host_get(char *msg) {
    pthread_mutex_lock(&hosts_mu);
    tls_host *h = free_hosts;
    if (h) free_hosts = h->next;
    pthread_mutex_unlock(&hosts_mu);
    if (h) return h;
    h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(msg, SIM_ERROR_LEN, "out of memory starting a host thread for the isolated worker");
        return NULL;
    }
    h->pidfd = -1;
    h->listener = -1;
    h->donefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (h->donefd < 0) {
        snprintf(msg, SIM_ERROR_LEN, "cannot make an eventfd for the isolated worker: %s", strerror(errno));
        free(h);
        return NULL;
    }
    int e = start_blocked_thread(host_main, h, (size_t)64 << 10);
    if (e != 0) {
        close(h->donefd);
        free(h);
        snprintf(msg, SIM_ERROR_LEN, "cannot start a host thread for the isolated worker: %s", strerror(e));
        return NULL;
    }
    while (!atomic_load(&h->ready)) syscall(SYS_futex, &h->ready, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    return h;
}

static void worker_end(tls_host *h, int kill_worker, int *status);

/* Back to the free list; its worker retired if isolation was turned off meanwhile (read under
 * hosts_mu: sim_set_isolation writes the setting before it retires the listed hosts' workers). */
static void host_put(tls_host *h) {
    pthread_mutex_lock(&hosts_mu);
    int process = 0;
    char msg[SIM_ERROR_LEN];
    if (h->pid && (isolation_config(&process, msg) != SIM_OK || !process)) worker_end(h, 1, NULL);
    h->next = free_hosts;
    free_hosts = h;
    pthread_mutex_unlock(&hosts_mu);
}

SIM_HIDDEN int isolated_wait_interrupt(void) { return iso_waiting; }

static const int worker_fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define N_WORKER_FATAL (sizeof worker_fatal / sizeof worker_fatal[0])

/* In the worker: note the signal and its address, then die of it (the default action: the
 * handler is installed with SA_RESETHAND, so no sigaction call is needed, which the filter would
 * hand to the caller). */
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
    if (sig == SIGABRT || !info || info->si_code <= 0) /* sent, not a fault: send again */
        syscall(SYS_tgkill, (pid_t)syscall(SYS_getpid), (pid_t)syscall(SYS_gettid), sig);
}

/* ---- threads are refused: the worker's system-call filter ---------------------------------- */

#if defined(__x86_64__)
#define ISO_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ISO_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "sim_isolate.c: the worker's system-call filter knows x86_64 and aarch64 only"
#endif

#define ISO_REFUSED_ERRNO EPERM

/* System calls that change state of the worker's own that would outlive the launch (signal
 * actions, the signal stack, timers that send it signals later, resource limits, prctl settings,
 * unshared file tables...): the filter hands them to the caller, which lets them run
 * (SECCOMP_USER_NOTIF_FLAG_CONTINUE) and retires the worker after the launch (answer). */
static const int iso_watched[] = {
    __NR_rt_sigaction, __NR_sigaltstack, __NR_setitimer, __NR_timer_create, __NR_prlimit64, __NR_setrlimit,
    __NR_prctl, __NR_unshare, __NR_setns, __NR_personality,
#ifdef __NR_alarm
    __NR_alarm,
#endif
};
#define ISO_N_WATCHED (sizeof iso_watched / sizeof iso_watched[0])
#define ISO_FILTER_MAX 40 /* install_filter's instructions: 16 and one per watched call */
_Static_assert(16 + ISO_N_WATCHED <= ISO_FILTER_MAX, "install_filter: ISO_FILTER_MAX too small");

/* Installed in the worker (and inherited by its children); returns its listener (a file
 * descriptor, shared with the caller by CLONE_FILES) or -1. clone3 fails with ENOSYS (libc then
 * uses clone, whose flags a filter can read); clone with CLONE_THREAD waits for the caller
 * (SECCOMP_RET_USER_NOTIF: answer notes it and makes it fail with EPERM); the iso_watched calls
 * wait for the caller too (it notes them and lets them run); setsid and setpgid fail with EPERM
 * (the process group is the worker's to the end); system calls of another table (another
 * architecture's, x32) fail with ENOSYS. */
static int install_filter(void) {
    struct sock_filter f[ISO_FILTER_MAX];
    unsigned short n = 0;
#define PUT(insn) f[n++] = (struct sock_filter)insn
    PUT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
    PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ISO_AUDIT_ARCH, 1, 0));
    PUT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS));
    PUT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
#ifdef __x86_64__
    PUT(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1)); /* an x32 system call (__X32_SYSCALL_BIT) */
    PUT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS));
#endif
#ifdef __NR_clone3
    PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1));
    PUT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS));
#endif
    PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_setsid, 1, 0));
    PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_setpgid, 0, 1));
    PUT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ISO_REFUSED_ERRNO));
    for (unsigned i = 0; i < ISO_N_WATCHED; ++i) /* to the RET_USER_NOTIF: the jumps left, then 3 */
        PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)iso_watched[i], (unsigned char)(ISO_N_WATCHED - 1 - i + 3), 0));
    PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 3));
    PUT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]))); /* flags (low word) */
    PUT(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1));
    PUT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF));
    PUT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
#undef PUT
    struct sock_fprog prog = {.len = n, .filter = f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
}

/* Does watched call nr with these arguments change the worker's state (not a query)? */
static int changes_state(int nr, const __u64 *args) {
    if (nr == __NR_rt_sigaction) return args[1] != 0;  /* a new action, not a read of one */
    if (nr == __NR_sigaltstack) return args[0] != 0;   /* a new signal stack */
    if (nr == __NR_prlimit64) return args[2] != 0;     /* a new limit */
#ifdef __NR_alarm
    if (nr == __NR_alarm) return args[0] != 0;         /* alarm(0) cancels */
#endif
    return 1;
}

/* In the caller: a filtered system call of the worker (or a child of it), answered. A thread
 * (clone with CLONE_THREAD): noted (the block the worker is in: its host's `cur`) and made to fail
 * with EPERM. A watched call: run; when the worker itself changes its state, it is retired after
 * the launch. */
static void answer(int listener, iso_job *j, tls_host *h) {
    struct seccomp_notif req;
    memset(&req, 0, sizeof req);
    if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) return;
    struct seccomp_notif_resp resp = {.id = req.id, .val = 0, .error = 0, .flags = 0};
    if (req.data.nr == __NR_clone) {
        if (!j->refused_thread) {
            j->refused_in_block = h->cur->fn != NULL;
            j->refused_idx = h->cur->idx;
            j->refused_thread = 1;
        }
        resp.error = -ISO_REFUSED_ERRNO;
    } else {
        if ((pid_t)req.pid == h->pid && changes_state(req.data.nr, req.data.args)) h->dirty = 1;
        resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    }
    if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) != 0 && errno == EINVAL && resp.flags) {
        /* before Linux 5.5 a call cannot be let run: it fails (ENOSYS) rather than wait for good */
        h->dirty = 1;
        resp.flags = 0;
        resp.error = -ENOSYS;
        ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
    }
}

/* ---- the hand-off's short spin ----------------------------------------------------------------- */

/* Before sleeping, each side of the hand-off spins this long for the other: a short launch ends,
 * and a caller's next launch comes, within microseconds, while a sleep costs a wakeup (futex or
 * poll: ~10 us each way on an idle machine, most of an isolated 1-element launch). */
#define ISO_SPIN_NS 30000

static inline void iso_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static uint64_t iso_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Spin while `cond` holds, for ISO_SPIN_NS at most. */
#define SPIN_WHILE(cond)                                                     \
    do {                                                                     \
        uint64_t spin_start_ = 0;                                            \
        for (unsigned spin_i_ = 0; (cond); spin_i_++) {                      \
            if ((spin_i_ & 31) == 0) {                                       \
                uint64_t spin_t_ = iso_now_ns();                             \
                if (spin_start_ == 0) spin_start_ = spin_t_;                 \
                else if (spin_t_ - spin_start_ >= ISO_SPIN_NS) break;        \
            }                                                                \
            iso_pause();                                                     \
        }                                                                    \
    } while (0)

/* ---- exit handlers are not run: the exit trap ----------------------------------------------- */

extern int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);
extern int __cxa_at_quick_exit(void (*fn)(void *), void *dso);
extern void __cxa_finalize(void *dso);

/* Registered for each launch as the newest exit (and quick_exit) handler, so that exit() in the
 * worker runs it before any of the caller's: it ends the worker (the exit system call, nothing
 * else of exit() runs). In the caller (a thread not waiting for a worker, __cxa_finalize after
 * the launch) it does nothing. glibc passes exit's status as the second argument. */
static void iso_exit_trap(void *arg, int status) {
    (void)arg;
    iso_job *j = iso_current;
    if (!j || (pid_t)syscall(SYS_getpid) == j->caller_pid) return;
    j->exit_status = status;
    j->exit_called = 1;
    syscall(SYS_exit, status & 0xff);
}

/* The worker: set up once (signals, process group, subreaper, parent-death signal, filter), then
 * one launch after another, each handed over by the caller through h->seq and iso_current. After
 * each launch it restores its signal mask, notes whether the kernel left processes (they are its
 * children: it is their subreaper) or pending signals behind, and tells the caller (finished,
 * then donefd). */
static int worker_main(void *arg) {
    tls_host *h = arg;
    sigset_t mask; /* SIGINT & co. are the caller's to handle: it kills the worker */
    sigfillset(&mask);
    for (size_t i = 0; i < N_WORKER_FATAL; ++i) sigdelset(&mask, worker_fatal[i]);
    sigprocmask(SIG_SETMASK, &mask, NULL);
    stack_t st = {.ss_sp = h->stack + ISO_GUARD + ISO_STACK, .ss_size = ISO_ALTSTACK, .ss_flags = 0};
    sigaltstack(&st, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = worker_on_fatal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < N_WORKER_FATAL; ++i) sigaction(worker_fatal[i], &sa, NULL);
    cur.altstack = 1; /* its host's TLS */
    cur.jmp = NULL;
    cur.job = NULL;
    /* A process group of its own (killed with the worker), the subreaper of what its kernels start
     * (an orphaned grandchild becomes its child: seen at the launch's end), SIGKILL when the thread
     * that made it (the spawner, which lives as long as the process) ends; then the filter. */
    int listener = -1;
    if (setpgid(0, 0) == 0 && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 &&
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == 0) {
        if (getppid() != h->caller_pid) return 0; /* the caller ended meanwhile */
        listener = install_filter();
    }
    int setup_errno = errno;
    if (listener >= 0) {
        fcntl(listener, F_SETFD, FD_CLOEXEC); /* the caller's fd table: not for its exec'd children */
        atomic_store(&h->listener, listener);
    }
    unsigned seen = 0;
    for (;;) {
        unsigned s;
        /* the caller's next launch often comes at once */
        SPIN_WHILE(atomic_load_explicit(&h->seq, memory_order_acquire) == seen);
        while ((s = atomic_load_explicit(&h->seq, memory_order_acquire)) == seen)
            syscall(SYS_futex, &h->seq, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
        seen = s;
        iso_job *j = iso_current;
        if (listener < 0) {
            snprintf(j->msg, SIM_ERROR_LEN,
                     "cannot set up the isolated worker (process group, system-call filter): %s", strerror(setup_errno));
            j->rc = SIM_ESTATE;
            atomic_store_explicit(&j->finished, 1, memory_order_release);
            return 0;
        }
        errno = 0;
        j->rc = run_inline(j->fn, j->args, j->nargs, j->block_dim, j->msg);
        sigprocmask(SIG_SETMASK, &mask, NULL);
        siginfo_t info;
        sigset_t pending;
        j->left_behind = waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT | __WALL) == 0 ||
                         (sigpending(&pending) == 0 && !sigisemptyset(&pending));
        atomic_store_explicit(&j->finished, 1, memory_order_release);
        uint64_t one = 1;
        if (write(h->donefd, &one, sizeof one) < 0) { /* cannot fail: the caller drains it */
        }
    }
}

/* ---- the spawner: the thread workers are made by --------------------------------------------- */

/* A worker's parent is the thread that made it, and its parent-death signal (SIGKILL) comes when
 * that thread ends: so workers are made by one thread that lives as long as the process (a
 * worker made by a launching thread would be killed when that thread ends). */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int started;
    tls_host *req; /* the host whose worker is to be made (NULL: none asked) */
    int done, err;
} spawner = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, NULL, 0, 0};

static void *spawner_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&spawner.mu);
    for (;;) {
        while (!spawner.req || spawner.done) pthread_cond_wait(&spawner.cv, &spawner.mu);
        tls_host *h = spawner.req;
        int pidfd = -1;
        int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SETTLS | CLONE_CHILD_CLEARTID; /* exit signal 0 */
        char *top = h->stack + ISO_GUARD + ISO_STACK; /* the stack grows down from the signal stack's start */
        h->alive = -1;
        pid_t pid = clone(worker_main, top, flags | CLONE_PIDFD, h, &pidfd, h->tp, &h->alive);
        if (pid < 0 && errno == EINVAL) /* before 5.2 */
            pid = clone(worker_main, top, flags, h, NULL, h->tp, &h->alive);
        spawner.err = pid < 0 ? errno : 0;
        h->pid = pid < 0 ? 0 : pid;
        h->pidfd = pid < 0 ? -1 : pidfd;
        spawner.done = 1;
        pthread_cond_broadcast(&spawner.cv);
    }
    return NULL;
}

/* Makes h's worker (in the spawner thread); 0, or an errno value. */
static int spawn(tls_host *h) {
    pthread_mutex_lock(&spawner.mu);
    int e = 0;
    if (!spawner.started) {
        e = start_blocked_thread(spawner_main, NULL, (size_t)256 << 10);
        spawner.started = e == 0;
    }
    if (e == 0) {
        while (spawner.req) pthread_cond_wait(&spawner.cv, &spawner.mu);
        h->caller_pid = (pid_t)syscall(SYS_getpid);
        atomic_store(&h->listener, -1);
        h->dirty = 0;
        atomic_store(&h->seq, 0);
        spawner.req = h;
        spawner.done = 0;
        pthread_cond_broadcast(&spawner.cv);
        while (!spawner.done) pthread_cond_wait(&spawner.cv, &spawner.mu);
        e = spawner.err;
        spawner.req = NULL;
        spawner.done = 0;
        pthread_cond_broadcast(&spawner.cv);
    }
    pthread_mutex_unlock(&spawner.mu);
    return e;
}

SIM_HIDDEN void isolation_atfork_child(void) {
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t fresh_cv = PTHREAD_COND_INITIALIZER;
    hosts_mu = fresh;
    free_hosts = NULL; /* leaked: their threads and workers are the parent's */
    spawner.mu = fresh;
    spawner.cv = fresh_cv;
    spawner.started = 0;
    spawner.req = NULL;
    spawner.done = 0;
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

/* Has the worker ended? Leaves it unreaped (a zombie keeps its pid, and so its process group's
 * id, from being reused until the group is killed). */
static int worker_ended(pid_t pid) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT | __WALL) != 0) return errno != EINTR;
    return info.si_pid == pid;
}

/* Retires h's worker: kills it (unless it ended) and what is left of its process group (the
 * kernel's children), reaps it (its status in *status) and closes its descriptors. The host keeps
 * its stack for the next worker (cleared for AddressSanitizer: a worker that died in instrumented
 * frames left their redzones poisoned in the shared shadow memory). */
static void worker_end(tls_host *h, int kill_worker, int *status) {
    int ignored;
    if (!status) status = &ignored;
    if (kill_worker) syscall(SYS_kill, h->pid, SIGKILL);
    syscall(SYS_kill, -h->pid, SIGKILL);
    reap(h->pid, status);
    if (h->pidfd >= 0) close(h->pidfd);
    int listener = atomic_load(&h->listener);
    if (listener >= 0) close(listener);
    h->pid = 0;
    h->pidfd = -1;
    atomic_store(&h->listener, -1);
    uint64_t drained;
    if (read(h->donefd, &drained, sizeof drained) < 0) { /* nothing written: nothing to drain */
    }
    if (asan.unpoison) asan.unpoison(h->stack + ISO_GUARD, ISO_STACK + ISO_ALTSTACK);
}

/* Retires the workers of the hosts no launch uses now (isolation turned off, the process ends);
 * those in use are retired when their launch ends (it reads the setting after set_isolation wrote
 * it, or its host is back in the list before this takes the lock). At exit the lock is only tried
 * (another thread may hold it for good): a worker left is killed by its parent-death signal. */
static void retire_idle_workers(int at_exit) {
    if (at_exit ? pthread_mutex_trylock(&hosts_mu) != 0 : pthread_mutex_lock(&hosts_mu) != 0) return;
    for (tls_host *h = free_hosts; h; h = h->next)
        if (h->pid) worker_end(h, 1, NULL);
    pthread_mutex_unlock(&hosts_mu);
}

__attribute__((destructor)) static void isolation_fini(void) { retire_idle_workers(1); }

static void describe_block(char *out, size_t len, int in_block, uint32_t idx, uint32_t block_dim) {
    if (in_block)
        snprintf(out, len, "block %u of %u", idx, block_dim);
    else
        snprintf(out, len, "outside any block of %u", block_dim);
}

SIM_HIDDEN int execute_isolated(opbuild_kernel_launch_fn fn, void *const *args, uint32_t nargs, uint32_t block_dim,
                                char *msg) {
    tls_host *host = host_get(msg);
    if (!host) return SIM_ENOMEM;
    if (host->pid && !host->alive) worker_end(host, 0, NULL); /* ended between launches (killed): a new one */
    if (!host->stack) {
        char *base = mmap(NULL, ISO_MAP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK,
                          -1, 0);
        if (base == MAP_FAILED) {
            snprintf(msg, SIM_ERROR_LEN, "cannot map a stack for the isolated worker: %s", strerror(errno));
            host_put(host);
            return SIM_ENOMEM;
        }
        mprotect(base, ISO_GUARD, PROT_NONE);
        host->stack = base;
    }
    if (!host->pid) {
        int e = spawn(host);
        if (e != 0) {
            host_put(host);
            snprintf(msg, SIM_ERROR_LEN, "cannot start the isolated worker process: %s", strerror(e));
            return SIM_ENOMEM;
        }
    }
    iso_job job = {.fn = fn, .args = args, .nargs = nargs, .block_dim = block_dim,
                   .caller_pid = host->caller_pid};

    /* The exit trap, newest of the exit handlers; removed (not run) by __cxa_finalize(&job). */
    void (*trap)(void *) = (void (*)(void *))(void (*)(void))iso_exit_trap;
    if (__cxa_atexit(trap, NULL, &job) != 0 || __cxa_at_quick_exit(trap, &job) != 0) {
        __cxa_finalize(&job);
        host_put(host);
        snprintf(msg, SIM_ERROR_LEN, "cannot register the isolated worker's exit trap");
        return SIM_ENOMEM;
    }
    *host->job = &job; /* the worker's TLS: its host's */
    host->cur->fn = NULL;
    pid_t pid = host->pid;
    atomic_fetch_add_explicit(&host->seq, 1, memory_order_release); /* the launch is the worker's */
    syscall(SYS_futex, &host->seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);

    int main_thread = atomic_load(&interrupt_ready) && pthread_equal(pthread_self(), interrupt_thread);
    if (main_thread) {
        atomic_store(&interrupt_requested, 0);
        iso_waiting = 1;
        atomic_store(&main_in_launch, 1);
    }
    uint32_t timeout_ms = cfg_timeout_ms;
    uint64_t deadline = timeout_ms ? now_ms() + timeout_ms : 0;
    int status = 0, outcome = 0; /* 0 finished or ended, 1 timed out, 2 interrupted */
    int ended = 0;               /* the worker ended during the launch */
    SPIN_WHILE(!atomic_load_explicit(&job.finished, memory_order_acquire)); /* a short launch ends soon */
    for (;;) {
        if (atomic_load_explicit(&job.finished, memory_order_acquire)) break;
        if (ended || !host->alive || (host->pidfd < 0 && worker_ended(pid))) {
            ended = 1;
            break;
        }
        if (main_thread && atomic_load(&interrupt_requested)) outcome = 2;
        else if (deadline && now_ms() >= deadline) outcome = 1;
        if (outcome) break;
        /* Wait for the launch's end (donefd), the worker's end (pidfd; polled without one, kernels
         * before 5.2) and answer its filter (listener): until the worker has made its filter, in
         * slices of 1 ms. */
        int listener = atomic_load(&host->listener);
        int64_t wait_ms = deadline ? (int64_t)(deadline - now_ms()) : -1;
        if (deadline && wait_ms < 0) wait_ms = 0;
        if ((listener < 0 || host->pidfd < 0) && (wait_ms < 0 || wait_ms > 1)) wait_ms = 1;
        struct pollfd p[3];
        nfds_t n = 0;
        p[n++] = (struct pollfd){.fd = host->donefd, .events = POLLIN};
        if (host->pidfd >= 0) p[n++] = (struct pollfd){.fd = host->pidfd, .events = POLLIN};
        if (listener >= 0) p[n++] = (struct pollfd){.fd = listener, .events = POLLIN};
        if (poll(p, n, (int)wait_ms) <= 0) continue; /* a signal (SIGINT) ends it early: EINTR */
        if (p[0].revents & POLLIN) {
            uint64_t drained;
            if (read(host->donefd, &drained, sizeof drained) < 0) { /* another thread drained it: none */
            }
        }
        if (host->pidfd >= 0 && (p[1].revents & POLLIN)) ended = 1;
        if (listener >= 0 && (p[n - 1].revents & POLLIN)) answer(listener, &job, host);
    }
    if (main_thread) {
        iso_waiting = 0;
        atomic_store(&main_in_launch, 0);
    }
    int finished = atomic_load(&job.finished);
    int ok = outcome == 0 && !ended && finished && job.rc == SIM_OK && !job.refused_thread;
    /* Retire the worker unless its launch went well and left nothing behind (host_put: and
     * isolation is still on). */
    if (!ok || job.left_behind || host->dirty) worker_end(host, !ended, &status);
    int in_block = host->cur->fn != NULL;
    uint32_t idx = host->cur->idx;
    char *stack = host->stack;
    *host->job = NULL;
    host_put(host);
    __cxa_finalize(&job); /* this launch's traps: ef_free, their slots reused by the next launch */

    if (outcome == 0 && finished && !job.refused_thread) {
        copy_msg(msg, SIM_ERROR_LEN, job.msg);
        return job.rc;
    }
    char where[64];
    describe_block(where, sizeof where, in_block, idx, block_dim);
    if (outcome == 2) {
        snprintf(msg, SIM_ERROR_LEN, "launch interrupted (SIGINT) %s; the isolated worker was killed", where);
        return SIM_EINTR;
    }
    char what[SIM_ERROR_LEN];
    if (outcome == 1) {
        snprintf(what, sizeof what,
                 "%s: still running after OPBUILD_KERNEL_TIMEOUT=%g s; the isolated worker (pid %d) was killed", where,
                 cfg_timeout_s, (int)pid);
    } else if (finished) {
        what[0] = '\0'; /* only the refused thread to report */
    } else if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        char addr[64] = "";
        if (job.fault_sig == sig && job.has_addr)
            snprintf(addr, sizeof addr, " at address 0x%lx%s", (unsigned long)job.fault_addr,
                     job.fault_addr - (uintptr_t)stack < ISO_GUARD ? " (stack overflow)" : "");
        snprintf(what, sizeof what, "%s: %s%s; the isolated worker (pid %d) died of it", where,
                 sig == SIGKILL ? "SIGKILL (killed)" : signal_name(sig), addr, (int)pid);
    } else if (job.exit_called) {
        snprintf(what, sizeof what,
                 "%s: the kernel called exit(%d); the isolated worker (pid %d) ended without running the caller's "
                 "exit handlers", where, job.exit_status, (int)pid);
    } else {
        snprintf(what, sizeof what,
                 "%s: the isolated worker (pid %d) ended with status %d before the launch finished (_exit() or the "
                 "exit system call in the kernel)", where, (int)pid, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    if (job.refused_thread) {
        char block[64];
        describe_block(block, sizeof block, job.refused_in_block, job.refused_idx, block_dim);
        snprintf(msg, SIM_ERROR_LEN,
                 "%s: the kernel tried to start a thread (clone with CLONE_THREAD), which an isolated worker refuses "
                 "(EPERM): it runs a launch on its one thread%s%s", block, what[0] ? "; then " : "", what);
    } else {
        copy_msg(msg, SIM_ERROR_LEN, what);
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

/* " at FILE:LINE (FUNC)" of the report's first stack frame ("#0 0x... in FUNC FILE:LINE[:COL]", the
 * kernel's source line when it is built with -g and a symbolizer is found), " in FUNC (MODULE+0xOFF)"
 * without line information, "" without a frame. A long path keeps its last 80 characters. */
static void first_frame(const char *report, char *out, size_t len) {
    out[0] = '\0';
    const char *f = report ? strstr(report, "#0 0x") : NULL;
    if (f == NULL) return;
    const char *eol = strchr(f, '\n');
    if (eol == NULL) eol = f + strlen(f);
    const char *in = strstr(f, " in ");
    if (in == NULL || in > eol) return;
    const char *func = in + 4, *sp = func;
    while (sp < eol && *sp != ' ') sp++;
    int flen = (int)(sp - func);
    if (flen > 60) flen = 60;
    const char *loc = sp < eol ? sp + 1 : eol;
    int llen = (int)(eol - loc);
    if (llen <= 0) {
        snprintf(out, len, " in %.*s", flen, func);
    } else if (*loc == '(') {
        const char *slash = memrchr(loc, '/', (size_t)llen);
        if (slash != NULL) { /* the module's file name only */
            llen -= (int)(slash + 1 - loc);
            loc = slash + 1;
            snprintf(out, len, " in %.*s (%.*s", flen, func, llen > 80 ? 80 : llen, loc);
        } else {
            snprintf(out, len, " in %.*s %.*s", flen, func, llen > 80 ? 80 : llen, loc);
        }
    } else {
        if (llen > 80) {
            loc += llen - 80;
            llen = 80;
        }
        snprintf(out, len, " at %.*s (%.*s)", llen, loc, flen, func);
    }
}

/* AddressSanitizer's report callback, run after its report (on stderr): the first report of a
 * kernel block becomes the block's failure (run_block), the kernel goes on (halt_on_error=0). */
static void memcheck_report(const char *report) {
    if (!cur.fn || !cur.note || cur.note[0]) return; /* not in a kernel block, or noted already */
    char access[200], frame[160];
    describe_access(access, sizeof access);
    first_frame(report, frame, sizeof frame);
    const char *what = asan.description ? asan.description() : NULL;
    snprintf(cur.note, OPBUILD_KERNEL_ERROR_LEN, "memcheck: %s%s [AddressSanitizer: %s]", access, frame,
             what ? what : "invalid access");
}
