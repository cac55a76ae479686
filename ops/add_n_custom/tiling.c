/* AddNCustom tiling and GenSimplifiedKey callback.
 *
 * Tiling data: total_length (elements of each tensor), block_length (elements per block, a
 * multiple of 64), num_inputs (list length). Block dim: min(core_num, ceil(total / 4096)), at
 * least 1. Every list element must have the first one's dtype and shape, and so must y.
 *
 * add_n_custom_gen_simplified_key appends `diy,addn,<GE dtype of x[0]>` (the binaries' keys).
 */
#include "opbuild/tiling.h"
#include "add_n_custom_tiling.h"

#define MIN_ELEMS_PER_BLOCK 4096u
#define BLOCK_ALIGN_ELEMS 64u

static int supported_dtype(int32_t dt) {
    return dt == OPBUILD_DT_FLOAT16 || dt == OPBUILD_DT_FLOAT || dt == OPBUILD_DT_INT32;
}

OPBUILD_API uint32_t add_n_custom_gen_simplified_key(TilingContext *ctx, char *key) {
    if (key == NULL) return tiling_fail(ctx, "AddNCustom: GenSimplifiedKey got a NULL key buffer");
    uint32_t n = tiling_input_count(ctx, ADD_N_CUSTOM_INPUT_X);
    if (n == 0) return tiling_fail(ctx, "AddNCustom: the tensor list x is empty (at least 1 tensor is required)");
    const OpbuildTensorDesc *first = tiling_dynamic_input(ctx, ADD_N_CUSTOM_INPUT_X, 0);
    if (!supported_dtype(first->dtype))
        return tiling_fail(ctx, "AddNCustom: no binary for x dtype %d (supported: float16 1, float32 0, int32 3)",
                           first->dtype);
    for (uint32_t k = 1; k < n; ++k) {
        const OpbuildTensorDesc *d = tiling_dynamic_input(ctx, ADD_N_CUSTOM_INPUT_X, k);
        if (d->dtype != first->dtype)
            return tiling_fail(ctx, "AddNCustom: x[%u] has dtype %d but x[0] has %d; all must match", k, d->dtype,
                               first->dtype);
    }
    char frag[32];
    snprintf(frag, sizeof frag, "diy,addn,%d", first->dtype);
    return simplified_key_append(ctx, key, frag);
}

OPBUILD_API uint32_t add_n_custom_tiling(TilingContext *ctx) {
    uint32_t n = tiling_input_count(ctx, ADD_N_CUSTOM_INPUT_X);
    const OpbuildTensorDesc *y = tiling_output(ctx, ADD_N_CUSTOM_OUTPUT_Y);
    if (n == 0) return tiling_fail(ctx, "AddNCustom: the tensor list x is empty (at least 1 tensor is required)");
    if (!y) return tiling_fail(ctx, "AddNCustom: output y is required");
    const OpbuildTensorDesc *first = tiling_dynamic_input(ctx, ADD_N_CUSTOM_INPUT_X, 0);
    if (!supported_dtype(first->dtype))
        return tiling_fail(ctx, "AddNCustom: x[0] dtype %d is not float16 (1), float32 (0) or int32 (3)", first->dtype);
    if (first->dim_num > OPBUILD_MAX_DIMS) return tiling_fail(ctx, "AddNCustom: x[0] rank above %d", OPBUILD_MAX_DIMS);
    char a[160], b[160];
    for (uint32_t k = 1; k < n; ++k) {
        const OpbuildTensorDesc *d = tiling_dynamic_input(ctx, ADD_N_CUSTOM_INPUT_X, k);
        if (d->dtype != first->dtype)
            return tiling_fail(ctx, "AddNCustom: x[%u] has dtype %d but x[0] has %d; all must match", k, d->dtype,
                               first->dtype);
        if (!tiling_same_shape(d, first)) {
            tiling_shape_str(d, a, sizeof a);
            tiling_shape_str(first, b, sizeof b);
            return tiling_fail(ctx, "AddNCustom: x[%u] has shape %s but x[0] has %s; all must match", k, a, b);
        }
    }
    if (y->dtype != first->dtype)
        return tiling_fail(ctx, "AddNCustom: y dtype %d differs from x dtype %d", y->dtype, first->dtype);
    if (!tiling_same_shape(y, first)) {
        tiling_shape_str(y, a, sizeof a);
        tiling_shape_str(first, b, sizeof b);
        return tiling_fail(ctx, "AddNCustom: y has shape %s but x[0] has %s", a, b);
    }
    int64_t total = tiling_shape_size(first);
    if (total < 0) return tiling_fail(ctx, "AddNCustom: x[0] has an unknown (negative) dim");

    AddNCustomTilingData *td = TILING_DATA(ctx, AddNCustomTilingData);
    if (!td) return OPBUILD_GRAPH_FAILED;
    td->total_length = (uint64_t)total;
    td->num_inputs = n;
    tiling_set_block_dim(ctx, tiling_split_elementwise(td->total_length, tiling_core_num(ctx), MIN_ELEMS_PER_BLOCK,
                                                       BLOCK_ALIGN_ELEMS, &td->block_length));
    tiling_set_tiling_key(ctx, 0);
    tiling_set_workspace_size(ctx, 0);
    return OPBUILD_GRAPH_SUCCESS;
}
