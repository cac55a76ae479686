/* tiling_block.h: the TilingBlock of tiling_fill.c (a TilingContext and everything it points to,
 * in one block) and the two ways a block is used: running op_proto shape/dtype functions and
 * running a tiling function on it. Shared by the Python-facing methods of the block
 * (tiling_fill.c: run_infer, run_tiling) and the native miss of a known call signature
 * (signature_miss.c), so each is done one way. Used with the GIL held (the functions themselves
 * run with it released).
 */
#ifndef OPBUILD_TILING_BLOCK_H
#define OPBUILD_TILING_BLOCK_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "opbuild/tiling.h"

typedef struct {
    PyObject_HEAD
    char *mem;
    Py_ssize_t size;
    Py_ssize_t guard; /* offset of the guard bytes after the tiling data (0: no tiling data) */
    Py_ssize_t exports;
    PyObject *guard_bytes; /* what the guard bytes were filled with (bytes), for run_tiling */
} TilingBlock;

extern PyTypeObject TilingBlockType;

typedef uint32_t (*tiling_block_infer_fn)(TilingContext *, OpbuildTensorDesc *);
typedef uint32_t (*tiling_block_tiling_fn)(TilingContext *);

/* Run `fns` (op_proto functions: InferDataType then InferShape) in turn on the block's context
 * and the same `outs`, stopping at the first failure: its status (0: all succeeded); *ran is the
 * number of functions run (the failing one is fns[*ran - 1]). The context's error is terminated. */
uint32_t tiling_block_infer(TilingBlock *b, const tiling_block_infer_fn *fns, Py_ssize_t nfn, OpbuildTensorDesc *outs,
                            Py_ssize_t *ran);

/* Run a tiling function on the block's context: its status; *overrun is the offset of the first
 * changed guard byte after the tiling data buffer (-1: none). The context's error is terminated. */
uint32_t tiling_block_tile(TilingBlock *b, tiling_block_tiling_fn fn, long *overrun);

/* A descriptor's contiguous strides from its dims (tiling_context._contiguous: a dim of 0 counts
 * as 1): 0, or -1 when they leave int64. */
int tiling_desc_contiguous(OpbuildTensorDesc *d);

#endif /* OPBUILD_TILING_BLOCK_H */
