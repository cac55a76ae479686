/* ReduceSumCustom tiling: y = sum(x, axes, keep_dims) for any set of axes.
 *
 * The input is contiguous row-major, so after dropping size-1 dims and merging neighbouring dims
 * of the same kind (kept or reduced), x is described by two small strided views: the kept dims
 * (out_rank, out_dims, out_strides; out_count outputs, row-major = y's order) and the reduced dims
 * (red_rank, red_dims, red_strides; red_count elements summed into each output). Input offset of
 * (output o, reduction index r) = offset_out(o) + offset_red(r).
 *
 * Block split (two phases, see kernel.c): phase 1 runs red_blocks x out_blocks blocks; block b
 * sums reduction slice b / out_blocks of output slice b % out_blocks into its partial row
 * (red_blocks rows of out_count floats in the workspace); phase 2 (after SyncAll) splits the
 * outputs evenly over all blocks and combines the rows. With B = min(core_num, 1024,
 * ceil(x elements / 4096)), red_blocks = min(B, ceil(red_count / 256)) and out_blocks =
 * min(B / red_blocks, out_count): a full reduction of a large tensor splits the reduction over
 * many blocks, a reduction of many short rows splits the rows. The split depends only on the
 * shape and core_num, never on the thread count, so the deterministic binaries are bit-identical
 * across runs.
 *
 * Workspace: (red_blocks + 1) * out_count floats (partial rows, then the atomic accumulator used
 * by the non-deterministic binaries).
 */
#include "opbuild/tiling.h"
#include "reduce_sum_custom_tiling.h"

#define MIN_ELEMS_PER_BLOCK 4096u
#define MIN_REDUCE_PER_BLOCK 256u
#define MAX_BLOCK_DIM 1024u

static void dims_str(const int64_t *dims, uint32_t n, char *buf, size_t len) {
    size_t k = (size_t)snprintf(buf, len, "[");
    for (uint32_t i = 0; i < n && k < len; ++i) k += (size_t)snprintf(buf + k, len - k, i ? ",%lld" : "%lld", (long long)dims[i]);
    if (k < len) snprintf(buf + k, len - k, "]");
}

static uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

OPBUILD_API uint32_t reduce_sum_custom_tiling(TilingContext *ctx) {
    const OpbuildTensorDesc *x = tiling_input(ctx, REDUCE_SUM_CUSTOM_INPUT_X);
    const OpbuildTensorDesc *y = tiling_output(ctx, REDUCE_SUM_CUSTOM_OUTPUT_Y);
    if (!x || !y) return tiling_fail(ctx, "ReduceSumCustom: x and y are required");
    if (x->dtype != OPBUILD_DT_FLOAT && x->dtype != OPBUILD_DT_FLOAT16)
        return tiling_fail(ctx, "ReduceSumCustom: x dtype %d is not float32 (0) or float16 (1)", x->dtype);
    if (y->dtype != x->dtype)
        return tiling_fail(ctx, "ReduceSumCustom: y dtype %d differs from x dtype %d", y->dtype, x->dtype);
    const uint32_t rank = x->dim_num;
    if (rank > OPBUILD_MAX_DIMS || y->dim_num > OPBUILD_MAX_DIMS)
        return tiling_fail(ctx, "ReduceSumCustom: rank above %d (x %u, y %u)", OPBUILD_MAX_DIMS, rank, y->dim_num);
    for (uint32_t d = 0; d < rank; ++d)
        if (x->dims[d] < 0) return tiling_fail(ctx, "ReduceSumCustom: x dim %u is unknown (%lld)", d, (long long)x->dims[d]);

    /* axes: empty = all; negative counts from the end; each at most once. */
    const OpbuildAttrValue *axes_attr = tiling_attr(ctx, REDUCE_SUM_CUSTOM_ATTR_AXES);
    if (axes_attr && axes_attr->type != OPBUILD_ATTR_LIST_INT)
        return tiling_fail(ctx, "ReduceSumCustom: attr axes has type %d, expected list_int", axes_attr->type);
    const OpbuildAttrValue *keep_attr = tiling_attr(ctx, REDUCE_SUM_CUSTOM_ATTR_KEEP_DIMS);
    if (keep_attr && keep_attr->type != OPBUILD_ATTR_BOOL)
        return tiling_fail(ctx, "ReduceSumCustom: attr keep_dims has type %d, expected bool", keep_attr->type);
    uint32_t naxes = 0;
    const int64_t *axes = tiling_attr_list_int(ctx, REDUCE_SUM_CUSTOM_ATTR_AXES, &naxes);
    const bool keep_dims = tiling_attr_bool(ctx, REDUCE_SUM_CUSTOM_ATTR_KEEP_DIMS);
    uint32_t mask = 0;
    if (naxes == 0) {
        mask = rank == 0 ? 0u : (uint32_t)((1u << rank) - 1u);
    } else {
        if (axes == NULL) return tiling_fail(ctx, "ReduceSumCustom: attr axes has %u values but no data", naxes);
        for (uint32_t i = 0; i < naxes; ++i) {
            int64_t a = axes[i];
            if (a < -(int64_t)rank || a >= (int64_t)rank)
                return tiling_fail(ctx, "ReduceSumCustom: axes[%u] = %lld is out of range for x of rank %u (allowed %d..%d)",
                                   i, (long long)a, rank, -(int)rank, (int)rank - 1);
            uint32_t n = (uint32_t)(a < 0 ? a + (int64_t)rank : a);
            if (mask & (1u << n))
                return tiling_fail(ctx, "ReduceSumCustom: axes[%u] = %lld repeats axis %u", i, (long long)a, n);
            mask |= 1u << n;
        }
    }

    /* The output shape y must have. */
    int64_t want[OPBUILD_MAX_DIMS];
    uint32_t want_rank = 0;
    for (uint32_t d = 0; d < rank; ++d) {
        if (mask & (1u << d)) {
            if (keep_dims) want[want_rank++] = 1;
        } else {
            want[want_rank++] = x->dims[d];
        }
    }
    int same = y->dim_num == want_rank;
    for (uint32_t d = 0; same && d < want_rank; ++d) same = y->dims[d] == want[d];
    if (!same) {
        char w[160], g[160];
        dims_str(want, want_rank, w, sizeof w);
        dims_str(y->dims, y->dim_num, g, sizeof g);
        return tiling_fail(ctx, "ReduceSumCustom: y has shape %s but sum over the axes (keep_dims=%s) gives %s", g,
                           keep_dims ? "true" : "false", w);
    }

    /* Coalesce into the kept and the reduced strided views. */
    int64_t stride[OPBUILD_MAX_DIMS];
    int64_t s = 1;
    for (uint32_t k = rank; k-- > 0;) {
        stride[k] = s;
        s *= x->dims[k];
    }
    ReduceSumCustomTilingData *td = TILING_DATA(ctx, ReduceSumCustomTilingData);
    if (!td) return OPBUILD_GRAPH_FAILED;
    int prev_kind = -1; /* kind of the last group: 0 kept, 1 reduced */
    for (uint32_t d = 0; d < rank; ++d) {
        if (x->dims[d] == 1) continue;
        int kind = (mask >> d) & 1u;
        int64_t *dims = kind ? td->red_dims : td->out_dims;
        int64_t *strides = kind ? td->red_strides : td->out_strides;
        uint32_t *n = kind ? &td->red_rank : &td->out_rank;
        if (kind == prev_kind) { /* contiguous with the previous dim of the same kind: merge */
            dims[*n - 1] *= x->dims[d];
            strides[*n - 1] = stride[d];
        } else {
            dims[*n] = x->dims[d];
            strides[*n] = stride[d];
            ++*n;
        }
        prev_kind = kind;
    }
    td->out_count = 1;
    for (uint32_t i = 0; i < td->out_rank; ++i) td->out_count *= (uint64_t)td->out_dims[i];
    td->red_count = 1;
    for (uint32_t i = 0; i < td->red_rank; ++i) td->red_count *= (uint64_t)td->red_dims[i];

    uint64_t total = td->out_count * td->red_count;
    uint64_t blocks = ceil_div(total, MIN_ELEMS_PER_BLOCK);
    uint32_t core_num = tiling_core_num(ctx);
    if (blocks > core_num) blocks = core_num;
    if (blocks > MAX_BLOCK_DIM) blocks = MAX_BLOCK_DIM;
    if (blocks == 0) blocks = 1;
    uint64_t red_blocks = ceil_div(td->red_count, MIN_REDUCE_PER_BLOCK);
    if (red_blocks > blocks) red_blocks = blocks;
    if (red_blocks == 0) red_blocks = 1;
    uint64_t out_blocks = blocks / red_blocks;
    if (out_blocks > td->out_count) out_blocks = td->out_count;
    if (out_blocks == 0) out_blocks = 1;
    td->red_blocks = (uint32_t)red_blocks;
    td->out_blocks = (uint32_t)out_blocks;
    td->block_dim = (uint32_t)(red_blocks * out_blocks);

    tiling_set_block_dim(ctx, td->block_dim);
    tiling_set_tiling_key(ctx, 0);
    tiling_set_workspace_size(ctx, (red_blocks + 1) * td->out_count * sizeof(float));
    return OPBUILD_GRAPH_SUCCESS;
}
