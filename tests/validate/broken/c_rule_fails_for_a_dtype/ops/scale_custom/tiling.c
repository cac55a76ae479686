#include "opbuild/tiling.h"
#include "scale_custom_tiling.h"

OPBUILD_API uint32_t scale_custom_tiling(TilingContext *ctx) {
    ScaleCustomTilingData *td = TILING_DATA(ctx, ScaleCustomTilingData);
    if (!td) return OPBUILD_GRAPH_FAILED;
    td->total_length = (uint64_t)tiling_shape_size(tiling_input(ctx, 0));
    tiling_set_block_dim(ctx, 1);
    return OPBUILD_GRAPH_SUCCESS;
}

OPBUILD_API uint32_t scale_custom_gen_key(TilingContext *ctx, char *key) {
    const OpbuildTensorDesc *x = tiling_input(ctx, 0);
    if (x->dtype != OPBUILD_DT_FLOAT16) return tiling_fail(ctx, "ScaleCustom: only float16 has a key");
    return simplified_key_append(ctx, key, x->dtype == OPBUILD_DT_FLOAT16 ? "scale_fp16" : "scale_fp32");
}
