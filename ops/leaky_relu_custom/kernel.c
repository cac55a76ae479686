/* LeakyReluCustom kernel: y = x >= 0 ? x : negative_slope * x (fp16, fp32, bf16).
 *
 * Elements are converted to float, the negative branch is computed in float with the float
 * slope from the tiling data, and the result is rounded once to the output type (bf16 through
 * opbuild_float_to_bf16, round to nearest even). NaN stays NaN (NaN >= 0 is false, slope * NaN
 * is NaN).
 *
 * The tiling key says which path runs: 1 when negative_slope == 0 (ReLU: a max(x, 0) path with no
 * multiply; negative -> +0, -0 and NaN pass through, like numpy.maximum), 0 otherwise. ReLU
 * binaries are compiled with OPBUILD_WHEN_NEGATIVE_SLOPE (pinned to 0.0 in their `when`) and
 * check that the tiling's slope is the pinned value.
 *
 * Block i owns [i * block_length, min(total, (i + 1) * block_length)).
 *
 * fp32 runs branch-free and vectorized (gcc -O2): the select is a bit mask of the sign test, not
 * a conditional (gcc does not if-convert `v >= 0 ? v : v * slope`: the multiply could trap), and
 * the loop has restrict pointers and a trip count that is a multiple of 16 (the "very cheap" cost
 * model takes no alias checks and no epilogue). y = v * (v < 0 ? slope : 1) is the same value as
 * the scalar rule for every input: NaN and -0 pass through (v < 0 is false), v * 1 is v.
 */
#include "opbuild/kernel.h"
#include "leaky_relu_custom_tiling.h"

static inline float to_float_h(half v) { return opbuild_half_to_float(v); }
static inline float to_float_f(float v) { return v; }
#define TO_FLOAT(v) _Generic((v), half: to_float_h, float: to_float_f, bfloat16_t: opbuild_bf16_to_float)(v)
#define FROM_FLOAT(T, f) \
    _Generic((T *)0, half *: opbuild_float_to_half, float *: to_float_f, bfloat16_t *: opbuild_float_to_bf16)(f)

#if ORIG_DTYPE_X == OPBUILD_DT_FLOAT && ORIG_DTYPE_Y == OPBUILD_DT_FLOAT
#define LEAKY_VEC 16u

static inline uint32_t f32_bits(float v) {
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

static inline float f32_of(uint32_t b) {
    float v;
    memcpy(&v, &b, sizeof v);
    return v;
}

/* y = v * (v < 0 ? slope : 1) over [0, n) */
static void leaky_f32(const float *restrict x, float *restrict y, uint64_t n, float slope) {
    const uint32_t sb = f32_bits(slope), ob = f32_bits(1.0f);
    uint64_t m = n & ~(uint64_t)(LEAKY_VEC - 1);
    for (uint64_t i = 0; i < m; ++i) {
        float v = x[i];
        uint32_t neg = -(uint32_t)(v < 0.0f);
        y[i] = v * f32_of((sb & neg) | (ob & ~neg));
    }
    for (uint64_t i = m; i < n; ++i) y[i] = x[i] < 0.0f ? x[i] * slope : x[i];
}

/* y = v < 0 ? +0 : v over [0, n): the sign test's mask clears the bits */
static void relu_f32(const float *restrict x, float *restrict y, uint64_t n) {
    uint64_t m = n & ~(uint64_t)(LEAKY_VEC - 1);
    for (uint64_t i = 0; i < m; ++i) {
        float v = x[i];
        y[i] = f32_of(f32_bits(v) & ~-(uint32_t)(v < 0.0f));
    }
    for (uint64_t i = m; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}
#define LEAKY_F32 1
#endif

KERNEL_ENTRY void leaky_relu_custom(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
    (void)workspace;
    GET_TILING_DATA(td, tiling);
    uint64_t begin, end;
    if (opbuild_block_span(td.total_length, td.block_length, &begin, &end) <= 0) return;
    const DTYPE_X *xp = (const DTYPE_X *)x;
    DTYPE_Y *yp = (DTYPE_Y *)y;

#ifdef OPBUILD_WHEN_NEGATIVE_SLOPE
    if (td.negative_slope != (float)(OPBUILD_WHEN_NEGATIVE_SLOPE))
        KERNEL_FAIL("%s: built for negative_slope=%g but the tiling has %g", OPBUILD_BINARY_NAME,
                    (double)(OPBUILD_WHEN_NEGATIVE_SLOPE), (double)td.negative_slope);
#endif
#ifdef LEAKY_F32
    if (TILING_KEY_IS(1)) {
        relu_f32(xp + begin, yp + begin, end - begin);
        return;
    }
    if (TILING_KEY_IS(0)) {
        leaky_f32(xp + begin, yp + begin, end - begin, td.negative_slope);
        return;
    }
#endif
    if (TILING_KEY_IS(1)) { /* negative_slope == 0 */
        const DTYPE_Y zero = FROM_FLOAT(DTYPE_Y, 0.0f);
        for (uint64_t i = begin; i < end; ++i) yp[i] = TO_FLOAT(xp[i]) < 0.0f ? zero : xp[i];
    } else if (TILING_KEY_IS(0)) {
        const float slope = td.negative_slope;
        for (uint64_t i = begin; i < end; ++i) {
            float v = TO_FLOAT(xp[i]);
            yp[i] = v >= 0.0f ? xp[i] : FROM_FLOAT(DTYPE_Y, v * slope);
        }
    } else {
        KERNEL_FAIL("%s: unexpected tiling key %llu", OPBUILD_BINARY_NAME, (unsigned long long)GetTilingKey());
    }
}
