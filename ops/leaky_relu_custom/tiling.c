/* LeakyReluCustom tiling: validates x and y, reads negative_slope (attr 0) into the tiling data
 * and splits the elements over the cores.
 *
 * Tiling data: total_length (elements), block_length (elements per block, a multiple of 64),
 * negative_slope (float). Block dim: min(core_num, ceil(total / 4096)), at least 1.
 * Tiling key: 1 when negative_slope == 0 (the ReLU binaries serve that call), else 0.
 */
#include "opbuild/tiling.h"
#include "leaky_relu_custom_tiling.h"

#define MIN_ELEMS_PER_BLOCK 4096u
#define BLOCK_ALIGN_ELEMS 64u

OPBUILD_API uint32_t leaky_relu_custom_tiling(TilingContext *ctx) {
    const OpbuildTensorDesc *x = tiling_input(ctx, LEAKY_RELU_CUSTOM_INPUT_X);
    const OpbuildTensorDesc *y = tiling_output(ctx, LEAKY_RELU_CUSTOM_OUTPUT_Y);
    if (!x || !y) return tiling_fail(ctx, "LeakyReluCustom: x and y are required");
    if (x->dtype != OPBUILD_DT_FLOAT16 && x->dtype != OPBUILD_DT_FLOAT && x->dtype != OPBUILD_DT_BF16)
        return tiling_fail(ctx, "LeakyReluCustom: x dtype %d is not float16 (1), float32 (0) or bfloat16 (27)",
                           x->dtype);
    if (y->dtype != x->dtype)
        return tiling_fail(ctx, "LeakyReluCustom: y dtype %d differs from x dtype %d", y->dtype, x->dtype);
    if (x->dim_num > OPBUILD_MAX_DIMS || y->dim_num != x->dim_num)
        return tiling_fail(ctx, "LeakyReluCustom: y rank %u differs from x rank %u", y->dim_num, x->dim_num);
    for (uint32_t i = 0; i < x->dim_num; ++i) {
        if (x->dims[i] < 0) return tiling_fail(ctx, "LeakyReluCustom: x dim %u is unknown (%lld)", i, (long long)x->dims[i]);
        if (y->dims[i] != x->dims[i])
            return tiling_fail(ctx, "LeakyReluCustom: y dim %u is %lld but x dim %u is %lld", i, (long long)y->dims[i],
                               i, (long long)x->dims[i]);
    }
    const OpbuildAttrValue *attr = tiling_attr(ctx, LEAKY_RELU_CUSTOM_ATTR_NEGATIVE_SLOPE);
    if (attr && attr->type != OPBUILD_ATTR_FLOAT)
        return tiling_fail(ctx, "LeakyReluCustom: attr negative_slope has type %d, expected float", attr->type);
    double slope = attr ? attr->f : 0.01; /* the spec's default */

    LeakyReluCustomTilingData *td = TILING_DATA(ctx, LeakyReluCustomTilingData);
    if (!td) return OPBUILD_GRAPH_FAILED;
    td->total_length = (uint64_t)tiling_shape_size(x);
    td->negative_slope = (float)slope;
    tiling_set_block_dim(ctx, tiling_split_elementwise(td->total_length, tiling_core_num(ctx), MIN_ELEMS_PER_BLOCK,
                                                       BLOCK_ALIGN_ELEMS, &td->block_length));
    tiling_set_tiling_key(ctx, slope == 0.0 ? 1u : 0u);
    tiling_set_workspace_size(ctx, 0);
    return OPBUILD_GRAPH_SUCCESS;
}
