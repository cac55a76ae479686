/* opbuild/types.h: GE data type and format codes and the element types shared by kernels, tiling
 * and the host.
 *
 * The codes (OPBUILD_DT_*, OPBUILD_FORMAT_*) are GE's (ge::DataType, ge::Format), defined in the
 * generated opbuild/vocabulary_gen.h; simplified keys in default mode are made of them, so they
 * never change.
 */
#ifndef OPBUILD_TYPES_H
#define OPBUILD_TYPES_H

#include <stdint.h>
#include <string.h>

/* OPBUILD_DT_* and OPBUILD_FORMAT_* (and the rest of the vocabulary), generated from
 * opbuild/abi/vocabulary.py; found beside this header whatever the include path. */
#include "vocabulary_gen.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Device half precision: the host compiler's native _Float16 (gcc >= 12 on x86_64 / aarch64). */
typedef _Float16 half;

/* The bfloat16 bits nearest to f (round to nearest even; NaN stays a quiet NaN): the one rounding
 * rule of both bfloat16_t definitions below. */
static inline uint16_t opbuild_bf16_bits_(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float opbuild_bf16_bits_to_float_(uint16_t bits) {
    uint32_t u = (uint32_t)bits << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

#if defined(__cplusplus) && defined(OPBUILD_ASCENDC)
}  /* extern "C" */
#include <type_traits>
/* Ascend C kernels (kernel_operator.h defines OPBUILD_ASCENDC) see an arithmetic bfloat16_t: the
 * same 2-byte layout as the C struct, converting to and from float (round to nearest even). */
struct bfloat16_t {
    uint16_t bits;
    bfloat16_t() = default;
    template <class U, class = typename std::enable_if<std::is_arithmetic<U>::value ||
                                                       std::is_same<U, _Float16>::value>::type>
    bfloat16_t(U v) noexcept : bits(opbuild_bf16_bits_((float)v)) {}
    operator float() const noexcept { return opbuild_bf16_bits_to_float_(bits); }
};
extern "C" {
#else
/* bfloat16 storage: the upper 16 bits of an IEEE float32. */
typedef struct { uint16_t bits; } bfloat16_t;
#endif

static inline float opbuild_bf16_to_float(bfloat16_t v) { return opbuild_bf16_bits_to_float_(v.bits); }

/* Round to nearest even; NaN stays a quiet NaN. */
static inline bfloat16_t opbuild_float_to_bf16(float f) {
    bfloat16_t r;
    r.bits = opbuild_bf16_bits_(f);
    return r;
}

static inline float opbuild_half_to_float(half v) { return (float)v; }
static inline half opbuild_float_to_half(float f) { return (half)f; }

#ifdef __cplusplus
}
#endif
#endif /* OPBUILD_TYPES_H */
