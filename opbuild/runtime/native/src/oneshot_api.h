/* oneshot_api.h: the one-shot call's C entry for tensors given as raw memory (issue 24).
 *
 * What: _fastpath exports one `oneshot_api` in a PyCapsule (`_fastpath.oneshot_api`, named
 * ONESHOT_API_CAPSULE); the torch ops' C++ CPU kernel (torch_kernel.cpp, compiled on first use
 * against the installed torch) calls `run` with its tensors' data pointers, shapes and byte
 * strides. `run` is api.call's cache hit (oneshot.c) for them: the output specs of the one-shot
 * specs cache (api.call's key), outputs allocated by the caller (`alloc`, e.g. at::empty), then
 * the plan of the thread's native plan table (plancache.h) under the key built from the tensors'
 * memory by the one key rule (fastpath_hit.c key_put_tensor, opkey.h) and phase 2's launch; the
 * last hit is remembered on the op's Phase1 (its oneshot_memo) so that the same call again
 * skips the specs lookup and the key. A miss, or an op whose phase functions are not
 * _fastpath's, runs the phase functions over ndarray views. Nothing here is a second cache.
 * Why a C ABI and not Python objects: the kernel's tensors never become numpy arrays or torch
 * Python objects on a hit (that was most of a torch.ops call's time).
 *
 * Used with the GIL held. A change to these types bumps ONESHOT_API_VERSION (the kernel checks it).
 */
#ifndef OPBUILD_ONESHOT_API_H
#define OPBUILD_ONESHOT_API_H

#include <Python.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ONESHOT_API_CAPSULE "opbuild.runtime._fastpath.oneshot_api"
#define ONESHOT_API_VERSION 1
#define ONESHOT_API_MAX_DIMS 32

/* A tensor's memory: `descr` is the numpy dtype object api.call keys by (borrowed). */
typedef struct {
    void *data;
    PyObject *descr;
    int ndim;
    const int64_t *dims;
    const int64_t *strides; /* in bytes */
} oneshot_tensor;

/* Allocate output `index` of `ndim` dims of dtype `descr`: fill `out` (its memory, C-contiguous)
 * and return 0, or -1 (the call is not served: nothing ran, no exception). */
typedef int (*oneshot_alloc_fn)(void *ctx, int index, PyObject *descr, int ndim, const int64_t *dims,
                                oneshot_tensor *out);

typedef struct {
    int version; /* ONESHOT_API_VERSION */
    /* run(state, op, n_in, inputs, attrs, alloc, ctx): 1 = ran, outputs made by `alloc`; 0 = not
     * served (no cached specs, an argument this path does not take; nothing ran, no exception: the
     * caller makes the call the Python way, which fills the caches); -1 = an exception is set
     * (AclnnError from the phases). `state` is the runtime's plan cache state (its `.oneshot` is
     * the calling thread's specs cache), `attrs` a tuple of the attribute values. */
    int (*run)(PyObject *state, PyObject *op, int n_in, const oneshot_tensor *inputs, PyObject *attrs,
               oneshot_alloc_fn alloc, void *ctx);
} oneshot_api;

#ifdef __cplusplus
}
#endif

#endif /* OPBUILD_ONESHOT_API_H */
