/* ReduceSumCustom kernel: y = sum(x, axes, keep_dims), fp32 and fp16 (accumulated in float).
 *
 * Uses SyncAll (kernel.intercore_sync: true): all blocks run concurrently. See tiling.c for the
 * views (kept dims / reduced dims) and the split.
 *
 * Phase 1: block b sums its reduction slice (b / out_blocks of red_blocks) for its output slice
 *   (b % out_blocks of out_blocks) into partial row b / out_blocks of the workspace. Each partial
 *   is a sequential float sum in reduction-index order starting from the slice's first element
 *   (+0 for an empty slice). The loop order follows memory: when the innermost x dim is reduced,
 *   output-outer / reduction-inner; otherwise reduction-outer / output-inner. The order of the
 *   additions into each partial is the same either way.
 * Deterministic binaries (OPBUILD_DETERMINISTIC 1): SyncAll, then each block finalizes its own
 *   even slice of the outputs: partial row 0 + row 1 + ... in row order, rounded once to y's
 *   dtype. The result depends only on the tiling (shape, core_num): bit-identical on every run.
 * Non-deterministic binaries (0): block 0 sets a float accumulator (after the partial rows) to
 *   -0.0 (the identity of IEEE addition), SyncAll; phase 1; every block adds its partials into the
 *   accumulator with a CAS loop on the float bits, in arrival order; SyncAll; each block converts
 *   its slice of the accumulator to y's dtype.
 */
#include "opbuild/kernel.h"
#include "reduce_sum_custom_tiling.h"

#ifndef OPBUILD_DETERMINISTIC
#error "OPBUILD_DETERMINISTIC must be defined (1 for a deterministic binary, else 0)"
#endif

#define RS_MAX_DIMS 8

static inline float to_float_h(half v) { return opbuild_half_to_float(v); }
static inline float to_float_f(float v) { return v; }
#define TO_FLOAT(v) _Generic((v), half: to_float_h, float: to_float_f)(v)
#define FROM_FLOAT(T, f) _Generic((T *)0, half *: opbuild_float_to_half, float *: to_float_f)(f)

/* An odometer over a strided view; rank 0 is treated as one dim of size 1. */
typedef struct Walk {
    uint32_t rank;
    int64_t dims[RS_MAX_DIMS], strides[RS_MAX_DIMS], idx[RS_MAX_DIMS];
    int64_t off;
} Walk;

/* Start at linear index `at` (< product of dims; every dim >= 1). */
static inline void walk_start(Walk *w, uint32_t rank, const int64_t *dims, const int64_t *strides, uint64_t at) {
    w->off = 0;
    if (rank == 0) {
        w->rank = 1;
        w->dims[0] = 1;
        w->strides[0] = 0;
        w->idx[0] = 0;
        return;
    }
    w->rank = rank;
    for (uint32_t d = rank; d-- > 0;) {
        w->dims[d] = dims[d];
        w->strides[d] = strides[d];
        w->idx[d] = (int64_t)(at % (uint64_t)dims[d]);
        at /= (uint64_t)dims[d];
        w->off += w->idx[d] * strides[d];
    }
}

/* Elements left in the innermost dim from the current position. */
static inline uint64_t walk_run(const Walk *w) { return (uint64_t)(w->dims[w->rank - 1] - w->idx[w->rank - 1]); }

/* Advance by n <= walk_run(w) elements. */
static inline void walk_advance(Walk *w, uint64_t n) {
    uint32_t last = w->rank - 1;
    w->idx[last] += (int64_t)n;
    w->off += (int64_t)n * w->strides[last];
    if (w->idx[last] < w->dims[last]) return;
    w->off -= w->dims[last] * w->strides[last];
    w->idx[last] = 0;
    for (uint32_t d = last; d-- > 0;) {
        w->off += w->strides[d];
        if (++w->idx[d] < w->dims[d]) return;
        w->off -= w->dims[d] * w->strides[d];
        w->idx[d] = 0;
    }
}

static inline void slice(uint64_t n, uint64_t parts, uint64_t i, uint64_t *begin, uint64_t *end) {
    uint64_t per = n / parts, rem = n % parts;
    *begin = i * per + (i < rem ? i : rem);
    *end = *begin + per + (i < rem ? 1 : 0);
}

/* Phase 1: row[o] = sum over r in [r0, r1) of x[o, r], for o in [o0, o1). */
static void partial_sums(const DTYPE_X *xp, const OPBUILD_TILING_DATA_TYPE *td, float *row, uint64_t o0, uint64_t o1,
                         uint64_t r0, uint64_t r1) {
    if (o0 >= o1) return;
    if (r0 >= r1) {
        for (uint64_t o = o0; o < o1; ++o) row[o] = 0.0f;
        return;
    }
    const int reduce_inner = td->out_rank == 0 || (td->red_rank > 0 && td->red_strides[td->red_rank - 1] == 1);
    if (reduce_inner) {
        Walk wo, wr;
        walk_start(&wo, td->out_rank, td->out_dims, td->out_strides, o0);
        for (uint64_t o = o0; o < o1; ++o) {
            const DTYPE_X *base = xp + wo.off;
            walk_start(&wr, td->red_rank, td->red_dims, td->red_strides, r0);
            float s = TO_FLOAT(base[wr.off]);
            walk_advance(&wr, 1);
            uint64_t left = r1 - r0 - 1;
            const int64_t st = wr.strides[wr.rank - 1];
            while (left > 0) {
                uint64_t run = walk_run(&wr);
                if (run > left) run = left;
                const DTYPE_X *p = base + wr.off;
                for (uint64_t j = 0; j < run; ++j) s += TO_FLOAT(p[(int64_t)j * st]);
                left -= run;
                walk_advance(&wr, run);
            }
            row[o] = s;
            walk_advance(&wo, 1);
        }
    } else {
        Walk wo, wr;
        walk_start(&wr, td->red_rank, td->red_dims, td->red_strides, r0);
        for (uint64_t r = r0; r < r1; ++r) {
            const DTYPE_X *base = xp + wr.off;
            walk_start(&wo, td->out_rank, td->out_dims, td->out_strides, o0);
            const int64_t st = wo.strides[wo.rank - 1];
            uint64_t o = o0;
            while (o < o1) {
                uint64_t run = walk_run(&wo);
                if (run > o1 - o) run = o1 - o;
                const DTYPE_X *p = base + wo.off;
                if (r == r0) {
                    for (uint64_t j = 0; j < run; ++j) row[o + j] = TO_FLOAT(p[(int64_t)j * st]);
                } else {
                    for (uint64_t j = 0; j < run; ++j) row[o + j] += TO_FLOAT(p[(int64_t)j * st]);
                }
                o += run;
                walk_advance(&wo, run);
            }
            walk_advance(&wr, 1);
        }
    }
}

#if !OPBUILD_DETERMINISTIC
static inline float bits_to_float(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static inline uint32_t float_to_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static inline void atomic_add_float(uint32_t *target, float v) {
    uint32_t old = __atomic_load_n(target, __ATOMIC_RELAXED);
    uint32_t desired;
    do {
        desired = float_to_bits(bits_to_float(old) + v);
    } while (!__atomic_compare_exchange(target, &old, &desired, 1, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
}
#endif

KERNEL_ENTRY void reduce_sum_custom(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
    GET_TILING_DATA(td, tiling);
    /* Failures here are the same for every block, so all blocks leave before any SyncAll. */
    if (GetBlockNum() != td.block_dim || td.block_dim != td.red_blocks * td.out_blocks || td.block_dim == 0)
        KERNEL_FAIL("%s: launched with %u blocks but the tiling is for %u (%u x %u)", OPBUILD_BINARY_NAME,
                    GetBlockNum(), td.block_dim, td.red_blocks, td.out_blocks);
    if (td.out_rank > RS_MAX_DIMS || td.red_rank > RS_MAX_DIMS)
        KERNEL_FAIL("%s: view ranks %u / %u above 8", OPBUILD_BINARY_NAME, td.out_rank, td.red_rank);
    if (td.out_count > 0 && workspace == NULL) KERNEL_FAIL("%s: no workspace", OPBUILD_BINARY_NAME);

    const uint32_t b = GetBlockIdx();
    const uint64_t br = b / td.out_blocks, bo = b % td.out_blocks;
    uint64_t o0, o1, r0, r1, f0, f1;
    slice(td.out_count, td.out_blocks, bo, &o0, &o1);
    slice(td.red_count, td.red_blocks, br, &r0, &r1);
    opbuild_block_range(td.out_count, &f0, &f1); /* phase 2: this block's outputs */
    float *partials = (float *)workspace;
    float *row = partials + br * td.out_count;
    DTYPE_Y *yp = (DTYPE_Y *)y;

#if OPBUILD_DETERMINISTIC
    partial_sums((const DTYPE_X *)x, &td, row, o0, o1, r0, r1);
    SyncAll();
    for (uint64_t o = f0; o < f1; ++o) {
        float s = partials[o];
        for (uint64_t k = 1; k < td.red_blocks; ++k) s += partials[k * td.out_count + o];
        yp[o] = FROM_FLOAT(DTYPE_Y, s);
    }
#else
    uint32_t *acc = (uint32_t *)(partials + (uint64_t)td.red_blocks * td.out_count);
    if (b == 0)
        for (uint64_t o = 0; o < td.out_count; ++o) acc[o] = 0x80000000u; /* -0.0f */
    SyncAll();
    partial_sums((const DTYPE_X *)x, &td, row, o0, o1, r0, r1);
    for (uint64_t o = o0; o < o1; ++o) atomic_add_float(&acc[o], row[o]);
    SyncAll();
    for (uint64_t o = f0; o < f1; ++o) yp[o] = FROM_FLOAT(DTYPE_Y, bits_to_float(__atomic_load_n(&acc[o], __ATOMIC_RELAXED)));
#endif
}
