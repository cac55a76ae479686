/* opbuild/infer.h: the shape and dtype rules an op package's op_proto library is made of.
 *
 * A package's generated op_proto.c (templates/op_proto.c.j2) defines, per op,
 *     uint32_t <Op>InferShape(TilingContext *ctx, OpbuildTensorDesc *outputs);
 *     uint32_t <Op>InferDataType(TilingContext *ctx, OpbuildTensorDesc *outputs);
 * as calls of the helpers below, one per output and rule of the op's spec. The context holds the
 * inputs and attributes (as for a tiling function; no outputs); `outputs` has one element per IR
 * output, whose dims/dim_num (InferShape) or dtype (InferDataType) the function sets.
 *
 * Status: OPBUILD_GRAPH_SUCCESS; OPBUILD_INFER_INVALID when the inputs or attributes break the
 * op's rules (the caller's error, ctx->error says which); OPBUILD_GRAPH_FAILED when an op's own
 * infer-shape function failed. An output with no rule gets GE's unknown rank: dims {-2}.
 */
#ifndef OPBUILD_INFER_H
#define OPBUILD_INFER_H

#include "opbuild/tiling.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OPBUILD_INFER_INVALID 1u
#define OPBUILD_UNKNOWN_RANK (-2)

/* An op's C infer-shape function (`shape: {function: ...}` in the spec, defined in its tiling source). */
typedef uint32_t (*OpbuildInferShapeFunc)(TilingContext *ctx, uint32_t output_index, int64_t *dims, uint32_t *dim_num);

static inline uint32_t infer_invalid(TilingContext *ctx, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->error, sizeof ctx->error, fmt, ap);
    va_end(ap);
    return OPBUILD_INFER_INVALID;
}

/* "[2, 3]", as Python prints a shape list (the messages match the runtime's other messages). */
static inline void infer_shape_text(const OpbuildTensorDesc *d, char *buf, size_t len) {
    size_t n = (size_t)snprintf(buf, len, "[");
    for (uint32_t i = 0; i < d->dim_num && i < OPBUILD_MAX_DIMS && n < len; ++i)
        n += (size_t)snprintf(buf + n, len - n, i ? ", %lld" : "%lld", (long long)d->dims[i]);
    if (n < len) snprintf(buf + n, len - n, "]");
}

static inline void infer_unknown_rank(OpbuildTensorDesc *out) {
    out->dim_num = 1;
    out->dims[0] = OPBUILD_UNKNOWN_RANK;
}

/* The output has the shape of input `input`. */
static inline uint32_t infer_same_as(TilingContext *ctx, OpbuildTensorDesc *out, uint32_t input) {
    const OpbuildTensorDesc *x = tiling_input(ctx, input);
    if (x == NULL) return infer_invalid(ctx, "%s: input %u is absent", ctx->op_type, input);
    out->dim_num = x->dim_num;
    memcpy(out->dims, x->dims, sizeof out->dims);
    return OPBUILD_GRAPH_SUCCESS;
}

/* numpy's broadcast of the inputs listed in `inputs` (right-aligned, 1 stretches); a dynamic
 * (tensor list) input takes part with every tensor of its list. The element count must fit an
 * intptr_t, numpy's limit for one array. */
static inline uint32_t infer_broadcast(TilingContext *ctx, OpbuildTensorDesc *out, const uint32_t *inputs,
                                       const char *const *names, uint32_t count) {
    char listed[OPBUILD_ERROR_LEN] = "";
    size_t used = 0;
    uint32_t rank = 0;
    for (uint32_t k = 0; k < count; ++k) {
        uint32_t tensors = tiling_input_count(ctx, inputs[k]);
        if (tensors == 0) return infer_invalid(ctx, "%s: input %s is absent", ctx->op_type, names[k]);
        for (uint32_t t = 0; t < tensors; ++t) {
            const OpbuildTensorDesc *x = tiling_dynamic_input(ctx, inputs[k], t);
            char shape[160], item[16] = "";
            infer_shape_text(x, shape, sizeof shape);
            if (tensors > 1) snprintf(item, sizeof item, "[%u]", t);
            if (used < sizeof listed)
                used += (size_t)snprintf(listed + used, sizeof listed - used, "%s%s%s%s", used ? ", " : "", names[k],
                                         item, shape);
            if (x->dim_num > rank) rank = x->dim_num;
        }
    }
    int64_t dims[OPBUILD_MAX_DIMS];
    for (uint32_t i = 0; i < rank; ++i) dims[i] = 1;
    for (uint32_t k = 0; k < count; ++k) {
        for (uint32_t t = 0; t < tiling_input_count(ctx, inputs[k]); ++t) {
            const OpbuildTensorDesc *x = tiling_dynamic_input(ctx, inputs[k], t);
            uint32_t skip = rank - x->dim_num;
            for (uint32_t i = 0; i < x->dim_num; ++i) {
                int64_t d = x->dims[i];
                if (d == 1) continue;
                if (dims[skip + i] != 1 && dims[skip + i] != d)
                    return infer_invalid(ctx, "%s: shapes do not broadcast: %s", ctx->op_type, listed);
                dims[skip + i] = d;
            }
        }
    }
    int64_t total = 1;
    for (uint32_t i = 0; i < rank; ++i)
        if (dims[i] == 0) total = 0; /* empty: any other dims fit */
    for (uint32_t i = 0; i < rank && total != 0; ++i) {
        if (__builtin_mul_overflow(total, dims[i], &total) || total > (int64_t)INTPTR_MAX) {
            out->dim_num = rank;
            memcpy(out->dims, dims, rank * sizeof dims[0]);
            char shape[160];
            infer_shape_text(out, shape, sizeof shape);
            return infer_invalid(ctx, "%s: shapes %s broadcast to %s, which is too large (more than %lld elements)",
                                 ctx->op_type, listed, shape, (long long)INTPTR_MAX);
        }
    }
    out->dim_num = rank;
    memcpy(out->dims, dims, rank * sizeof dims[0]);
    return OPBUILD_GRAPH_SUCCESS;
}

/* A reduction of input `input` over the list_int attribute `axes_attr` (every axis when it is
 * empty or absent: -1), keeping reduced dims as 1 when the bool attribute `keep_dims_attr` is set. */
static inline uint32_t infer_reduce(TilingContext *ctx, OpbuildTensorDesc *out, uint32_t input, int32_t axes_attr,
                                    int32_t keep_dims_attr) {
    const OpbuildTensorDesc *x = tiling_input(ctx, input);
    if (x == NULL) return infer_invalid(ctx, "%s: input %u is absent", ctx->op_type, input);
    int64_t rank = x->dim_num;
    uint32_t count = 0;
    const int64_t *axes = axes_attr >= 0 ? tiling_attr_list_int(ctx, (uint32_t)axes_attr, &count) : NULL;
    bool keep = keep_dims_attr >= 0 && tiling_attr_bool(ctx, (uint32_t)keep_dims_attr);
    bool reduced[OPBUILD_MAX_DIMS] = {false};
    for (uint32_t k = 0; k < count; ++k) {
        int64_t a = axes[k];
        if (a < -rank || a >= (rank > 1 ? rank : 1))
            return infer_invalid(ctx, "%s: axis %lld is out of range for rank %lld", ctx->op_type, (long long)a,
                                 (long long)rank);
        int64_t axis = rank ? (a % rank + rank) % rank : 0;
        if (reduced[axis]) {
            char text[160];
            size_t n = (size_t)snprintf(text, sizeof text, "[");
            for (uint32_t j = 0; j < count && n < sizeof text; ++j)
                n += (size_t)snprintf(text + n, sizeof text - n, j ? ", %lld" : "%lld", (long long)axes[j]);
            if (n < sizeof text) snprintf(text + n, sizeof text - n, "]");
            return infer_invalid(ctx, "%s: repeated axis in %s", ctx->op_type, text);
        }
        reduced[axis] = true;
    }
    uint32_t n = 0;
    for (int64_t i = 0; i < rank; ++i) {
        bool gone = count == 0 || reduced[i];
        if (!gone) out->dims[n++] = x->dims[i];
        else if (keep) out->dims[n++] = 1;
    }
    out->dim_num = n;
    return OPBUILD_GRAPH_SUCCESS;
}

/* Kinds of one dimension of a data-dependent output's bound (spec: `shape: {data_dependent: true,
 * max: [...]}`, AI CPU ops): N, rank(x), size(x), dim(x, i). */
#define OPBUILD_BOUND_CONST 0
#define OPBUILD_BOUND_RANK 1
#define OPBUILD_BOUND_SIZE 2
#define OPBUILD_BOUND_DIM 3

/* A data-dependent output: its upper bound, the buffer the caller allocates (the compute function
 * reports the real shape after the run). Dim d is `bounds[3d..3d+2]` = {kind, input, value}:
 * CONST `value`; RANK or SIZE of input `input`; DIM of input `input` at axis `value` (negative:
 * from the end). `texts` (the spec's entries) and `names` (their inputs) are for messages. */
static inline uint32_t infer_bound(TilingContext *ctx, OpbuildTensorDesc *out, const int64_t *bounds, uint32_t rank,
                                   const char *const *texts, const char *const *names) {
    if (rank > OPBUILD_MAX_DIMS)
        return infer_invalid(ctx, "%s: output bound of rank %u (at most %d)", ctx->op_type, rank, OPBUILD_MAX_DIMS);
    int64_t dims[OPBUILD_MAX_DIMS];
    for (uint32_t d = 0; d < rank; ++d) {
        int64_t kind = bounds[3 * d], value = bounds[3 * d + 2];
        if (kind == OPBUILD_BOUND_CONST) {
            dims[d] = value;
            continue;
        }
        const OpbuildTensorDesc *x = tiling_input(ctx, (uint32_t)bounds[3 * d + 1]);
        if (x == NULL) return infer_invalid(ctx, "%s: output bound %s: input '%s' is absent", ctx->op_type, texts[d], names[d]);
        if (kind == OPBUILD_BOUND_RANK) {
            dims[d] = x->dim_num;
        } else if (kind == OPBUILD_BOUND_SIZE) {
            int64_t total = 1;
            for (uint32_t i = 0; i < x->dim_num; ++i)
                if (__builtin_mul_overflow(total, x->dims[i], &total) || total > (int64_t)INTPTR_MAX)
                    return infer_invalid(ctx, "%s: output bound %s: too large", ctx->op_type, texts[d]);
            dims[d] = total;
        } else {
            int64_t axis = value < 0 ? value + (int64_t)x->dim_num : value;
            if (axis < 0 || axis >= (int64_t)x->dim_num) {
                char shape[160];
                infer_shape_text(x, shape, sizeof shape);
                return infer_invalid(ctx, "%s: output bound %s: input '%s' of shape %s has no axis %lld", ctx->op_type,
                                     texts[d], names[d], shape, (long long)value);
            }
            dims[d] = x->dims[axis];
        }
    }
    out->dim_num = rank;
    memcpy(out->dims, dims, rank * sizeof dims[0]);
    return OPBUILD_GRAPH_SUCCESS;
}

/* The op's own infer-shape function `fn` (named `symbol` in messages) for output `index`. */
static inline uint32_t infer_function(TilingContext *ctx, OpbuildTensorDesc *out, uint32_t index,
                                      OpbuildInferShapeFunc fn, const char *symbol) {
    int64_t dims[OPBUILD_MAX_DIMS];
    uint32_t dim_num = 0;
    ctx->error[0] = '\0';
    uint32_t status = fn(ctx, index, dims, &dim_num);
    if (status != OPBUILD_GRAPH_SUCCESS) {
        char reason[OPBUILD_ERROR_LEN];
        if (ctx->error[0]) snprintf(reason, sizeof reason, "%s", ctx->error);
        else snprintf(reason, sizeof reason, "returned %u", status);
        /* (the message keeps as much of the reason as fits: its end is cut, never the op's name) */
        int head = snprintf(NULL, 0, "%s: infer-shape function %s failed: ", ctx->op_type, symbol);
        int room = head < 0 || head >= (int)sizeof ctx->error ? 0 : (int)sizeof ctx->error - 1 - head;
        snprintf(ctx->error, sizeof ctx->error, "%s: infer-shape function %s failed: %.*s", ctx->op_type, symbol, room,
                 reason);
        return OPBUILD_GRAPH_FAILED;
    }
    if (dim_num > OPBUILD_MAX_DIMS) {
        snprintf(ctx->error, sizeof ctx->error, "%s: infer-shape function %s returned rank %u (at most %d)",
                 ctx->op_type, symbol, dim_num, OPBUILD_MAX_DIMS);
        return OPBUILD_GRAPH_FAILED;
    }
    for (uint32_t i = 0; i < dim_num; ++i) {
        if (dims[i] < 0) {
            snprintf(ctx->error, sizeof ctx->error, "%s: infer-shape function %s returned a negative dim %lld",
                     ctx->op_type, symbol, (long long)dims[i]);
            return OPBUILD_GRAPH_FAILED;
        }
        out->dims[i] = dims[i];
    }
    out->dim_num = dim_num;
    return OPBUILD_GRAPH_SUCCESS;
}

/* The output dtypes of the first declared combination whose input dtypes match the inputs
 * (absent optional inputs match anything). `table` has `rows` rows of `inputs` input dtypes
 * then `outputs` output dtypes; `names` (the inputs) and `declared` (the table as text) are for the
 * message. */
static inline uint32_t infer_dtypes(TilingContext *ctx, OpbuildTensorDesc *out, const int32_t *table, uint32_t rows,
                                    uint32_t inputs, uint32_t outputs, const char *const *names,
                                    const char *(*dtype_name)(int32_t), const char *declared) {
    for (uint32_t r = 0; r < rows; ++r) {
        const int32_t *row = table + (size_t)r * (inputs + outputs);
        bool match = true;
        for (uint32_t i = 0; i < inputs && match; ++i) {
            const OpbuildTensorDesc *x = tiling_input(ctx, i);
            match = x == NULL || x->dtype == row[i];
        }
        if (match) {
            for (uint32_t o = 0; o < outputs; ++o) out[o].dtype = row[inputs + o];
            return OPBUILD_GRAPH_SUCCESS;
        }
    }
    char given[OPBUILD_ERROR_LEN] = "";
    size_t n = 0;
    for (uint32_t i = 0; i < inputs && n < sizeof given; ++i) {
        const OpbuildTensorDesc *x = tiling_input(ctx, i);
        if (x != NULL)
            n += (size_t)snprintf(given + n, sizeof given - n, "%s%s=%s", n ? ", " : "", names[i], dtype_name(x->dtype));
    }
    return infer_invalid(ctx, "%s: no declared dtype combination has %s (declared: %s)", ctx->op_type, given, declared);
}

#ifdef __cplusplus
}
#endif

#endif /* OPBUILD_INFER_H */
