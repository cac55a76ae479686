/* opbuild_ascendc/kernel_vec.h: elementwise vector APIs, level 2 (count) and level 0 (mask, repeats).
 *
 *   level 2:  Add(dst, src0, src1, count)              dst[i] = src0[i] + src1[i], i < count
 *   level 0:  Add<T, isSetMask>(dst, src0, src1, mask, repeatTimes, BinaryRepeatParams)
 *             the lanes of kernel_mask.h, each operand with its own block / repeat stride.
 * Numerics: half and bfloat16_t are computed in float and rounded once per op (to nearest even);
 * float in float. The scalar of Adds/Muls/Maxs/Mins/LeakyRelu/Duplicate is first converted to T.
 */
#ifndef OPBUILD_ASCENDC_KERNEL_VEC_H
#define OPBUILD_ASCENDC_KERNEL_VEC_H

#include "opbuild_ascendc/kernel_mask.h"

namespace opbuild {
namespace ascendc {

/* The level-2 element loops, simple enough for the compiler to vectorize (O3 here: kernels are
 * built with -O2). No restrict: dst may be one of the sources (an in-place op), and GCC checks
 * overlap at run time. On x86 the half/bfloat16 loops run with the F16C conversion instructions
 * when the CPU has them (exact IEEE conversions, like the default libgcc calls, but vectorized). */
#define OPBUILD_ASCENDC_BINARY_LOOP \
    for (int64_t i = 0; i < n; ++i) d[i] = down<T>(f(up(a[i]), up(b[i])))
#define OPBUILD_ASCENDC_UNARY_LOOP \
    for (int64_t i = 0; i < n; ++i) d[i] = down<T>(f(up(a[i])))

template <class T, class F>
__attribute__((optimize("O3"))) inline void binary_loop_plain(T *d, const T *a, const T *b, int64_t n, F f) {
    OPBUILD_ASCENDC_BINARY_LOOP;
}
template <class T, class F>
__attribute__((optimize("O3"))) inline void unary_loop_plain(T *d, const T *a, int64_t n, F f) {
    OPBUILD_ASCENDC_UNARY_LOOP;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
template <class T, class F>
__attribute__((optimize("O3"), target("avx,f16c"))) inline void binary_loop_f16c(T *d, const T *a, const T *b, int64_t n,
                                                                                  F f) {
    OPBUILD_ASCENDC_BINARY_LOOP;
}
template <class T, class F>
__attribute__((optimize("O3"), target("avx,f16c"))) inline void unary_loop_f16c(T *d, const T *a, int64_t n, F f) {
    OPBUILD_ASCENDC_UNARY_LOOP;
}
inline bool have_f16c() {
    static const bool yes = __builtin_cpu_supports("f16c");
    return yes;
}
#define OPBUILD_ASCENDC_F16C(call_f16c)                          \
    if (std::is_same<T, half>::value && have_f16c()) {           \
        call_f16c;                                               \
        return;                                                  \
    }
#else
#define OPBUILD_ASCENDC_F16C(call_f16c)
#endif

template <class T, class F>
inline void binary_loop(T *d, const T *a, const T *b, int64_t n, F f) {
    OPBUILD_ASCENDC_F16C(binary_loop_f16c(d, a, b, n, f))
    binary_loop_plain(d, a, b, n, f);
}
template <class T, class F>
inline void unary_loop(T *d, const T *a, int64_t n, F f) {
    OPBUILD_ASCENDC_F16C(unary_loop_f16c(d, a, n, f))
    unary_loop_plain(d, a, n, f);
}
#undef OPBUILD_ASCENDC_F16C
#undef OPBUILD_ASCENDC_BINARY_LOOP
#undef OPBUILD_ASCENDC_UNARY_LOOP

template <class T, class F>
inline void l2_binary(const char *api, const AscendC::LocalTensor<T> &d, const AscendC::LocalTensor<T> &a,
                      const AscendC::LocalTensor<T> &b, int64_t count, F f) {
    check_count(api, count);
    check_span<T>(api, "dst", 0, (uint64_t)count, d.GetSize());
    check_span<T>(api, "src0", 0, (uint64_t)count, a.GetSize());
    check_span<T>(api, "src1", 0, (uint64_t)count, b.GetSize());
    binary_loop(d.data(), a.data(), b.data(), count, f);
}

template <class T, class F>
inline void l2_unary(const char *api, const AscendC::LocalTensor<T> &d, const AscendC::LocalTensor<T> &a, int64_t count,
                     F f) {
    check_count(api, count);
    check_span<T>(api, "dst", 0, (uint64_t)count, d.GetSize());
    check_span<T>(api, "src", 0, (uint64_t)count, a.GetSize());
    unary_loop(d.data(), a.data(), count, f);
}

template <class T, class F>
inline void l0_binary(const char *api, const AscendC::LocalTensor<T> &d, const AscendC::LocalTensor<T> &a,
                      const AscendC::LocalTensor<T> &b, const Lanes &L, const AscendC::BinaryRepeatParams &p, F f) {
    Stride sd{p.dstBlkStride, p.dstRepStride}, sa{p.src0BlkStride, p.src0RepStride}, sb{p.src1BlkStride, p.src1RepStride};
    check_lanes(api, "dst", L, sd, d.GetSize());
    check_lanes(api, "src0", L, sa, a.GetSize());
    check_lanes(api, "src1", L, sb, b.GetSize());
    T *dp = d.data();
    const T *ap = a.data(), *bp = b.data();
    for (uint32_t r = 0; r < L.repeats; ++r)
        for (uint32_t j = 0; j < L.per_repeat; ++j)
            if (L.active(r, j))
                dp[lane_elem(L, sd, r, j)] = down<T>(f(up(ap[lane_elem(L, sa, r, j)]), up(bp[lane_elem(L, sb, r, j)])));
}

template <class T, class F>
inline void l0_unary(const char *api, const AscendC::LocalTensor<T> &d, const AscendC::LocalTensor<T> &a, const Lanes &L,
                     const AscendC::UnaryRepeatParams &p, F f) {
    Stride sd{p.dstBlkStride, p.dstRepStride}, sa{p.srcBlkStride, p.srcRepStride};
    check_lanes(api, "dst", L, sd, d.GetSize());
    check_lanes(api, "src", L, sa, a.GetSize());
    T *dp = d.data();
    const T *ap = a.data();
    for (uint32_t r = 0; r < L.repeats; ++r)
        for (uint32_t j = 0; j < L.per_repeat; ++j)
            if (L.active(r, j)) dp[lane_elem(L, sd, r, j)] = down<T>(f(up(ap[lane_elem(L, sa, r, j)])));
}

template <class A>
inline A relu(A a) {
    return a > A(0) ? a : A(0);
}

}  // namespace ascendc
}  // namespace opbuild

/* The three forms of a binary API. */
#define OPBUILD_ASCENDC_BINARY(NAME, EXPR)                                                                     \
    template <class T>                                                                                       \
    inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,      \
                     const int32_t &count) {                                                                 \
        ::opbuild::ascendc::l2_binary(#NAME, dst, src0, src1, count, [](auto a, auto b) { return EXPR; });   \
    }                                                                                                        \
    template <class T, bool isSetMask = true, class M, ::opbuild::ascendc::if_integral<M> = 0>             \
    inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,      \
                     M mask, const uint8_t repeatTimes, const BinaryRepeatParams &params) {                  \
        ::opbuild::ascendc::l0_binary(#NAME, dst, src0, src1,                                                \
                                      ::opbuild::ascendc::lanes<T, isSetMask>(#NAME, (uint64_t)mask, repeatTimes), params, \
                                      [](auto a, auto b) { return EXPR; });                                  \
    }                                                                                                        \
    template <class T, bool isSetMask = true>                                                                \
    inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,      \
                     const uint64_t mask[], const uint8_t repeatTimes, const BinaryRepeatParams &params) {   \
        ::opbuild::ascendc::l0_binary(#NAME, dst, src0, src1,                                                \
                                      ::opbuild::ascendc::lanes<T, isSetMask>(#NAME, mask, repeatTimes), params, \
                                      [](auto a, auto b) { return EXPR; });                                  \
    }

#define OPBUILD_ASCENDC_UNARY(NAME, EXPR)                                                                      \
    template <class T>                                                                                       \
    inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t &count) {           \
        ::opbuild::ascendc::l2_unary(#NAME, dst, src, count, [](auto a) { return EXPR; });                   \
    }                                                                                                        \
    template <class T, bool isSetMask = true, class M, ::opbuild::ascendc::if_integral<M> = 0>             \
    inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, M mask,                           \
                     const uint8_t repeatTimes, const UnaryRepeatParams &params) {                           \
        ::opbuild::ascendc::l0_unary(#NAME, dst, src, ::opbuild::ascendc::lanes<T, isSetMask>(#NAME, mask, repeatTimes), \
                                     params, [](auto a) { return EXPR; });                                   \
    }                                                                                                        \
    template <class T, bool isSetMask = true>                                                                \
    inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint64_t mask[],            \
                     const uint8_t repeatTimes, const UnaryRepeatParams &params) {                           \
        ::opbuild::ascendc::l0_unary(#NAME, dst, src, ::opbuild::ascendc::lanes<T, isSetMask>(#NAME, mask, repeatTimes), \
                                     params, [](auto a) { return EXPR; });                                   \
    }

/* Tensor-scalar APIs: `s` is the scalar converted to T, then to the arithmetic type. */
#define OPBUILD_ASCENDC_SCALAR(NAME, EXPR)                                                                     \
    template <class T, class U>                                                                              \
    inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const U &scalar, const int32_t &count) { \
        auto s = ::opbuild::ascendc::up(static_cast<T>(scalar));                                             \
        ::opbuild::ascendc::l2_unary(#NAME, dst, src, count, [s](auto a) { return EXPR; });                  \
    }                                                                                                        \
    template <class T, bool isSetMask = true, class U = T, class M, ::opbuild::ascendc::if_integral<M> = 0> \
    inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const U &scalar, M mask,          \
                     const uint8_t repeatTimes, const UnaryRepeatParams &params) {                           \
        auto s = ::opbuild::ascendc::up(static_cast<T>(scalar));                                             \
        ::opbuild::ascendc::l0_unary(#NAME, dst, src, ::opbuild::ascendc::lanes<T, isSetMask>(#NAME, mask, repeatTimes), \
                                     params, [s](auto a) { return EXPR; });                                  \
    }                                                                                                        \
    template <class T, bool isSetMask = true, class U = T>                                                   \
    inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const U &scalar, const uint64_t mask[], \
                     const uint8_t repeatTimes, const UnaryRepeatParams &params) {                           \
        auto s = ::opbuild::ascendc::up(static_cast<T>(scalar));                                             \
        ::opbuild::ascendc::l0_unary(#NAME, dst, src, ::opbuild::ascendc::lanes<T, isSetMask>(#NAME, mask, repeatTimes), \
                                     params, [s](auto a) { return EXPR; });                                  \
    }

namespace AscendC {

OPBUILD_ASCENDC_BINARY(Add, a + b)
OPBUILD_ASCENDC_BINARY(Sub, a - b)
OPBUILD_ASCENDC_BINARY(Mul, a * b)
OPBUILD_ASCENDC_BINARY(Div, a / b)
OPBUILD_ASCENDC_BINARY(Max, a > b ? a : b)
OPBUILD_ASCENDC_BINARY(Min, a < b ? a : b)
OPBUILD_ASCENDC_BINARY(And, a & b)
OPBUILD_ASCENDC_BINARY(Or, a | b)
OPBUILD_ASCENDC_BINARY(AddRelu, ::opbuild::ascendc::relu(a + b))
OPBUILD_ASCENDC_BINARY(SubRelu, ::opbuild::ascendc::relu(a - b))

OPBUILD_ASCENDC_UNARY(Abs, a < decltype(a)(0) ? -a : a)
OPBUILD_ASCENDC_UNARY(Exp, std::exp(a))
OPBUILD_ASCENDC_UNARY(Ln, std::log(a))
OPBUILD_ASCENDC_UNARY(Sqrt, std::sqrt(a))
OPBUILD_ASCENDC_UNARY(Rsqrt, decltype(a)(1) / std::sqrt(a))
OPBUILD_ASCENDC_UNARY(Reciprocal, decltype(a)(1) / a)
OPBUILD_ASCENDC_UNARY(Relu, ::opbuild::ascendc::relu(a))
OPBUILD_ASCENDC_UNARY(Not, ~a)

OPBUILD_ASCENDC_SCALAR(Adds, a + s)
OPBUILD_ASCENDC_SCALAR(Muls, a * s)
OPBUILD_ASCENDC_SCALAR(Maxs, a > s ? a : s)
OPBUILD_ASCENDC_SCALAR(Mins, a < s ? a : s)
OPBUILD_ASCENDC_SCALAR(LeakyRelu, a >= decltype(a)(0) ? a : a * s)

/* dst[i] = scalar, i < count. */
template <class T, class U>
inline void Duplicate(const LocalTensor<T> &dst, const U &scalar, const int32_t &count) {
    ::opbuild::ascendc::check_count("Duplicate", count);
    ::opbuild::ascendc::check_span<T>("Duplicate", "dst", 0, (uint64_t)count, dst.GetSize());
    const T v = static_cast<T>(scalar);
    T *d = dst.data();
    for (int32_t i = 0; i < count; ++i) d[i] = v;
}

template <class T, bool isSetMask = true, class U = T, class M, ::opbuild::ascendc::if_integral<M> = 0>
inline void Duplicate(const LocalTensor<T> &dst, const U &scalar, M mask, const uint8_t repeatTimes,
                      const uint16_t dstBlockStride, const uint8_t dstRepeatStride) {
    namespace oa = ::opbuild::ascendc;
    oa::Lanes L = oa::lanes<T, isSetMask>("Duplicate", (uint64_t)mask, repeatTimes);
    oa::Stride sd{dstBlockStride, dstRepeatStride};
    oa::check_lanes("Duplicate", "dst", L, sd, dst.GetSize());
    const T v = static_cast<T>(scalar);
    for (uint32_t r = 0; r < L.repeats; ++r)
        for (uint32_t j = 0; j < L.per_repeat; ++j)
            if (L.active(r, j)) dst.data()[oa::lane_elem(L, sd, r, j)] = v;
}

template <class T, bool isSetMask = true, class U = T>
inline void Duplicate(const LocalTensor<T> &dst, const U &scalar, const uint64_t mask[], const uint8_t repeatTimes,
                      const uint16_t dstBlockStride, const uint8_t dstRepeatStride) {
    namespace oa = ::opbuild::ascendc;
    oa::Lanes L = oa::lanes<T, isSetMask>("Duplicate", mask, repeatTimes);
    oa::Stride sd{dstBlockStride, dstRepeatStride};
    oa::check_lanes("Duplicate", "dst", L, sd, dst.GetSize());
    const T v = static_cast<T>(scalar);
    for (uint32_t r = 0; r < L.repeats; ++r)
        for (uint32_t j = 0; j < L.per_repeat; ++j)
            if (L.active(r, j)) dst.data()[oa::lane_elem(L, sd, r, j)] = v;
}

/* dst[i] = the element of src at byte srcBaseAddr + srcOffset[i] (offsets in bytes), i < count. */
template <class T>
inline void Gather(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<uint32_t> &srcOffset,
                   const uint32_t srcBaseAddr, const uint32_t count) {
    namespace oa = ::opbuild::ascendc;
    oa::check_span<T>("Gather", "dst", 0, count, dst.GetSize());
    oa::check_span<uint32_t>("Gather", "srcOffset", 0, count, srcOffset.GetSize());
    const uint64_t have = (uint64_t)src.GetSize() * sizeof(T);
    for (uint32_t i = 0; i < count; ++i) {
        uint64_t at = (uint64_t)srcBaseAddr + srcOffset.data()[i];
        if (at % sizeof(T) != 0 || at + sizeof(T) > have)
            oa::fail("Gather", "element %u: byte offset %llu is outside (or not aligned in) the src LocalTensor of %llu bytes",
                     i, (unsigned long long)at, (unsigned long long)have);
        dst.data()[i] = src.data()[at / sizeof(T)];
    }
}

}  // namespace AscendC

#undef OPBUILD_ASCENDC_BINARY
#undef OPBUILD_ASCENDC_UNARY
#undef OPBUILD_ASCENDC_SCALAR

#endif /* OPBUILD_ASCENDC_KERNEL_VEC_H */
