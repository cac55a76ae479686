/* sim.h: C API of the opbuild device simulator (libopbuild_sim, built as opbuild.runtime._opbuild_sim).
 *
 * The simulated device shares the host address space: device memory is host memory allocated with
 * the alignment of aclrtMalloc (512 bytes), and kernels are host shared objects that export
 * `opbuild_kernel_launch` (opbuild_kernel_launch_fn, see opbuild/kernel.h).
 *
 * Execution model
 *   - A thread pool of sim_threads() threads (the calling thread counts as one: the pool starts
 *     sim_threads() - 1 workers and the caller runs blocks too) is started lazily on the first
 *     multi-block launch. Its size is sysconf(_SC_NPROCESSORS_ONLN), or env OPBUILD_SIM_THREADS
 *     (read when the pool is created), or sim_set_threads(n).
 *   - Kernels without inter-core sync: blocks 0..block_dim-1 are claimed dynamically by the pool
 *     workers and the caller. A 1-block launch runs inline in the calling thread.
 *   - Kernels with inter-core sync (SyncAll): all blocks run concurrently, each on its own thread
 *     (the caller runs block 0; reusable dedicated threads run the others), block_dim <= 1024.
 *     A block that returns (normally or with an error) leaves the barrier.
 *   - All blocks of a launch always run; if any fail, the launch fails with
 *     "block <i>: <message>" for the lowest failing block index.
 *   - NULL stream = the default stream: synchronous, the launch returns the result.
 *     A created stream is an in-order queue served by one worker thread: sim_launch validates its
 *     arguments, copies the args array, enqueues and returns 0. Every task runs even after an
 *     earlier one failed; the first error is kept and returned (and cleared) by
 *     sim_stream_synchronize / sim_stream_destroy. The default stream does not synchronize with
 *     created streams. The worker runs queued tasks in batches and, after a batch, naps briefly
 *     rather than being woken per task (sim.c "streams"): a task may start up to 0.2 ms after
 *     its push; a synchronize, a wait or a destroy wakes the worker at once.
 *
 * Errors: functions returning int return 0 on success or a SIM_E* code, write the message to
 * err[0..errlen) when err is not NULL, and always keep it as the calling thread's sim_last_error().
 */
#ifndef OPBUILD_SIM_H
#define OPBUILD_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "opbuild/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SIM_API __attribute__((visibility("default")))

#define SIM_ABI_VERSION 1u
#define SIM_MEM_ALIGN 512u
#define SIM_MAX_SYNC_BLOCKS 1024u
#define SIM_MAX_THREADS 1024u
#define SIM_ERROR_LEN 512u

enum {
    SIM_OK = 0,
    SIM_EINVAL = 1,  /* invalid argument (block_dim 0, NULL kernel, bad pointer, ...) */
    SIM_EKERNEL = 2, /* a block of the kernel failed */
    SIM_ENOMEM = 3,  /* out of memory or threads */
    SIM_ESTATE = 4,  /* operation not allowed in this state */
    SIM_EINTR = 5,   /* a synchronous launch was interrupted (SIGINT); its running blocks are abandoned */
    SIM_EBUSY = 6,   /* sim_stream_wait: work still pending after the timeout */
};

typedef struct sim_stream sim_stream;
typedef void (*sim_host_fn)(void *arg);

SIM_API uint32_t sim_abi_version(void);

/* The message of the last failed call made by this thread ("" if none). */
SIM_API const char *sim_last_error(void);

/* ---- device memory ------------------------------------------------------------------------ */

/* 512-byte aligned, uninitialised; size 0 gives a valid unique pointer. NULL on failure. */
SIM_API void *sim_malloc(size_t size);
/* 0, or SIM_EINVAL for a pointer that sim_malloc did not return (or that was freed already). */
SIM_API int sim_free(void *ptr);
/* sim_free as a host callback, for frees ordered on a stream (errors are ignored). */
SIM_API void sim_free_host_fn(void *ptr);
SIM_API uint64_t sim_mem_in_use(void);  /* bytes currently allocated by sim_malloc */
SIM_API uint64_t sim_mem_peak(void);    /* high-water mark of sim_mem_in_use */
SIM_API uint64_t sim_mem_blocks(void);  /* number of live allocations */
/* 1 and the live allocation holding `ptr` (its first byte and size), or 0 when `ptr` is in no
 * live allocation (host memory, freed device memory). */
SIM_API int sim_allocation(const void *ptr, uint64_t *start, uint64_t *size);
/* The allocations' generation counter, changed by every sim_malloc and sim_free (read it with an
 * atomic load): a check against the allocations made at generation G still holds while it reads G. */
SIM_API const uint64_t *sim_allocation_generation(void);

/* ---- thread pool -------------------------------------------------------------------------- */

/* n threads (1..SIM_MAX_THREADS; 0 = default: env OPBUILD_SIM_THREADS, else the CPU count).
 * Stops a running pool (it is recreated with the new size on the next launch). */
SIM_API int sim_set_threads(uint32_t n);
/* The pool size in use, or that the next pool would have; 0 if OPBUILD_SIM_THREADS is invalid. */
SIM_API uint32_t sim_threads(void);

/* ---- launch and streams ------------------------------------------------------------------- */

SIM_API int sim_launch(sim_stream *stream, opbuild_kernel_launch_fn fn, void *const *args, uint32_t nargs,
                       uint32_t block_dim, int intercore_sync, char *err, uint32_t errlen);

/* ---- the AI CPU ---------------------------------------------------------------------------- */

/* An AI CPU task: `fn(ctx)` returns 0 or an error code (libcust_aicpu_kernels.so's RunCpuKernel).
 * `ctx` is an AicpuContext (opbuild/aicpu.h; NULL: none): the memory checker names its tensors. */
typedef uint32_t (*sim_aicpu_fn)(void *ctx);

/* Run fn(ctx) on the device's AI CPU: one worker thread with its own task queue, apart from the
 * AI Core blocks' pool (the AI CPU scheduler). On a created stream the task is enqueued in order
 * with the stream's kernel launches (the stream hands it to the AI CPU and waits for it, so what
 * was enqueued before has finished and what comes after starts once it is done); NULL stream:
 * synchronous. A non-zero return of fn is the task's error (SIM_EKERNEL, message `errmsg` if the
 * task wrote one there, i.e. AicpuContext.error). */
SIM_API int sim_aicpu_launch(sim_stream *stream, sim_aicpu_fn fn, void *ctx, const char *errmsg, char *err,
                             uint32_t errlen);
/* AI CPU tasks run since the process started (tests: the AI CPU really ran them). */
SIM_API uint64_t sim_aicpu_tasks(void);

/* ---- block timing (the profiler) ---------------------------------------------------------- */

/* One block's run: the kernel launch function (an AI CPU task's is sim_aicpu_launch's shim), the
 * block index, the OS thread that ran it, its start and end (CLOCK_MONOTONIC ns). */
typedef struct sim_block_time {
    uint64_t fn;
    uint32_t idx, tid;
    int64_t start_ns, end_ns;
} sim_block_time;

/* Turn block timing on (1) or off (0, the default: one branch per block). Records are kept until
 * taken (at most 1 << 20; later blocks are counted in sim_profile_dropped). */
SIM_API void sim_profile_blocks(int on);
/* Move up to `max` recorded blocks into out (oldest first); returns how many. */
SIM_API size_t sim_profile_take(sim_block_time *out, size_t max);
SIM_API uint64_t sim_profile_dropped(void);
/* The launch function AI CPU tasks run as (the `fn` of their block records). */
SIM_API uint64_t sim_aicpu_block_fn(void);

/* ---- crash reports ------------------------------------------------------------------------ */

/* Name a kernel launch function for crash reports ("op X, binary Y (path)"; copied, at most
 * SIM_LABEL_LEN - 1 bytes). When a block of a registered kernel dies of SIGSEGV, SIGBUS, SIGFPE,
 * SIGILL or SIGABRT, one line naming the kernel, the block and the signal is written to stderr
 * (async-signal-safe) before the signal's previous action runs (the process dies as before). */
#define SIM_LABEL_LEN 256u
SIM_API int sim_register_kernel(opbuild_kernel_launch_fn fn, const char *label);
/* Name a kernel's arguments for the memory checker: "input x,output y,workspace,tiling". */
SIM_API int sim_register_kernel_args(opbuild_kernel_launch_fn fn, const char *names);

/* ---- isolation and the memory checker (sim_isolate.c) ------------------------------------- */

/* Set the launch mode; NULL takes the environment variable (read at the first launch otherwise):
 * mode OPBUILD_ISOLATION ("process": launches that are not intercore_sync run in a worker
 * process sharing this one's memory, whose crash or timeout is a SIM_EKERNEL error naming the
 * block and the signal; "in-process" or unset: the caller's threads), timeout
 * OPBUILD_KERNEL_TIMEOUT (seconds; set alone it implies "process"), memcheck OPBUILD_MEMCHECK
 * ("1": AddressSanitizer's reports of kernel blocks name the buffer, offset and access size; the
 * ASan runtime must be loaded). A bad value is SIM_EINVAL, and every launch fails with it. */
SIM_API int sim_set_isolation(const char *mode, const char *timeout, const char *memcheck);
/* 1 when launches run in a worker process now (the setting is valid and says so), else 0: the
 * caller then waits for the launch, however small, and should not hold a lock (Python's GIL). */
SIM_API int sim_isolated(void);

/* ---- interrupts ---------------------------------------------------------------------------- */

/* Make synchronous launches of thread `main_thread` (Python's main thread) interruptible by
 * SIGINT: the previous SIGINT action (Python's handler) runs first, then a block of the launch
 * running in that thread is left (siglongjmp) and the launch returns SIM_EINTR; blocks running on
 * other threads are abandoned (they finish on their own; device memory freed meanwhile is not
 * reused). intercore_sync launches are not interruptible. Replacing the SIGINT handler later
 * (signal.signal) turns this off. */
SIM_API int sim_install_interrupt(unsigned long main_thread);
/* Wait up to timeout_ms for the stream to drain: SIM_OK, or SIM_EBUSY (callers wait in slices so
 * that the caller can handle signals between them). */
SIM_API int sim_stream_wait(sim_stream *stream, uint32_t timeout_ms);

SIM_API sim_stream *sim_stream_create(void);
/* Wait for every task enqueued so far; returns (and clears) the first error recorded. */
SIM_API int sim_stream_synchronize(sim_stream *stream, char *err, uint32_t errlen);
/* Drain, stop and free the stream; returns an error that was not reported yet. */
SIM_API int sim_stream_destroy(sim_stream *stream, char *err, uint32_t errlen);
/* Run fn(arg) on the stream's thread after every task enqueued before it. */
SIM_API int sim_stream_enqueue_host(sim_stream *stream, sim_host_fn fn, void *arg);
/* sim_launch on a created stream (not NULL) with then_fn(then_arg) run on the stream's thread
 * right after the kernel (failed or not), as one task: one enqueue where a launch and a
 * sim_stream_enqueue_host would take two (the C ABI's hit releases its plan so). then_fn may be
 * NULL; it is not called when the launch is not enqueued (an error is returned). */
SIM_API int sim_launch_then(sim_stream *stream, opbuild_kernel_launch_fn fn, void *const *args, uint32_t nargs,
                            uint32_t block_dim, int intercore_sync, sim_host_fn then_fn, void *then_arg, char *err,
                            uint32_t errlen);
/* Number of tasks enqueued and not finished yet (the stream's thread runs its queue in batches: a
 * batch's tasks count until the whole batch has run). */
SIM_API uint64_t sim_stream_pending(sim_stream *stream);

#ifdef __cplusplus
}
#endif
#endif /* OPBUILD_SIM_H */
