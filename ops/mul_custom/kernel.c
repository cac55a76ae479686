/* MulCustom kernel: z = x * y with numpy broadcasting (up to 8 dims).
 *
 * Binaries: fp16 x fp16 -> fp16, fp32 x fp32 -> fp32, fp16 x fp32 -> fp32 (x converted to
 * float), int32 x int32 -> int32 (wrapping, like numpy). Floating products are computed in float
 * and rounded once to the output type: a product of two halves is exact in float, so fp16
 * results equal numpy's float16 multiply bit for bit.
 *
 * The tiling gives the broadcast output shape z_dims[rank] and, per input, element strides over
 * those dims (0 where the input is broadcast). Block i owns the output elements
 * [i * block_length, min(total, (i + 1) * block_length)). Before the loop the kernel drops
 * size-1 dims and merges neighbouring dims that are contiguous for both inputs, so e.g. a
 * same-shape multiply runs as one flat loop and a row broadcast as a 2-D one.
 *
 * The inner runs (contiguous, or one input broadcast as a scalar) are loops over restrict
 * pointers whose first part has a trip count that is a multiple of 16: gcc -O2 vectorizes those
 * (its "very cheap" cost model takes no alias checks and no epilogue), so fp32 and int32 run in
 * SIMD; fp16 converts element by element.
 */
#include "opbuild/kernel.h"
#include "mul_custom_tiling.h"

#define MUL_MAX_DIMS 8

static inline float to_float_h(half v) { return opbuild_half_to_float(v); }
static inline float to_float_f(float v) { return v; }
static inline float to_float_i(int32_t v) { return (float)v; }
static inline int32_t to_i32_f(float v) { return (int32_t)v; }
#define TO_FLOAT(v) _Generic((v), half: to_float_h, float: to_float_f, int32_t: to_float_i)(v)
#define FROM_FLOAT(T, f) _Generic((T *)0, half *: opbuild_float_to_half, float *: to_float_f, int32_t *: to_i32_f)(f)

#define Z_IS_INT32 (ORIG_DTYPE_Z == OPBUILD_DT_INT32)

static inline DTYPE_Z mul_elem(DTYPE_X a, DTYPE_Y b) {
    if (Z_IS_INT32) return (DTYPE_Z)(int32_t)((uint32_t)(int32_t)a * (uint32_t)(int32_t)b);
    return FROM_FLOAT(DTYPE_Z, TO_FLOAT(a) * TO_FLOAT(b));
}

#define MUL_VEC 16u /* the vectorized part's trip count is a multiple of this */

/* z[0..n) = x[0..n) * y[0..n) */
static inline void mul_run(const DTYPE_X *restrict x, const DTYPE_Y *restrict y, DTYPE_Z *restrict z, uint64_t n) {
    uint64_t m = n & ~(uint64_t)(MUL_VEC - 1);
    for (uint64_t j = 0; j < m; ++j) z[j] = mul_elem(x[j], y[j]);
    for (uint64_t j = m; j < n; ++j) z[j] = mul_elem(x[j], y[j]);
}

/* z[0..n) = x[0..n) * b (y broadcast along the run) */
static inline void mul_run_y0(const DTYPE_X *restrict x, DTYPE_Y b, DTYPE_Z *restrict z, uint64_t n) {
    uint64_t m = n & ~(uint64_t)(MUL_VEC - 1);
    for (uint64_t j = 0; j < m; ++j) z[j] = mul_elem(x[j], b);
    for (uint64_t j = m; j < n; ++j) z[j] = mul_elem(x[j], b);
}

/* z[0..n) = a * y[0..n) (x broadcast along the run) */
static inline void mul_run_x0(DTYPE_X a, const DTYPE_Y *restrict y, DTYPE_Z *restrict z, uint64_t n) {
    uint64_t m = n & ~(uint64_t)(MUL_VEC - 1);
    for (uint64_t j = 0; j < m; ++j) z[j] = mul_elem(a, y[j]);
    for (uint64_t j = m; j < n; ++j) z[j] = mul_elem(a, y[j]);
}

KERNEL_ENTRY void mul_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR workspace, GM_ADDR tiling) {
    (void)workspace;
    GET_TILING_DATA(td, tiling);
    if (td.rank > MUL_MAX_DIMS) KERNEL_FAIL("%s: rank %u above 8", OPBUILD_BINARY_NAME, td.rank);
    uint64_t begin, end;
    if (opbuild_block_span(td.total_length, td.block_length, &begin, &end) <= 0) return;

    /* Coalesce: drop size-1 dims, merge dim d into the inner dim when both inputs are contiguous across them. */
    int64_t dims[MUL_MAX_DIMS], xs[MUL_MAX_DIMS], ys[MUL_MAX_DIMS];
    int r = 0;
    for (uint32_t d = 0; d < td.rank; ++d) {
        if (td.z_dims[d] == 1) continue;
        if (r > 0 && xs[r - 1] == td.x_strides[d] * td.z_dims[d] && ys[r - 1] == td.y_strides[d] * td.z_dims[d]) {
            dims[r - 1] *= td.z_dims[d];
            xs[r - 1] = td.x_strides[d];
            ys[r - 1] = td.y_strides[d];
            continue;
        }
        dims[r] = td.z_dims[d];
        xs[r] = td.x_strides[d];
        ys[r] = td.y_strides[d];
        ++r;
    }
    if (r == 0) { /* a single element */
        dims[0] = 1;
        xs[0] = ys[0] = 0;
        r = 1;
    }

    /* Multi-index of `begin`, then walk the output in runs along the innermost dim. */
    int64_t idx[MUL_MAX_DIMS];
    int64_t xo = 0, yo = 0;
    uint64_t rest = begin;
    for (int d = r - 1; d >= 0; --d) {
        idx[d] = (int64_t)(rest % (uint64_t)dims[d]);
        rest /= (uint64_t)dims[d];
        xo += idx[d] * xs[d];
        yo += idx[d] * ys[d];
    }
    const DTYPE_X *xp = (const DTYPE_X *)x;
    const DTYPE_Y *yp = (const DTYPE_Y *)y;
    DTYPE_Z *zp = (DTYPE_Z *)z;
    const int last = r - 1;
    const int64_t sx = xs[last], sy = ys[last];
    uint64_t pos = begin;
    while (pos < end) {
        uint64_t run = (uint64_t)(dims[last] - idx[last]);
        if (run > end - pos) run = end - pos;
        DTYPE_Z *out = zp + pos;
        if (sx == 1 && sy == 1) {
            mul_run(xp + xo, yp + yo, out, run);
        } else if (sx == 1 && sy == 0) {
            mul_run_y0(xp + xo, yp[yo], out, run);
        } else if (sx == 0 && sy == 1) {
            mul_run_x0(xp[xo], yp + yo, out, run);
        } else {
            for (uint64_t j = 0; j < run; ++j) out[j] = mul_elem(xp[xo + (int64_t)j * sx], yp[yo + (int64_t)j * sy]);
        }
        pos += run;
        idx[last] += (int64_t)run;
        xo += (int64_t)run * sx;
        yo += (int64_t)run * sy;
        for (int d = last; d > 0 && idx[d] == dims[d]; --d) { /* carry */
            idx[d] = 0;
            xo -= dims[d] * xs[d];
            yo -= dims[d] * ys[d];
            idx[d - 1] += 1;
            xo += xs[d - 1];
            yo += ys[d - 1];
        }
    }
}
