/* opbuild/tiling.h: what a tiling function and a C GenSimplifiedKey callback see.
 *
 * The TilingContext is a plain C struct filled by the host runtime (Python, through ctypes) so
 * that the tiling library needs no runtime library to link against and stays self-contained
 * (it can be shipped inside an .om file). Its layout is ABI: opbuild/runtime/host/tiling_context.py
 * mirrors it field for field, and `abi_version` must match OPBUILD_TILING_ABI_VERSION.
 *
 * Signatures (as CANN's TilingFunc and GenSimplifiedKeyKernelFunc):
 *     uint32_t my_tiling(TilingContext *ctx);                 0 = success
 *     uint32_t my_gen_key(TilingContext *ctx, char *key);     appends the fragment to `key`
 *     uint32_t my_infer(TilingContext *ctx, uint32_t output_index, int64_t *dims, uint32_t *dim_num);
 *         an output's shape (`shape: {function: my_infer}` in the spec): writes at most
 *         OPBUILD_MAX_DIMS dims; the context holds the inputs and attributes, no outputs.
 */
#ifndef OPBUILD_TILING_H
#define OPBUILD_TILING_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "opbuild/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OPBUILD_TILING_ABI_VERSION 1u
#define OPBUILD_MAX_DIMS 8
#define OPBUILD_ERROR_LEN 256
#define OPBUILD_GRAPH_SUCCESS 0u
#define OPBUILD_GRAPH_FAILED 0xFFFFFFFFu
/* ge::GRAPH_PARAM_INVALID: the call's parameters are invalid (shapes the op does not take...): the
 * aclnn call fails with 161002 ACLNN_ERR_PARAM_INVALID instead of 561000 (`tiling_invalid`). */
#define OPBUILD_GRAPH_PARAM_INVALID 50331649u

#define OPBUILD_API __attribute__((visibility("default")))

/* One tensor instance: dtype, storage format, shape and strides (in elements). */
typedef struct OpbuildTensorDesc {
    int32_t dtype;
    int32_t format;
    uint32_t dim_num;
    uint32_t reserved;
    int64_t dims[OPBUILD_MAX_DIMS];
    int64_t strides[OPBUILD_MAX_DIMS];
} OpbuildTensorDesc;

/* One attribute value. Scalars use i (int, bool) or f (float); str uses s; lists use list_*
 * with `count` elements. */
typedef struct OpbuildAttrValue {
    int32_t type;
    uint32_t count;
    int64_t i;
    double f;
    const char *s;
    const int64_t *list_int;
    const double *list_float;
    const uint8_t *list_bool;
} OpbuildAttrValue;

/* IR parameter i (input or output) owns descs[start[i] .. start[i] + count[i]).
 * count is 1 for a required tensor, 0 or 1 for an optional one, n for a dynamic list. */
typedef struct TilingContext {
    uint32_t abi_version;
    uint32_t input_num;
    uint32_t output_num;
    uint32_t attr_num;
    const uint32_t *input_start;
    const uint32_t *input_count;
    const OpbuildTensorDesc *input_descs;
    const uint32_t *output_start;
    const uint32_t *output_count;
    const OpbuildTensorDesc *output_descs;
    const OpbuildAttrValue *attrs;
    const char *op_type;
    const char *soc_version;
    uint32_t core_num;
    uint32_t deterministic;    /* 0 or 1 */
    uint32_t impl_mode;        /* p: 0 default, 1 high_performance, 2 high_precision */
    uint32_t reserved0;
    uint64_t ub_size;
    /* Results written by the tiling function. */
    uint32_t block_dim;
    uint32_t reserved1;
    uint64_t tiling_key;
    uint64_t workspace_size;
    void *tiling_data;             /* buffer of tiling_data_capacity bytes */
    uint64_t tiling_data_capacity;
    uint64_t tiling_data_size;     /* bytes the function declared it wrote */
    char error[OPBUILD_ERROR_LEN]; /* message of a failed tiling or key callback */
} TilingContext;

/* ---- inputs and outputs ------------------------------------------------------------------ */

static inline uint32_t tiling_input_count(const TilingContext *ctx, uint32_t ir_index) {
    return ir_index < ctx->input_num ? ctx->input_count[ir_index] : 0;
}

/* The k-th instance of IR input ir_index (k = 0 for a plain tensor); NULL if absent. */
static inline const OpbuildTensorDesc *tiling_dynamic_input(const TilingContext *ctx, uint32_t ir_index,
                                                            uint32_t k) {
    if (ir_index >= ctx->input_num || k >= ctx->input_count[ir_index]) return NULL;
    return &ctx->input_descs[ctx->input_start[ir_index] + k];
}

static inline const OpbuildTensorDesc *tiling_input(const TilingContext *ctx, uint32_t ir_index) {
    return tiling_dynamic_input(ctx, ir_index, 0);
}

static inline const OpbuildTensorDesc *tiling_output(const TilingContext *ctx, uint32_t ir_index) {
    if (ir_index >= ctx->output_num || ctx->output_count[ir_index] == 0) return NULL;
    return &ctx->output_descs[ctx->output_start[ir_index]];
}

/* Number of elements (1 for a scalar of rank 0, 0 if any dim is 0). */
static inline int64_t tiling_shape_size(const OpbuildTensorDesc *d) {
    int64_t n = 1;
    for (uint32_t i = 0; i < d->dim_num; ++i) n *= d->dims[i];
    return n;
}

static inline uint32_t tiling_dtype_size(int32_t dtype) { return opbuild_dtype_size(dtype); }

static inline int tiling_same_shape(const OpbuildTensorDesc *a, const OpbuildTensorDesc *b) {
    if (a->dim_num != b->dim_num) return 0;
    for (uint32_t i = 0; i < a->dim_num; ++i)
        if (a->dims[i] != b->dims[i]) return 0;
    return 1;
}

/* "[2,3,4]": a shape for error messages. */
static inline void tiling_shape_str(const OpbuildTensorDesc *d, char *buf, size_t len) {
    size_t n = (size_t)snprintf(buf, len, "[");
    for (uint32_t i = 0; i < d->dim_num && i < OPBUILD_MAX_DIMS && n < len; ++i)
        n += (size_t)snprintf(buf + n, len - n, i ? ",%lld" : "%lld", (long long)d->dims[i]);
    if (n < len) snprintf(buf + n, len - n, "]");
}

/* The usual elementwise split: at most `core_num` blocks of at least `min_per_block` elements,
 * each block a multiple of `align` elements (so blocks start aligned). Sets *block_length and
 * returns the block dim (>= 1; blocks past the end are never launched). */
static inline uint32_t tiling_split_elementwise(uint64_t total, uint32_t core_num, uint64_t min_per_block,
                                                uint64_t align, uint64_t *block_length) {
    uint64_t blocks = (total + min_per_block - 1) / min_per_block;
    if (blocks > core_num) blocks = core_num;
    if (blocks == 0) blocks = 1;
    uint64_t len = (total + blocks - 1) / blocks;
    len = (len + align - 1) / align * align;
    *block_length = len;
    return len == 0 ? 1u : (uint32_t)((total + len - 1) / len);
}

/* ---- attributes -------------------------------------------------------------------------- */

static inline const OpbuildAttrValue *tiling_attr(const TilingContext *ctx, uint32_t index) {
    return index < ctx->attr_num ? &ctx->attrs[index] : NULL;
}
static inline int64_t tiling_attr_int(const TilingContext *ctx, uint32_t index) {
    const OpbuildAttrValue *a = tiling_attr(ctx, index);
    return a ? a->i : 0;
}
static inline double tiling_attr_float(const TilingContext *ctx, uint32_t index) {
    const OpbuildAttrValue *a = tiling_attr(ctx, index);
    return a ? a->f : 0.0;
}
static inline bool tiling_attr_bool(const TilingContext *ctx, uint32_t index) {
    const OpbuildAttrValue *a = tiling_attr(ctx, index);
    return a ? a->i != 0 : false;
}
static inline const char *tiling_attr_str(const TilingContext *ctx, uint32_t index) {
    const OpbuildAttrValue *a = tiling_attr(ctx, index);
    return a ? a->s : NULL;
}
static inline const int64_t *tiling_attr_list_int(const TilingContext *ctx, uint32_t index, uint32_t *count) {
    const OpbuildAttrValue *a = tiling_attr(ctx, index);
    *count = a ? a->count : 0;
    return a ? a->list_int : NULL;
}
static inline const double *tiling_attr_list_float(const TilingContext *ctx, uint32_t index, uint32_t *count) {
    const OpbuildAttrValue *a = tiling_attr(ctx, index);
    *count = a ? a->count : 0;
    return a ? a->list_float : NULL;
}
static inline const uint8_t *tiling_attr_list_bool(const TilingContext *ctx, uint32_t index, uint32_t *count) {
    const OpbuildAttrValue *a = tiling_attr(ctx, index);
    *count = a ? a->count : 0;
    return a ? a->list_bool : NULL;
}

/* ---- platform ---------------------------------------------------------------------------- */

static inline uint32_t tiling_core_num(const TilingContext *ctx) { return ctx->core_num; }
static inline uint64_t tiling_ub_size(const TilingContext *ctx) { return ctx->ub_size; }
static inline bool tiling_deterministic(const TilingContext *ctx) { return ctx->deterministic != 0; }

/* ---- results ----------------------------------------------------------------------------- */

static inline void tiling_set_block_dim(TilingContext *ctx, uint32_t block_dim) { ctx->block_dim = block_dim; }
static inline void tiling_set_tiling_key(TilingContext *ctx, uint64_t key) { ctx->tiling_key = key; }
static inline void tiling_set_workspace_size(TilingContext *ctx, uint64_t bytes) { ctx->workspace_size = bytes; }

/* Record the message of a failed call (ctx->error) and return `status`. */
static inline uint32_t tiling_vreport(TilingContext *ctx, uint32_t status, const char *fmt, va_list ap) {
    vsnprintf(ctx->error, OPBUILD_ERROR_LEN, fmt, ap);
    return status;
}

/* Record a failure message; returns OPBUILD_GRAPH_FAILED so a function can `return tiling_fail(...)`. */
static inline uint32_t tiling_fail(TilingContext *ctx, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    uint32_t status = tiling_vreport(ctx, OPBUILD_GRAPH_FAILED, fmt, ap);
    va_end(ap);
    return status;
}

/* Record why the call's parameters are invalid; returns OPBUILD_GRAPH_PARAM_INVALID (the caller
 * gets 161002, not the 561000 of a failure): `return tiling_invalid(ctx, "shapes differ ...")`. */
static inline uint32_t tiling_invalid(TilingContext *ctx, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    uint32_t status = tiling_vreport(ctx, OPBUILD_GRAPH_PARAM_INVALID, fmt, ap);
    va_end(ap);
    return status;
}

/* The tiling-data buffer as a struct of `size` bytes, zeroed; NULL (with ctx->error set) if the
 * runtime's buffer is smaller than the struct. */
static inline void *tiling_data_ptr(TilingContext *ctx, uint64_t size) {
    if (size > ctx->tiling_data_capacity || ctx->tiling_data == NULL) {
        snprintf(ctx->error, OPBUILD_ERROR_LEN, "tiling data of %llu bytes exceeds the buffer of %llu bytes",
                 (unsigned long long)size, (unsigned long long)ctx->tiling_data_capacity);
        return NULL;
    }
    memset(ctx->tiling_data, 0, size);
    ctx->tiling_data_size = size;
    return ctx->tiling_data;
}

/* `Type *td = TILING_DATA(ctx, AddCustomTemplateTilingData); if (!td) return OPBUILD_GRAPH_FAILED;` */
#define TILING_DATA(ctx, Type) ((Type *)tiling_data_ptr((ctx), sizeof(Type)))

/* Append text to a GenSimplifiedKey buffer (the runtime gives 256 usable bytes). */
static inline uint32_t simplified_key_append(TilingContext *ctx, char *key, const char *text) {
    size_t have = strlen(key), add = strlen(text);
    if (have + add > OPBUILD_MAX_SIMPLIFIED_KEY_LEN)
        return tiling_fail(ctx, "simplified key fragment longer than %d bytes", OPBUILD_MAX_SIMPLIFIED_KEY_LEN);
    memcpy(key + have, text, add + 1);
    return OPBUILD_GRAPH_SUCCESS;
}

#ifdef __cplusplus
}
#endif
#endif /* OPBUILD_TILING_H */
