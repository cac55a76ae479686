/* MulCustom tiling: numpy broadcasting of x and y, checked against the output z.
 *
 * Tiling data: total_length (output elements), block_length (output elements per block, a
 * multiple of 64), rank and z_dims (the broadcast output shape), x_strides / y_strides (element
 * strides of each input over the output dims; 0 where the input is broadcast or has no such dim).
 * Block dim: min(core_num, ceil(total / 4096)), at least 1.
 */
#include "opbuild/tiling.h"
#include "mul_custom_tiling.h"

#define MIN_ELEMS_PER_BLOCK 4096u
#define BLOCK_ALIGN_ELEMS 64u

static void dims_str(const int64_t *dims, uint32_t n, char *buf, size_t len) {
    size_t k = (size_t)snprintf(buf, len, "[");
    for (uint32_t i = 0; i < n && k < len; ++i) k += (size_t)snprintf(buf + k, len - k, i ? ",%lld" : "%lld", (long long)dims[i]);
    if (k < len) snprintf(buf + k, len - k, "]");
}

static const char *dtype_name(int32_t dt) {
    switch (dt) {
        case OPBUILD_DT_FLOAT16: return "float16";
        case OPBUILD_DT_FLOAT: return "float32";
        case OPBUILD_DT_INT32: return "int32";
        case OPBUILD_DT_BF16: return "bfloat16";
        default: return "unsupported";
    }
}

OPBUILD_API uint32_t mul_custom_tiling(TilingContext *ctx) {
    const OpbuildTensorDesc *x = tiling_input(ctx, MUL_CUSTOM_INPUT_X);
    const OpbuildTensorDesc *y = tiling_input(ctx, MUL_CUSTOM_INPUT_Y);
    const OpbuildTensorDesc *z = tiling_output(ctx, MUL_CUSTOM_OUTPUT_Z);
    if (!x || !y || !z) return tiling_fail(ctx, "MulCustom: x, y and z are required");

    /* The binaries: (x, y, z) = fp16 fp16 fp16 | fp32 fp32 fp32 | fp16 fp32 fp32 | int32 int32 int32. */
    int ok = (x->dtype == OPBUILD_DT_FLOAT16 && y->dtype == OPBUILD_DT_FLOAT16 && z->dtype == OPBUILD_DT_FLOAT16) ||
             (x->dtype == OPBUILD_DT_FLOAT && y->dtype == OPBUILD_DT_FLOAT && z->dtype == OPBUILD_DT_FLOAT) ||
             (x->dtype == OPBUILD_DT_FLOAT16 && y->dtype == OPBUILD_DT_FLOAT && z->dtype == OPBUILD_DT_FLOAT) ||
             (x->dtype == OPBUILD_DT_INT32 && y->dtype == OPBUILD_DT_INT32 && z->dtype == OPBUILD_DT_INT32);
    if (!ok)
        return tiling_fail(ctx,
                           "MulCustom: no binary for x %s (%d), y %s (%d), z %s (%d); supported: "
                           "fp16*fp16->fp16, fp32*fp32->fp32, fp16*fp32->fp32, int32*int32->int32",
                           dtype_name(x->dtype), x->dtype, dtype_name(y->dtype), y->dtype, dtype_name(z->dtype), z->dtype);
    if (x->dim_num > OPBUILD_MAX_DIMS || y->dim_num > OPBUILD_MAX_DIMS || z->dim_num > OPBUILD_MAX_DIMS)
        return tiling_fail(ctx, "MulCustom: rank above %d (x %u, y %u, z %u)", OPBUILD_MAX_DIMS, x->dim_num, y->dim_num,
                           z->dim_num);
    for (uint32_t i = 0; i < x->dim_num; ++i)
        if (x->dims[i] < 0) return tiling_fail(ctx, "MulCustom: x dim %u is unknown (%lld)", i, (long long)x->dims[i]);
    for (uint32_t i = 0; i < y->dim_num; ++i)
        if (y->dims[i] < 0) return tiling_fail(ctx, "MulCustom: y dim %u is unknown (%lld)", i, (long long)y->dims[i]);

    /* Broadcast, right-aligned as numpy: each pair of dims must be equal or contain a 1. */
    uint32_t rank = x->dim_num > y->dim_num ? x->dim_num : y->dim_num;
    int64_t zd[OPBUILD_MAX_DIMS], xd[OPBUILD_MAX_DIMS], yd[OPBUILD_MAX_DIMS];
    for (uint32_t k = 0; k < rank; ++k) { /* k counts from the last dim */
        uint32_t d = rank - 1 - k;
        int64_t a = k < x->dim_num ? x->dims[x->dim_num - 1 - k] : 1;
        int64_t b = k < y->dim_num ? y->dims[y->dim_num - 1 - k] : 1;
        if (a != b && a != 1 && b != 1) {
            char xs[160], ys[160];
            dims_str(x->dims, x->dim_num, xs, sizeof xs);
            dims_str(y->dims, y->dim_num, ys, sizeof ys);
            return tiling_fail(ctx,
                               "MulCustom: x %s and y %s do not broadcast: output dim %u (from the end: %d) has x %lld "
                               "vs y %lld",
                               xs, ys, d, -(int)k - 1, (long long)a, (long long)b);
        }
        xd[d] = a;
        yd[d] = b;
        zd[d] = a == 1 ? b : a;
    }
    int same = z->dim_num == rank;
    for (uint32_t d = 0; same && d < rank; ++d) same = z->dims[d] == zd[d];
    if (!same) {
        char want[160], got[160];
        dims_str(zd, rank, want, sizeof want);
        dims_str(z->dims, z->dim_num, got, sizeof got);
        return tiling_fail(ctx, "MulCustom: output z has shape %s but x and y broadcast to %s", got, want);
    }

    MulCustomTilingData *td = TILING_DATA(ctx, MulCustomTilingData);
    if (!td) return OPBUILD_GRAPH_FAILED;
    td->rank = rank;
    uint64_t total = 1;
    int64_t xstride = 1, ystride = 1;
    for (uint32_t k = 0; k < rank; ++k) {
        uint32_t d = rank - 1 - k;
        td->z_dims[d] = zd[d];
        td->x_strides[d] = xd[d] == 1 ? 0 : xstride;
        td->y_strides[d] = yd[d] == 1 ? 0 : ystride;
        xstride *= xd[d];
        ystride *= yd[d];
        total *= (uint64_t)zd[d];
    }
    td->total_length = total;
    tiling_set_block_dim(ctx, tiling_split_elementwise(total, tiling_core_num(ctx), MIN_ELEMS_PER_BLOCK,
                                                       BLOCK_ALIGN_ELEMS, &td->block_length));
    tiling_set_tiling_key(ctx, 0);
    tiling_set_workspace_size(ctx, 0);
    return OPBUILD_GRAPH_SUCCESS;
}
