/* AddNCustom kernel: y = x[0] + x[1] + ... + x[n-1] over a dynamic list (fp16, fp32, int32).
 *
 * Floating inputs are accumulated in float in list order, starting from x[0] (so -0 + ... keeps
 * numpy's sign), and rounded once to the output type; int32 wraps like numpy. The block's range
 * is processed in chunks of CHUNK elements so the accumulator stays in cache while every input
 * streams through it.
 *
 * Block i owns [i * block_length, min(total, (i + 1) * block_length)).
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

KERNEL_ENTRY void add_n_custom(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
    (void)workspace;
    GET_TILING_DATA(td, tiling);
    uint64_t n = opbuild_list_count(x);
    if (n != td.num_inputs || n == 0)
        KERNEL_FAIL("%s: the list has %llu tensors, the tiling expects %u (at least 1)", OPBUILD_BINARY_NAME,
                    (unsigned long long)n, td.num_inputs);
    uint64_t begin, end;
    if (opbuild_block_span(td.total_length, td.block_length, &begin, &end) <= 0) return;
    DTYPE_Y *yp = (DTYPE_Y *)y;

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
