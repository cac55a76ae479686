/* SortCustom on the AI CPU: a stable merge sort of each row (the last axis) by index. */
#include "opbuild/aicpu.h"

#include <stdlib.h>

typedef struct row {
    const AicpuTensor *x;
    int64_t base; /* flat index of the row's first element */
    int descending;
} row;

/* The row's element j as a double (exact for every supported dtype but large int64). */
static double value_at(const row *r, int64_t j) {
    int64_t i = r->base + j;
    switch (r->x->dtype) {
    case OPBUILD_DT_FLOAT: return ((const float *)r->x->data)[i];
    case OPBUILD_DT_FLOAT16: return (double)((const half *)r->x->data)[i];
    case OPBUILD_DT_INT32: return ((const int32_t *)r->x->data)[i];
    case OPBUILD_DT_INT8: return ((const int8_t *)r->x->data)[i];
    case OPBUILD_DT_UINT8: return ((const uint8_t *)r->x->data)[i];
    default: return 0.0;
    }
}

/* Whether element a goes strictly before element b. */
static int before(const row *r, int64_t a, int64_t b) {
    if (r->x->dtype == OPBUILD_DT_INT64) {
        int64_t va = ((const int64_t *)r->x->data)[r->base + a], vb = ((const int64_t *)r->x->data)[r->base + b];
        return r->descending ? va > vb : va < vb;
    }
    double va = value_at(r, a), vb = value_at(r, b);
    return r->descending ? va > vb : va < vb;
}

/* Sort idx[0..n) with tmp as scratch; taking from the left run on ties keeps the sort stable. */
static void merge_sort(const row *r, int64_t *idx, int64_t *tmp, int64_t n) {
    if (n < 2) return;
    int64_t half_n = n / 2;
    merge_sort(r, idx, tmp, half_n);
    merge_sort(r, idx + half_n, tmp, n - half_n);
    int64_t i = 0, j = half_n, k = 0;
    while (i < half_n && j < n) tmp[k++] = before(r, idx[j], idx[i]) ? idx[j++] : idx[i++];
    while (i < half_n) tmp[k++] = idx[i++];
    while (j < n) tmp[k++] = idx[j++];
    memcpy(idx, tmp, (size_t)n * sizeof *idx);
}

static size_t dtype_size(int32_t dtype) {
    switch (dtype) {
    case OPBUILD_DT_FLOAT: case OPBUILD_DT_INT32: return 4;
    case OPBUILD_DT_FLOAT16: return 2;
    case OPBUILD_DT_INT64: return 8;
    case OPBUILD_DT_INT8: case OPBUILD_DT_UINT8: return 1;
    default: return 0;
    }
}

uint32_t sort_custom_compute(AicpuContext *ctx) {
    const AicpuTensor *x = aicpu_input(ctx, 0);
    AicpuTensor *values = aicpu_output(ctx, 0), *indices = aicpu_output(ctx, 1);
    size_t size = dtype_size(x->dtype);
    if (size == 0) return aicpu_error(ctx, "SortCustom: unsupported dtype %d", x->dtype);
    int64_t total = aicpu_elements(x);
    int64_t n = x->ndim > 0 ? x->dims[x->ndim - 1] : 1;
    if (total == 0 || n == 0) return AICPU_OK;
    int64_t *tmp = malloc((size_t)n * sizeof *tmp);
    if (tmp == NULL) return aicpu_error(ctx, "SortCustom: out of memory for a row of %lld", (long long)n);
    row r = {x, 0, aicpu_attr_bool(ctx, "descending")};
    int64_t *idx = indices->data;
    const char *src = x->data;
    char *dst = values->data;
    for (r.base = 0; r.base < total; r.base += n) {
        int64_t *row_idx = idx + r.base;
        for (int64_t j = 0; j < n; j++) row_idx[j] = j;
        merge_sort(&r, row_idx, tmp, n);
        for (int64_t j = 0; j < n; j++)
            memcpy(dst + (size_t)(r.base + j) * size, src + (size_t)(r.base + row_idx[j]) * size, size);
    }
    free(tmp);
    return AICPU_OK;
}
