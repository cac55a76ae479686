/* sim_internal.h: what the simulator's C files share (sim.c: memory, pool, streams, crash lines;
 * sim_isolate.c: process isolation and the memory checker). Not part of the library's API. */
#ifndef OPBUILD_SIM_INTERNAL_H
#define OPBUILD_SIM_INTERNAL_H

#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdint.h>

#include "sim.h"

#define SIM_HIDDEN __attribute__((visibility("hidden")))

/* The block this thread is running (fn NULL: none). initial-exec: signal handlers and the
 * memory checker's report callback read it without the lazy TLS allocation of a dlopened
 * library. An isolated worker (sim_isolate.c) shares its caller's thread's copy. */
typedef struct current_block {
    opbuild_kernel_launch_fn fn;
    uint32_t idx;
    uint32_t block_dim;
    void *const *args;    /* the launch's arguments (the memory checker names the buffer hit) */
    uint32_t nargs;
    char *note;           /* the memory checker's first report of the block (OPBUILD_KERNEL_ERROR_LEN) */
    int altstack;         /* this thread has a signal stack (stack overflows are reported too) */
    void *altstack_mem;   /* ours, when we made it */
    sigjmp_buf *jmp;      /* set while the main thread is in an interruptible launch */
    struct pool_job *job; /* the pool job the main thread runs blocks of (abandoned on interrupt) */
    const char *arg_names; /* names of args for the memory checker when the kernel's are not registered
                            * (an AI CPU task: "AI CPU context,input 0,...,output 0,...") */
} current_block;

extern __thread current_block cur __attribute__((tls_model("initial-exec")));

SIM_HIDDEN void copy_msg(char *dst, uint32_t dstlen, const char *msg);
SIM_HIDDEN const char *signal_name(int sig);
/* The registered label ("op X, binary Y (path)") / argument names ("input x,output y,...") of a
 * kernel, or NULL. Async-signal-safe. */
SIM_HIDDEN const char *kernel_label(opbuild_kernel_launch_fn fn);
SIM_HIDDEN const char *kernel_arg_names(opbuild_kernel_launch_fn fn);
/* Runs blocks 0..block_dim-1 one after another in the calling thread; msg gets the error. */
SIM_HIDDEN int run_inline(opbuild_kernel_launch_fn fn, void *const *args, uint32_t nargs, uint32_t block_dim,
                          char *msg);

/* SIGINT handling (sim.c): the main thread of sim_install_interrupt, and whether an interrupt was
 * asked for / the main thread is in a launch (on_sigint forwards SIGINT to it). */
extern pthread_t interrupt_thread;
extern atomic_int interrupt_ready;
extern atomic_int interrupt_requested;
extern atomic_int main_in_launch;

/* sim_isolate.c. isolation_config: SIM_OK with *process set (1: launches run in a worker process,
 * OPBUILD_ISOLATION=process), or SIM_EINVAL with msg (a bad OPBUILD_ISOLATION /
 * OPBUILD_KERNEL_TIMEOUT / OPBUILD_MEMCHECK). */
SIM_HIDDEN int isolation_config(int *process, char *msg);
/* Runs a validated non-sync launch in a worker process (kept from launch to launch, retired after
 * a failure); a crash or timeout is SIM_EKERNEL. */
SIM_HIDDEN int execute_isolated(opbuild_kernel_launch_fn fn, void *const *args, uint32_t nargs, uint32_t block_dim,
                                char *msg);
/* In a child of fork(): the isolation's locks made fresh (another thread may have held one), its
 * host threads, their workers and the spawner thread forgotten (they are the parent's: new ones
 * are started). */
SIM_HIDDEN void isolation_atfork_child(void);
/* on_sigint: is the main thread waiting for an isolated worker (then it kills the worker)? */
SIM_HIDDEN int isolated_wait_interrupt(void);

#endif /* OPBUILD_SIM_INTERNAL_H */
