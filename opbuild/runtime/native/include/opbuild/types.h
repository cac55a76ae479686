/* opbuild/types.h: GE data type and format enums shared by kernels, tiling and the host.
 *
 * The integer values are GE's (ge::DataType, ge::Format); simplified keys in default mode are
 * made of them, so they must never change.
 */
#ifndef OPBUILD_TYPES_H
#define OPBUILD_TYPES_H

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Macros (not an enum) so that `#if ORIG_DTYPE_X == OPBUILD_DT_FLOAT16` works in kernels. */
#define OPBUILD_DT_FLOAT 0
#define OPBUILD_DT_FLOAT16 1
#define OPBUILD_DT_INT8 2
#define OPBUILD_DT_INT32 3
#define OPBUILD_DT_UINT8 4
#define OPBUILD_DT_INT16 6
#define OPBUILD_DT_UINT16 7
#define OPBUILD_DT_UINT32 8
#define OPBUILD_DT_INT64 9
#define OPBUILD_DT_UINT64 10
#define OPBUILD_DT_DOUBLE 11
#define OPBUILD_DT_BOOL 12
#define OPBUILD_DT_BF16 27

#define OPBUILD_FORMAT_NCHW 0
#define OPBUILD_FORMAT_NHWC 1
#define OPBUILD_FORMAT_ND 2

/* Device half precision: the host compiler's native _Float16 (gcc >= 12 on x86_64 / aarch64). */
typedef _Float16 half;

/* bfloat16 storage: the upper 16 bits of an IEEE float32. */
typedef struct { uint16_t bits; } bfloat16_t;

static inline float opbuild_bf16_to_float(bfloat16_t v) {
    uint32_t u = (uint32_t)v.bits << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Round to nearest even; NaN stays a quiet NaN. */
static inline bfloat16_t opbuild_float_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    bfloat16_t r;
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        r.bits = (uint16_t)((u >> 16) | 0x0040u);
        return r;
    }
    u += 0x7fffu + ((u >> 16) & 1u);
    r.bits = (uint16_t)(u >> 16);
    return r;
}

static inline float opbuild_half_to_float(half v) { return (float)v; }
static inline half opbuild_float_to_half(float f) { return (half)f; }

#ifdef __cplusplus
}
#endif
#endif /* OPBUILD_TYPES_H */
