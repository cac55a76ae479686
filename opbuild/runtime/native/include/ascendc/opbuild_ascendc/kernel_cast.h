/* opbuild_ascendc/kernel_cast.h: Cast (with RoundMode), Compare/CompareScalar and Select (level 2).
 *
 *   Cast(dst<U>, src<T>, RoundMode, count): each value rounded once to U:
 *     CAST_NONE / CAST_RINT  nearest, ties to even        CAST_FLOOR  toward -inf
 *     CAST_CEIL              toward +inf                  CAST_TRUNC  toward zero
 *     CAST_ROUND             nearest, ties away from zero CAST_ODD    toward the neighbour whose last bit is odd
 *   an integer U saturates at its range (NaN -> 0). CAST_NONE on an exact conversion changes nothing.
 *   Compare(dst, src0, src1, CMPMODE, count) / CompareScalar(dst, src0, scalar, CMPMODE, count):
 *     bit i of dst (bit i % 8 of byte i / 8) = src0[i] <op> src1[i].
 *   Select(dst, selMask, src0, src1, SELMODE, count): dst[i] = bit i of selMask ? src0[i] : src1[i]
 *     (VSEL_TENSOR_TENSOR_MODE), or src1 a scalar (VSEL_TENSOR_SCALAR_MODE).
 */
#ifndef OPBUILD_ASCENDC_KERNEL_CAST_H
#define OPBUILD_ASCENDC_KERNEL_CAST_H

#include "opbuild_ascendc/kernel_mask.h"

namespace AscendC {
enum class RoundMode : uint8_t { CAST_NONE = 0, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD, CAST_HYBRID };
enum class CMPMODE : uint8_t { LT = 0, GT, EQ, LE, GE, NE };
enum class SELMODE : uint8_t { VSEL_CMPMASK_SPR = 0, VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE };
}  // namespace AscendC

namespace opbuild {
namespace ascendc {

template <class D>
struct Bits;
template <>
struct Bits<float> {
    using type = uint32_t;
};
template <>
struct Bits<half> {
    using type = uint16_t;
};
template <>
struct Bits<bfloat16_t> {
    using type = uint16_t;
};

/* The neighbour of a finite x one step up or down (IEEE sign-magnitude bits). */
template <class D>
inline D next_value(D x, bool toward_up) {
    using U = typename Bits<D>::type;
    const U sign = (U)((U)1 << (8 * sizeof(U) - 1));
    U b;
    std::memcpy(&b, &x, sizeof b);
    if ((U)(b & (U)~sign) == 0)
        b = toward_up ? (U)1 : (U)(sign | 1);
    else if (((b & sign) == 0) == toward_up)
        b = (U)(b + 1);
    else
        b = (U)(b - 1);
    std::memcpy(&x, &b, sizeof b);
    return x;
}

template <class D>
inline bool last_bit_odd(D x) {
    typename Bits<D>::type b;
    std::memcpy(&b, &x, sizeof b);
    return b & 1u;
}

/* v rounded to the floating type D under mode m. */
template <class D>
inline D round_float(double v, AscendC::RoundMode m) {
    using AscendC::RoundMode;
    D nearest = static_cast<D>(v);
    if (std::isnan(v) || std::isinf(v) || (double)(acc_t<D>)nearest == v) return nearest;
    D lo, hi;
    if ((double)(acc_t<D>)nearest < v) {
        lo = nearest;
        hi = next_value(nearest, true);
    } else {
        hi = nearest;
        lo = next_value(nearest, false);
    }
    switch (m) {
        case RoundMode::CAST_FLOOR: return lo;
        case RoundMode::CAST_CEIL: return hi;
        case RoundMode::CAST_TRUNC: return v > 0 ? lo : hi;
        case RoundMode::CAST_ODD: return last_bit_odd(lo) ? lo : hi;
        case RoundMode::CAST_ROUND: {
            double dl = v - (double)(acc_t<D>)lo, dh = (double)(acc_t<D>)hi - v;
            if (dl == dh) return v > 0 ? hi : lo;
            return nearest;
        }
        default: return nearest;
    }
}

template <class D>
inline D round_int(double v, AscendC::RoundMode m) {
    using AscendC::RoundMode;
    if (std::isnan(v)) return D(0);
    double r;
    switch (m) {
        case RoundMode::CAST_FLOOR: r = std::floor(v); break;
        case RoundMode::CAST_CEIL: r = std::ceil(v); break;
        case RoundMode::CAST_TRUNC: r = std::trunc(v); break;
        case RoundMode::CAST_ROUND: r = std::round(v); break;
        default: r = std::nearbyint(v); break;
    }
    const double lo = (double)std::numeric_limits<D>::min(), hi = (double)std::numeric_limits<D>::max();
    if (r <= lo) return std::numeric_limits<D>::min();
    if (r >= hi) return std::numeric_limits<D>::max();
    return static_cast<D>(r);
}

template <class D>
inline D cast_value(double v, AscendC::RoundMode m) {
    if constexpr (std::is_integral<D>::value)
        return round_int<D>(v, m);
    else
        return round_float<D>(v, m);
}

template <class T>
inline bool compare(T a, T b, AscendC::CMPMODE m) {
    acc_t<T> x = up(a), y = up(b);
    switch (m) {
        case AscendC::CMPMODE::LT: return x < y;
        case AscendC::CMPMODE::GT: return x > y;
        case AscendC::CMPMODE::EQ: return x == y;
        case AscendC::CMPMODE::LE: return x <= y;
        case AscendC::CMPMODE::GE: return x >= y;
        default: return x != y;
    }
}

template <class U>
inline uint8_t *mask_bytes(const char *api, const AscendC::LocalTensor<U> &m, uint32_t count) {
    uint64_t need = ((uint64_t)count + 7) / 8, have = (uint64_t)m.GetSize() * sizeof(U);
    if (need > have)
        fail(api, "a mask of %u bits needs %llu bytes, its LocalTensor holds %llu", count, (unsigned long long)need,
             (unsigned long long)have);
    return reinterpret_cast<uint8_t *>(m.data());
}

}  // namespace ascendc
}  // namespace opbuild

namespace AscendC {

template <class U, class T>
inline void Cast(const LocalTensor<U> &dst, const LocalTensor<T> &src, const RoundMode &roundMode, const uint32_t count) {
    namespace oa = ::opbuild::ascendc;
    oa::check_span<U>("Cast", "dst", 0, count, dst.GetSize());
    oa::check_span<T>("Cast", "src", 0, count, src.GetSize());
    U *d = dst.data();
    const T *s = src.data();
    for (uint32_t i = 0; i < count; ++i) d[i] = oa::cast_value<U>((double)oa::up(s[i]), roundMode);
}

template <class U, class T>
inline void Compare(const LocalTensor<U> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1, CMPMODE cmpMode,
                    const uint32_t count) {
    namespace oa = ::opbuild::ascendc;
    oa::check_span<T>("Compare", "src0", 0, count, src0.GetSize());
    oa::check_span<T>("Compare", "src1", 0, count, src1.GetSize());
    uint8_t *bits = oa::mask_bytes("Compare", dst, count);
    std::memset(bits, 0, (count + 7) / 8);
    for (uint32_t i = 0; i < count; ++i)
        if (oa::compare(src0.data()[i], src1.data()[i], cmpMode)) bits[i / 8] |= (uint8_t)(1u << (i % 8));
}

template <class U, class T>
inline void CompareScalar(const LocalTensor<U> &dst, const LocalTensor<T> &src0,
                          const typename std::enable_if<true, T>::type src1Scalar, CMPMODE cmpMode, const uint32_t count) {
    namespace oa = ::opbuild::ascendc;
    oa::check_span<T>("CompareScalar", "src0", 0, count, src0.GetSize());
    uint8_t *bits = oa::mask_bytes("CompareScalar", dst, count);
    std::memset(bits, 0, (count + 7) / 8);
    for (uint32_t i = 0; i < count; ++i)
        if (oa::compare(src0.data()[i], src1Scalar, cmpMode)) bits[i / 8] |= (uint8_t)(1u << (i % 8));
}

template <class T, class U>
inline void Select(const LocalTensor<T> &dst, const LocalTensor<U> &selMask, const LocalTensor<T> &src0,
                   const LocalTensor<T> &src1, SELMODE selMode, uint32_t count) {
    namespace oa = ::opbuild::ascendc;
    if (selMode != SELMODE::VSEL_TENSOR_TENSOR_MODE)
        oa::fail("Select", "SELMODE %u with two tensors is not yet supported by the CPU twin (use VSEL_TENSOR_TENSOR_MODE)",
                 (unsigned)selMode);
    oa::check_span<T>("Select", "dst", 0, count, dst.GetSize());
    oa::check_span<T>("Select", "src0", 0, count, src0.GetSize());
    oa::check_span<T>("Select", "src1", 0, count, src1.GetSize());
    const uint8_t *bits = oa::mask_bytes("Select", selMask, count);
    for (uint32_t i = 0; i < count; ++i) dst.data()[i] = (bits[i / 8] >> (i % 8)) & 1u ? src0.data()[i] : src1.data()[i];
}

template <class T, class U>
inline void Select(const LocalTensor<T> &dst, const LocalTensor<U> &selMask, const LocalTensor<T> &src0,
                   const typename std::enable_if<true, T>::type src1, SELMODE selMode, uint32_t count) {
    namespace oa = ::opbuild::ascendc;
    if (selMode != SELMODE::VSEL_TENSOR_SCALAR_MODE)
        oa::fail("Select", "SELMODE %u with a scalar is not yet supported by the CPU twin (use VSEL_TENSOR_SCALAR_MODE)",
                 (unsigned)selMode);
    oa::check_span<T>("Select", "dst", 0, count, dst.GetSize());
    oa::check_span<T>("Select", "src0", 0, count, src0.GetSize());
    const uint8_t *bits = oa::mask_bytes("Select", selMask, count);
    for (uint32_t i = 0; i < count; ++i) dst.data()[i] = (bits[i / 8] >> (i % 8)) & 1u ? src0.data()[i] : src1;
}

}  // namespace AscendC

#endif /* OPBUILD_ASCENDC_KERNEL_CAST_H */
