/* NonZeroCustom on the AI CPU: y[d][k] = coordinate d of the k-th non-zero element of x. */
#include "opbuild/aicpu.h"

#include <stdlib.h>

/* Whether element i of x is non-zero (NaN counts as non-zero, -0.0 as zero, as numpy). */
static int non_zero_at(const AicpuTensor *x, int64_t i) {
    switch (x->dtype) {
    case OPBUILD_DT_FLOAT: return ((const float *)x->data)[i] != 0.0f;
    case OPBUILD_DT_FLOAT16: return ((const half *)x->data)[i] != (half)0.0f;
    case OPBUILD_DT_INT32: return ((const int32_t *)x->data)[i] != 0;
    case OPBUILD_DT_INT64: return ((const int64_t *)x->data)[i] != 0;
    case OPBUILD_DT_INT8: return ((const int8_t *)x->data)[i] != 0;
    case OPBUILD_DT_UINT8:
    case OPBUILD_DT_BOOL: return ((const uint8_t *)x->data)[i] != 0;
    default: return -1;
    }
}

uint32_t non_zero_custom_compute(AicpuContext *ctx) {
    const AicpuTensor *x = aicpu_input(ctx, 0);
    AicpuTensor *y = aicpu_output(ctx, 0);
    int64_t total = aicpu_elements(x), count = 0;
    if (total > 0 && non_zero_at(x, 0) < 0) return aicpu_error(ctx, "NonZeroCustom: unsupported dtype %d", x->dtype);
    for (int64_t i = 0; i < total; i++) count += non_zero_at(x, i);

    int64_t *out = y->data;
    int64_t k = 0;
    for (int64_t i = 0; i < total; i++) {
        if (!non_zero_at(x, i)) continue;
        int64_t rest = i; /* unravel the flat index, last axis fastest */
        for (int32_t d = x->ndim - 1; d >= 0; d--) {
            out[d * count + k] = rest % x->dims[d];
            rest /= x->dims[d];
        }
        k++;
    }
    int64_t shape[2] = {x->ndim, count};
    return aicpu_set_output_shape(ctx, 0, 2, shape);
}
