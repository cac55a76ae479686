#include "opbuild/tiling.h"
#include "scale_custom_tiling.h"

OPBUILD_API uint32_t scale_custom_tiling(TilingContext *ctx) {
    ScaleCustomTilingData *td = TILING_DATA(ctx, ScaleCustomTilingData);
    if (!td) return OPBUILD_GRAPH_FAILED;
    td->total_length = (uint64_t)tiling_shape_size(tiling_input(ctx, 0));
    tiling_set_block_dim(ctx, 1);
    return OPBUILD_GRAPH_SUCCESS;
}
