/* AddNCustom tiling and GenSimplifiedKey callback.
 *
 * Tiling data: total_length (elements of y), block_length (elements per block, a multiple of 64),
 * num_inputs (list length). When every tensor of the list has y's shape, rank is 0 and the kernel
 * adds flat arrays (any list length). Otherwise the list broadcasts as numpy (ONNX Sum's
 * multidirectional broadcasting): rank and y_dims give y's shape, and x_strides[k * 8 + d] the
 * element stride of tensor k over y's dim d (0 where it is broadcast), for up to 8 tensors.
 * Block dim: min(core_num, ceil(total / 4096)), at least 1. Every tensor must have x[0]'s dtype,
 * and so must y.
 *
 * add_n_custom_gen_simplified_key appends `diy,addn,<GE dtype of x[0]>` (the binaries' keys).
 */
#include "opbuild/tiling.h"
#include "add_n_custom_tiling.h"

#define MIN_ELEMS_PER_BLOCK 4096u
#define BLOCK_ALIGN_ELEMS 64u
/* The tensors broadcasting can take: x_strides (op.yaml) holds OPBUILD_MAX_DIMS strides for each. */
#define MAX_BROADCAST_INPUTS \
    ((uint32_t)(sizeof(((AddNCustomTilingData *)0)->x_strides) / sizeof(int64_t) / OPBUILD_MAX_DIMS))
_Static_assert(sizeof(((AddNCustomTilingData *)0)->y_dims) / sizeof(int64_t) == OPBUILD_MAX_DIMS,
               "y_dims has one entry per dim: the kernel's stride rows are that long");

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

/* y's shape from the list, broadcast as numpy; the strides of each tensor over it. */
static uint32_t broadcast_list(TilingContext *ctx, uint32_t n, const OpbuildTensorDesc *y, AddNCustomTilingData *td) {
    char a[160], b[160];
    if (n > MAX_BROADCAST_INPUTS)
        return tiling_invalid(ctx, "AddNCustom: %u tensors of different shapes; broadcasting takes up to %u (a list of "
                                "same-shape tensors may be any length)", n, MAX_BROADCAST_INPUTS);
    if (y->dim_num > OPBUILD_MAX_DIMS) return tiling_invalid(ctx, "AddNCustom: y rank above %d", OPBUILD_MAX_DIMS);
    uint32_t rank = y->dim_num;
    for (uint32_t k = 0; k < n; ++k) {
        const OpbuildTensorDesc *d = tiling_dynamic_input(ctx, ADD_N_CUSTOM_INPUT_X, k);
        if (d->dim_num > rank) {
            tiling_shape_str(d, a, sizeof a);
            tiling_shape_str(y, b, sizeof b);
            return tiling_invalid(ctx, "AddNCustom: x[%u] %s has more dims than y %s", k, a, b);
        }
        int64_t stride = 1;
        for (uint32_t j = 0; j < rank; ++j) { /* j counts from the last dim */
            uint32_t dim = rank - 1 - j;
            int64_t have = j < d->dim_num ? d->dims[d->dim_num - 1 - j] : 1;
            if (have != y->dims[dim] && have != 1) {
                tiling_shape_str(d, a, sizeof a);
                tiling_shape_str(y, b, sizeof b);
                return tiling_invalid(ctx, "AddNCustom: x[%u] %s does not broadcast to y %s (dim %u: %lld vs %lld)", k, a,
                                   b, dim, (long long)have, (long long)y->dims[dim]);
            }
            td->x_strides[k * OPBUILD_MAX_DIMS + dim] = have == 1 ? 0 : stride;
            stride *= have;
        }
    }
    int stretched = 0; /* y must be the broadcast itself, not larger: some tensor has each dim of y */
    for (uint32_t dim = 0; dim < rank; ++dim) {
        int64_t widest = 1;
        for (uint32_t k = 0; k < n; ++k) {
            const OpbuildTensorDesc *d = tiling_dynamic_input(ctx, ADD_N_CUSTOM_INPUT_X, k);
            uint32_t skip = rank - d->dim_num;
            if (dim >= skip && d->dims[dim - skip] != 1) widest = d->dims[dim - skip];
        }
        td->y_dims[dim] = y->dims[dim];
        if (widest != y->dims[dim]) stretched = 1;
    }
    if (stretched) {
        tiling_shape_str(y, b, sizeof b);
        return tiling_invalid(ctx, "AddNCustom: y %s is larger than the broadcast of the list", b);
    }
    td->rank = rank;
    return OPBUILD_GRAPH_SUCCESS;
}

OPBUILD_API uint32_t add_n_custom_tiling(TilingContext *ctx) {
    uint32_t n = tiling_input_count(ctx, ADD_N_CUSTOM_INPUT_X);
    const OpbuildTensorDesc *y = tiling_output(ctx, ADD_N_CUSTOM_OUTPUT_Y);
    if (n == 0) return tiling_fail(ctx, "AddNCustom: the tensor list x is empty (at least 1 tensor is required)");
    if (!y) return tiling_fail(ctx, "AddNCustom: output y is required");
    const OpbuildTensorDesc *first = tiling_dynamic_input(ctx, ADD_N_CUSTOM_INPUT_X, 0);
    if (!supported_dtype(first->dtype))
        return tiling_fail(ctx, "AddNCustom: x[0] dtype %d is not float16 (1), float32 (0) or int32 (3)", first->dtype);
    int same = tiling_same_shape(y, first);
    for (uint32_t k = 0; k < n; ++k) {
        const OpbuildTensorDesc *d = tiling_dynamic_input(ctx, ADD_N_CUSTOM_INPUT_X, k);
        if (d->dtype != first->dtype)
            return tiling_fail(ctx, "AddNCustom: x[%u] has dtype %d but x[0] has %d; all must match", k, d->dtype,
                               first->dtype);
        if (d->dim_num > OPBUILD_MAX_DIMS) return tiling_fail(ctx, "AddNCustom: x[%u] rank above %d", k, OPBUILD_MAX_DIMS);
        for (uint32_t i = 0; i < d->dim_num; ++i)
            if (d->dims[i] < 0) return tiling_fail(ctx, "AddNCustom: x[%u] has an unknown (negative) dim", k);
        same = same && tiling_same_shape(d, first);
    }
    if (y->dtype != first->dtype)
        return tiling_fail(ctx, "AddNCustom: y dtype %d differs from x dtype %d", y->dtype, first->dtype);
    int64_t total = tiling_shape_size(y);
    if (total < 0) return tiling_fail(ctx, "AddNCustom: y has an unknown (negative) dim");

    AddNCustomTilingData *td = TILING_DATA(ctx, AddNCustomTilingData);
    if (!td) return OPBUILD_GRAPH_FAILED;
    td->rank = 0;
    if (!same) {
        uint32_t status = broadcast_list(ctx, n, y, td);
        if (status != OPBUILD_GRAPH_SUCCESS) return status;
    }
    td->total_length = (uint64_t)total;
    td->num_inputs = n;
    tiling_set_block_dim(ctx, tiling_split_elementwise(td->total_length, tiling_core_num(ctx), MIN_ELEMS_PER_BLOCK,
                                                       BLOCK_ALIGN_ELEMS, &td->block_length));
    tiling_set_tiling_key(ctx, 0);
    tiling_set_workspace_size(ctx, 0);
    return OPBUILD_GRAPH_SUCCESS;
}
