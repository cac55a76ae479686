/* opbuild/aicpu.h: the AI CPU side of the device ABI (what a CANN CpuKernel's Compute sees, in C).
 *
 * An `engine: aicpu` op defines one compute function in its compute source:
 *
 *     uint32_t non_zero_custom_compute(AicpuContext *ctx) {
 *         const AicpuTensor *x = aicpu_input(ctx, 0);
 *         AicpuTensor *y = aicpu_output(ctx, 0);
 *         ...
 *         int64_t dims[2] = {x->ndim, count};
 *         return aicpu_set_output_shape(ctx, 0, 2, dims);   // data-dependent output
 *     }
 *
 * Every AI CPU op of a package is compiled into one libcust_aicpu_kernels.so, whose generated
 * registry exports `RunCpuKernel` (the op info's functionName): the AI CPU calls it with a context
 * naming the op type, and it calls that op's compute function. Tensors are contiguous (row-major);
 * `dims` of an output with a data-dependent shape hold its upper bound until the compute function
 * sets the real shape (aicpu_set_output_shape: a compute function that returns AICPU_OK without
 * setting it fails the call); it writes its result from the start of the buffer.
 */
#ifndef OPBUILD_AICPU_H
#define OPBUILD_AICPU_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "opbuild/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AICPU_MAX_DIMS 8
#define AICPU_ERROR_LEN 256
#define AICPU_OK 0u
#define AICPU_ERROR 1u

/* One input or output tensor. */
typedef struct AicpuTensor {
    void *data;
    int32_t dtype; /* OPBUILD_DT_* (GE's ge::DataType) */
    int32_t ndim;
    int64_t dims[AICPU_MAX_DIMS];
    uint64_t capacity; /* bytes at data */
} AicpuTensor;

/* One attribute (scalars and strings). */
typedef struct AicpuAttr {
    const char *name;
    int32_t type; /* AICPU_ATTR_* */
    int32_t reserved;
    int64_t i;     /* int, bool */
    double f;      /* float */
    const char *s; /* str */
} AicpuAttr;

/* What one AI CPU task gets. */
typedef struct AicpuContext {
    const char *op_type;
    uint32_t n_inputs, n_outputs, n_attrs;
    uint32_t shapes_set; /* bit i: aicpu_set_output_shape set output i's shape (i < 32) */
    AicpuTensor *inputs;
    AicpuTensor *outputs;
    const AicpuAttr *attrs;
    char error[AICPU_ERROR_LEN]; /* set by aicpu_error: the message the caller sees */
} AicpuContext;

typedef uint32_t (*aicpu_compute_fn)(AicpuContext *ctx);

/* One entry of a libcust_aicpu_kernels.so registry. */
typedef struct AicpuKernel {
    const char *op_type;
    aicpu_compute_fn compute;
} AicpuKernel;

#define AICPU_API __attribute__((visibility("default")))

static inline const AicpuTensor *aicpu_input(const AicpuContext *ctx, uint32_t i) {
    return i < ctx->n_inputs ? &ctx->inputs[i] : NULL;
}

static inline AicpuTensor *aicpu_output(AicpuContext *ctx, uint32_t i) {
    return i < ctx->n_outputs ? &ctx->outputs[i] : NULL;
}

/* The number of elements of a tensor. */
static inline int64_t aicpu_elements(const AicpuTensor *t) {
    int64_t n = 1;
    for (int32_t d = 0; d < t->ndim; d++) n *= t->dims[d];
    return n;
}

static inline const AicpuAttr *aicpu_attr(const AicpuContext *ctx, const char *name) {
    for (uint32_t i = 0; i < ctx->n_attrs; i++)
        if (strcmp(ctx->attrs[i].name, name) == 0) return &ctx->attrs[i];
    return NULL;
}

static inline int64_t aicpu_attr_int(const AicpuContext *ctx, const char *name) {
    const AicpuAttr *a = aicpu_attr(ctx, name);
    return a ? a->i : 0;
}

static inline int aicpu_attr_bool(const AicpuContext *ctx, const char *name) {
    const AicpuAttr *a = aicpu_attr(ctx, name);
    return a ? a->i != 0 : 0;
}

static inline double aicpu_attr_float(const AicpuContext *ctx, const char *name) {
    const AicpuAttr *a = aicpu_attr(ctx, name);
    return a ? a->f : 0.0;
}

/* Record an error message for the caller; returns AICPU_ERROR (return it from compute). */
static inline uint32_t aicpu_error(AicpuContext *ctx, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->error, sizeof ctx->error, fmt, ap);
    va_end(ap);
    return AICPU_ERROR;
}

/* Report the real shape of a data-dependent output (its rank is the declared bound's). */
static inline uint32_t aicpu_set_output_shape(AicpuContext *ctx, uint32_t i, int32_t ndim, const int64_t *dims) {
    AicpuTensor *t = aicpu_output(ctx, i);
    if (t == NULL) return aicpu_error(ctx, "output %u does not exist", i);
    if (ndim != t->ndim) return aicpu_error(ctx, "output %u: shape of rank %d, the bound has rank %d", i, ndim, t->ndim);
    for (int32_t d = 0; d < ndim; d++) {
        if (dims[d] < 0 || dims[d] > t->dims[d])
            return aicpu_error(ctx, "output %u: dim %d = %lld exceeds its bound %lld", i, d, (long long)dims[d],
                               (long long)t->dims[d]);
    }
    memcpy(t->dims, dims, (size_t)ndim * sizeof *dims);
    if (i < 32) ctx->shapes_set |= 1u << i;
    return AICPU_OK;
}

#ifdef __cplusplus
}
#endif
#endif /* OPBUILD_AICPU_H */
