/* AddNCustom kernel: y = x[0] + x[1] + ... + x[n-1] over a dynamic list (fp16, fp32, int32).
 *
 * Floating inputs are accumulated in float in list order, starting from x[0] (so -0 + ... keeps
 * numpy's sign), and rounded once to the output type; int32 wraps like numpy. The block's range
 * is processed in chunks of CHUNK elements so the accumulator stays in cache while every input
 * streams through it.
 *
 * Block i owns [i * block_length, min(total, (i + 1) * block_length)) of y. With rank 0 every
 * tensor has y's shape and the block adds flat ranges; otherwise (a broadcasting list) it walks
 * y's multi-index, each tensor's offset following its strides (0 along a broadcast dim), in runs
 * along y's last dim.
 */
#include "opbuild/kernel.h"
#include "add_n_custom_tiling.h"

#define CHUNK 1024u

static inline float to_float_h(half v) { return opbuild_half_to_float(v); }
static inline float to_float_f(float v) { return v; }
static inline float to_float_i(int32_t v) { return (float)v; }
static inline int32_t to_i32_f(float v) { return (int32_t)v; }
#define TO_FLOAT(v) _Generic((v), half: to_float_h, float: to_float_f, int32_t: to_float_i)(v)
#define FROM_FLOAT(T, f) _Generic((T *)0, half *: opbuild_float_to_half, float *: to_float_f, int32_t *: to_i32_f)(f)

#define IS_INT32 (ORIG_DTYPE_Y == OPBUILD_DT_INT32)

/* y's rank and the tensors a broadcasting list may have: the sizes of the tiling struct's arrays
 * (op.yaml's y_dims and x_strides counts), as the tiling function derives them. */
#define MAX_DIMS ((uint32_t)(sizeof(((AddNCustomTilingData *)0)->y_dims) / sizeof(int64_t)))
#define MAX_BROADCAST_INPUTS ((uint32_t)(sizeof(((AddNCustomTilingData *)0)->x_strides) / sizeof(int64_t) / MAX_DIMS))

/* The broadcasting sum of the block's range [begin, end) of y. */
static void add_broadcast(GM_ADDR x, DTYPE_Y *yp, const AddNCustomTilingData *td, uint64_t n, uint64_t begin,
                          uint64_t end) {
    const DTYPE_X *xs[MAX_BROADCAST_INPUTS];
    int64_t idx[MAX_DIMS], off[MAX_BROADCAST_INPUTS];
    const uint32_t rank = td->rank;
    uint64_t rest = begin;
    for (uint64_t k = 0; k < n; ++k) {
        xs[k] = (const DTYPE_X *)opbuild_list_item(x, k);
        off[k] = 0;
    }
    for (uint32_t d = rank; d-- > 0;) { /* the multi-index of `begin` */
        idx[d] = (int64_t)(rest % (uint64_t)td->y_dims[d]);
        rest /= (uint64_t)td->y_dims[d];
        for (uint64_t k = 0; k < n; ++k) off[k] += idx[d] * td->x_strides[k * MAX_DIMS + d];
    }
    for (uint64_t pos = begin; pos < end; ++pos) {
        if (IS_INT32) {
            uint32_t acc = (uint32_t)(int32_t)xs[0][off[0]];
            for (uint64_t k = 1; k < n; ++k) acc += (uint32_t)(int32_t)xs[k][off[k]];
            yp[pos] = (DTYPE_Y)(int32_t)acc;
        } else {
            float acc = TO_FLOAT(xs[0][off[0]]);
            for (uint64_t k = 1; k < n; ++k) acc += TO_FLOAT(xs[k][off[k]]);
            yp[pos] = FROM_FLOAT(DTYPE_Y, acc);
        }
        for (uint32_t d = rank; d-- > 0;) { /* next multi-index: carry from the last dim */
            for (uint64_t k = 0; k < n; ++k) off[k] += td->x_strides[k * MAX_DIMS + d];
            if (++idx[d] < td->y_dims[d]) break;
            for (uint64_t k = 0; k < n; ++k) off[k] -= idx[d] * td->x_strides[k * MAX_DIMS + d];
            idx[d] = 0;
        }
    }
}

KERNEL_ENTRY void add_n_custom(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
    (void)workspace;
    GET_TILING_DATA(td, tiling);
    uint64_t n = opbuild_list_count(x);
    if (n != td.num_inputs || n == 0)
        KERNEL_FAIL("%s: the list has %llu tensors, the tiling expects %u (at least 1)", OPBUILD_BINARY_NAME,
                    (unsigned long long)n, td.num_inputs);
    if (td.rank > MAX_DIMS || (td.rank > 0 && n > MAX_BROADCAST_INPUTS))
        KERNEL_FAIL("%s: broadcasting %llu tensors of rank %u (at most %u of rank %u)", OPBUILD_BINARY_NAME,
                    (unsigned long long)n, td.rank, MAX_BROADCAST_INPUTS, MAX_DIMS);
    uint64_t begin, end;
    if (opbuild_block_span(td.total_length, td.block_length, &begin, &end) <= 0) return;
    DTYPE_Y *yp = (DTYPE_Y *)y;
    if (td.rank > 0) {
        add_broadcast(x, yp, &td, n, begin, end);
        return;
    }

    for (uint64_t c = begin; c < end; c += CHUNK) {
        uint32_t len = (uint32_t)(end - c < CHUNK ? end - c : CHUNK);
        if (IS_INT32) {
            uint32_t acc[CHUNK];
            const DTYPE_X *x0 = (const DTYPE_X *)opbuild_list_item(x, 0) + c;
            for (uint32_t i = 0; i < len; ++i) acc[i] = (uint32_t)(int32_t)x0[i];
            for (uint64_t k = 1; k < n; ++k) {
                const DTYPE_X *xk = (const DTYPE_X *)opbuild_list_item(x, k) + c;
                for (uint32_t i = 0; i < len; ++i) acc[i] += (uint32_t)(int32_t)xk[i];
            }
            for (uint32_t i = 0; i < len; ++i) yp[c + i] = (DTYPE_Y)(int32_t)acc[i];
        } else {
            float acc[CHUNK];
            const DTYPE_X *x0 = (const DTYPE_X *)opbuild_list_item(x, 0) + c;
            for (uint32_t i = 0; i < len; ++i) acc[i] = TO_FLOAT(x0[i]);
            for (uint64_t k = 1; k < n; ++k) {
                const DTYPE_X *xk = (const DTYPE_X *)opbuild_list_item(x, k) + c;
                for (uint32_t i = 0; i < len; ++i) acc[i] += TO_FLOAT(xk[i]);
            }
            for (uint32_t i = 0; i < len; ++i) yp[c + i] = FROM_FLOAT(DTYPE_Y, acc[i]);
        }
    }
}
