/* AddCustomTemplate kernel: z = x + y, elementwise, same shape.
 *
 * Built once per binary with DTYPE_X / DTYPE_Y / DTYPE_Z = half or float. Each element is
 * converted to float, added, and converted back once: for fp16 this is exactly numpy's float16
 * add (the float sum of two halves rounded once to half equals the correctly rounded half sum,
 * since float has more than 2 * 11 + 2 significand bits); for fp32 it is the plain float add.
 *
 * Block split (from the tiling): block i owns [i * block_length, min(total, (i + 1) * block_length)).
 *
 * Tiling keys (op.yaml tiling.keys: [0, 1]), as an Ascend C kernel picks its copy-in path: key 0,
 * every block is whole 64-element rows, so the row loop runs alone; key 1, the last row is partial
 * (tail_length elements): the block holding the end adds its whole rows, then the tail element by
 * element (add_tail). Both give the same bits.
 *
 * Speed: the element loop is written to be vectorized (add_range). On x86-64 two more versions
 * give the same bits faster: fp16 with the F16C conversion instructions when the CPU has them
 * (the default build converts through libgcc one element at a time), and fp32 calls on tensors
 * far larger than a last-level cache with non-temporal stores.
 */
#include "opbuild/kernel.h"
#include "add_custom_template_tiling.h"

static inline float to_float_h(half v) { return opbuild_half_to_float(v); }
static inline float to_float_f(float v) { return v; }
#define TO_FLOAT(v) _Generic((v), half: to_float_h, float: to_float_f)(v)
#define FROM_FLOAT(T, f) _Generic((T *)0, half *: opbuild_float_to_half, float *: to_float_f)(f)

/* The element loop, kept simple so that the compiler vectorizes it (O3 for this function; the
 * toolchain compiles kernels with -O2). restrict: x, y and z do not partially overlap; z == x or
 * z == y exactly (an in-place add) is fine, since each element is read before it is written. */
#define ADD_LOOP(xp, yp, zp, n) \
    for (uint64_t i = 0; i < (n); ++i) (zp)[i] = FROM_FLOAT(DTYPE_Z, TO_FLOAT((xp)[i]) + TO_FLOAT((yp)[i]))

__attribute__((optimize("O3"))) static void add_range(const DTYPE_X *restrict xp, const DTYPE_Y *restrict yp,
                                                      DTYPE_Z *restrict zp, uint64_t n) {
    ADD_LOOP(xp, yp, zp, n);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
/* The same loop with the F16C conversion instructions (exact IEEE conversions, like the
 * default build's libgcc calls, but vectorized), chosen at run time when the CPU has them. */
__attribute__((optimize("O3"), target("avx,f16c"))) static void add_range_f16c(const DTYPE_X *restrict xp,
                                                                             const DTYPE_Y *restrict yp,
                                                                             DTYPE_Z *restrict zp, uint64_t n) {
    ADD_LOOP(xp, yp, zp, n);
}

/* fp32 over large tensors: the adds with non-temporal stores, so z is written without first being
 * read into the cache (a quarter less memory traffic for a memory-bound add). */
__attribute__((optimize("O3"))) static void add_range_stream(const float *restrict xp, const float *restrict yp,
                                                            float *restrict zp, uint64_t n) {
    uint64_t i = 0;
    while (i < n && ((uintptr_t)(zp + i) & 15u)) {
        zp[i] = xp[i] + yp[i];
        ++i;
    }
    for (; i + 4 <= n; i += 4)
        _mm_stream_ps(zp + i, _mm_add_ps(_mm_loadu_ps(xp + i), _mm_loadu_ps(yp + i)));
    for (; i < n; ++i) zp[i] = xp[i] + yp[i];
    _mm_sfence();
}
#define HAVE_X86_PATHS 1
#endif

/* Above this many elements in the whole call, fp32 uses streaming stores (the three tensors are
 * well beyond a last-level cache). */
#define STREAM_MIN_TOTAL (4u << 20)

static void add_block(const DTYPE_X *xp, const DTYPE_Y *yp, DTYPE_Z *zp, uint64_t n, uint64_t total) {
#ifdef HAVE_X86_PATHS
    if (ORIG_DTYPE_X == OPBUILD_DT_FLOAT && ORIG_DTYPE_Z == OPBUILD_DT_FLOAT) {
        if (total >= STREAM_MIN_TOTAL) {
            add_range_stream((const float *)xp, (const float *)yp, (float *)zp, n);
            return;
        }
    } else if (__builtin_cpu_supports("f16c")) {
        add_range_f16c(xp, yp, zp, n);
        return;
    }
#else
    (void)total;
#endif
    add_range(xp, yp, zp, n);
}

/* The partial last row, one element at a time. */
static void add_tail(const DTYPE_X *xp, const DTYPE_Y *yp, DTYPE_Z *zp, uint64_t n) { ADD_LOOP(xp, yp, zp, n); }

KERNEL_ENTRY void add_custom_template(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR workspace, GM_ADDR tiling) {
    (void)workspace;
    GET_TILING_DATA(td, tiling);
    uint64_t begin, end;
    if (opbuild_block_span(td.total_length, td.block_length, &begin, &end) <= 0) return;
    const DTYPE_X *xp = (const DTYPE_X *)x + begin;
    const DTYPE_Y *yp = (const DTYPE_Y *)y + begin;
    DTYPE_Z *zp = (DTYPE_Z *)z + begin;
    uint64_t n = end - begin;
    if (TILING_KEY_IS(0)) {
        if (td.tail_length != 0)
            KERNEL_FAIL("%s: tiling key 0 (whole rows) with a tail of %llu elements", OPBUILD_BINARY_NAME,
                        (unsigned long long)td.tail_length);
        add_block(xp, yp, zp, n, td.total_length);
    } else if (TILING_KEY_IS(1)) {
        uint64_t tail = end == td.total_length ? td.tail_length : 0;
        if (tail > n)
            KERNEL_FAIL("%s: tail of %llu elements in a block of %llu", OPBUILD_BINARY_NAME,
                        (unsigned long long)tail, (unsigned long long)n);
        add_block(xp, yp, zp, n - tail, td.total_length);
        add_tail(xp + (n - tail), yp + (n - tail), zp + (n - tail), tail);
    } else {
        KERNEL_FAIL("%s: unexpected tiling key %llu", OPBUILD_BINARY_NAME, (unsigned long long)GetTilingKey());
    }
}
