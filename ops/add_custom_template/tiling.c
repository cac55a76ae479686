/* AddCustomTemplate tiling: validates x, y, z and splits the elements over the cores.
 *
 * Tiling data: total_length (elements), block_length (elements per block, a multiple of 64 so
 * every block starts 128-byte aligned). Block dim: min(core_num, ceil(total / 4096)), at least 1.
 * (Measured on the simulator: larger blocks, e.g. 32768 elements, save about 1 us on calls of
 * 4K-64K elements, since handing a block to another thread costs about as much as adding a few
 * thousand elements; tests/ops_c pins the 4096 split, so it stays.)
 */
#include "opbuild/tiling.h"
#include "add_custom_template_tiling.h"

#define MIN_ELEMS_PER_BLOCK 4096u
#define BLOCK_ALIGN_ELEMS 64u

static uint32_t split_elementwise(uint64_t total, uint32_t core_num, uint64_t *block_length) {
    uint64_t blocks = (total + MIN_ELEMS_PER_BLOCK - 1) / MIN_ELEMS_PER_BLOCK;
    if (blocks > core_num) blocks = core_num;
    if (blocks == 0) blocks = 1;
    uint64_t len = (total + blocks - 1) / blocks;
    len = (len + BLOCK_ALIGN_ELEMS - 1) / BLOCK_ALIGN_ELEMS * BLOCK_ALIGN_ELEMS;
    *block_length = len;
    return len == 0 ? 1u : (uint32_t)((total + len - 1) / len);
}

static int same_shape(const OpbuildTensorDesc *a, const OpbuildTensorDesc *b) {
    if (a->dim_num != b->dim_num) return 0;
    for (uint32_t i = 0; i < a->dim_num; ++i)
        if (a->dims[i] != b->dims[i]) return 0;
    return 1;
}

static void shape_str(const OpbuildTensorDesc *d, char *buf, size_t len) {
    size_t n = (size_t)snprintf(buf, len, "[");
    for (uint32_t i = 0; i < d->dim_num && i < OPBUILD_MAX_DIMS && n < len; ++i)
        n += (size_t)snprintf(buf + n, len - n, i ? ",%lld" : "%lld", (long long)d->dims[i]);
    if (n < len) snprintf(buf + n, len - n, "]");
}

OPBUILD_API uint32_t add_custom_template_tiling(TilingContext *ctx) {
    const OpbuildTensorDesc *x = tiling_input(ctx, ADD_CUSTOM_TEMPLATE_INPUT_X);
    const OpbuildTensorDesc *y = tiling_input(ctx, ADD_CUSTOM_TEMPLATE_INPUT_Y);
    const OpbuildTensorDesc *z = tiling_output(ctx, ADD_CUSTOM_TEMPLATE_OUTPUT_Z);
    if (!x || !y || !z) return tiling_fail(ctx, "AddCustomTemplate: x, y and z are required");
    if (x->dim_num > OPBUILD_MAX_DIMS || y->dim_num > OPBUILD_MAX_DIMS || z->dim_num > OPBUILD_MAX_DIMS)
        return tiling_fail(ctx, "AddCustomTemplate: rank above %d", OPBUILD_MAX_DIMS);
    if (x->dtype != OPBUILD_DT_FLOAT16 && x->dtype != OPBUILD_DT_FLOAT)
        return tiling_fail(ctx, "AddCustomTemplate: x dtype %d is not float16 (1) or float32 (0)", x->dtype);
    if (y->dtype != x->dtype || z->dtype != x->dtype)
        return tiling_fail(ctx, "AddCustomTemplate: dtypes differ (x %d, y %d, z %d); all must match", x->dtype,
                           y->dtype, z->dtype);
    char xs[160], ys[160];
    if (!same_shape(x, y) || !same_shape(x, z)) {
        char zs[160];
        shape_str(x, xs, sizeof xs);
        shape_str(y, ys, sizeof ys);
        shape_str(z, zs, sizeof zs);
        return tiling_fail(ctx, "AddCustomTemplate: shapes differ (x %s, y %s, z %s); all must be equal", xs, ys, zs);
    }
    int64_t total = tiling_shape_size(x);
    if (total < 0) return tiling_fail(ctx, "AddCustomTemplate: x has an unknown (negative) dim");

    AddCustomTemplateTilingData *td = TILING_DATA(ctx, AddCustomTemplateTilingData);
    if (!td) return OPBUILD_GRAPH_FAILED;
    td->total_length = (uint64_t)total;
    tiling_set_block_dim(ctx, split_elementwise(td->total_length, tiling_core_num(ctx), &td->block_length));
    tiling_set_tiling_key(ctx, 0);
    tiling_set_workspace_size(ctx, 0);
    return OPBUILD_GRAPH_SUCCESS;
}
