/* AddCustomTemplate tiling: validates x, y, z and splits the elements over the cores.
 *
 * Tiling data: total_length (elements), block_length (elements per block, a multiple of 64 so
 * every block starts 128-byte aligned), tail_length (total % 64: the elements of the last, partial
 * row). Block dim: min(core_num, ceil(total / 4096)), at least 1.
 * Tiling key (op.yaml tiling.keys): 0 when total is a multiple of 64 (every block is whole rows),
 * 1 otherwise (the block holding the end runs the kernel's tail path).
 * (Measured on the simulator: larger blocks, e.g. 32768 elements, save about 1 us on calls of
 * 4K-64K elements, since handing a block to another thread costs about as much as adding a few
 * thousand elements; tests/ops_c pins the 4096 split, so it stays.)
 */
#include "opbuild/tiling.h"
#include "add_custom_template_tiling.h"

#define MIN_ELEMS_PER_BLOCK 4096u
#define BLOCK_ALIGN_ELEMS 64u

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
    if (!tiling_same_shape(x, y) || !tiling_same_shape(x, z)) {
        char zs[160];
        tiling_shape_str(x, xs, sizeof xs);
        tiling_shape_str(y, ys, sizeof ys);
        tiling_shape_str(z, zs, sizeof zs);
        return tiling_invalid(ctx, "AddCustomTemplate: shapes differ (x %s, y %s, z %s); all must be equal", xs, ys, zs);
    }
    int64_t total = tiling_shape_size(x);
    if (total < 0) return tiling_fail(ctx, "AddCustomTemplate: x has an unknown (negative) dim");

    AddCustomTemplateTilingData *td = TILING_DATA(ctx, AddCustomTemplateTilingData);
    if (!td) return OPBUILD_GRAPH_FAILED;
    td->total_length = (uint64_t)total;
    tiling_set_block_dim(ctx, tiling_split_elementwise(td->total_length, tiling_core_num(ctx), MIN_ELEMS_PER_BLOCK,
                                                       BLOCK_ALIGN_ELEMS, &td->block_length));
    td->tail_length = td->total_length % BLOCK_ALIGN_ELEMS;
    tiling_set_tiling_key(ctx, td->tail_length == 0 ? 0 : 1);
    tiling_set_workspace_size(ctx, 0);
    return OPBUILD_GRAPH_SUCCESS;
}
