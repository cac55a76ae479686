/* BuggyAdd tiling: x, y and z of one shape, split in blocks of 1024 elements (at most core_num
 * blocks); the attribute bug is passed to the kernel. */
#include "opbuild/tiling.h"
#include "buggy_add_tiling.h"

OPBUILD_API uint32_t buggy_add_tiling(TilingContext *ctx) {
    const OpbuildTensorDesc *x = tiling_input(ctx, BUGGY_ADD_INPUT_X);
    const OpbuildTensorDesc *y = tiling_input(ctx, BUGGY_ADD_INPUT_Y);
    const OpbuildTensorDesc *z = tiling_output(ctx, BUGGY_ADD_OUTPUT_Z);
    if (!x || !y || !z) return tiling_fail(ctx, "BuggyAdd: x, y and z are required");
    if (!tiling_same_shape(x, y) || !tiling_same_shape(x, z))
        return tiling_invalid(ctx, "BuggyAdd: x, y and z must have one shape");
    int64_t total = tiling_shape_size(x);
    if (total < 0) return tiling_fail(ctx, "BuggyAdd: x has an unknown dim");
    const OpbuildAttrValue *bug = tiling_attr(ctx, BUGGY_ADD_ATTR_BUG);
    BuggyAddTilingData *td = TILING_DATA(ctx, BuggyAddTilingData);
    if (!td) return OPBUILD_GRAPH_FAILED;
    td->total_length = (uint64_t)total;
    td->bug = bug ? bug->i : 0;
    tiling_set_block_dim(ctx, tiling_split_elementwise(td->total_length, tiling_core_num(ctx), 1024, 64,
                                                       &td->block_length));
    tiling_set_tiling_key(ctx, 0);
    tiling_set_workspace_size(ctx, 0);
    return OPBUILD_GRAPH_SUCCESS;
}
