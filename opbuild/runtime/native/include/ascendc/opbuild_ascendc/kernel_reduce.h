/* opbuild_ascendc/kernel_reduce.h: reductions.
 *
 *   WholeReduceSum<T, isSetMask>(dst, src, mask, repeatTimes, dstRepStride, srcBlkStride, srcRepStride)
 *       per repeat r, the sum of its running lanes -> dst[r * dstRepStride] (dstRepStride counts
 *       reduced results, i.e. elements); WholeReduceMax/Min write (value, index-in-repeat) pairs
 *       (ORDER_VALUE_INDEX), (index, value) (ORDER_INDEX_VALUE) or the value alone (ORDER_ONLY_VALUE),
 *       dstRepStride counting such results.
 *   BlockReduceSum/Max/Min<T, isSetMask>(dst, src, repeatTimes, mask, dstRepStride, srcBlkStride, srcRepStride)
 *       per repeat r and 32-byte block k with a running lane, the reduction of its running lanes ->
 *       dst[r * dstRepStride * 8 + k] (dstRepStride counts a repeat's 8 results).
 *   RepeatReduceSum: WholeReduceSum with a count mask.
 *   ReduceSum/ReduceMax/ReduceMin(dst, src, sharedTmpBuffer, count[, calIndex]) -> dst[0]
 *       (ReduceMax/Min with calIndex: the index of the first extreme in dst[1], as an integer's bits).
 * Numerics: a sum is accumulated in double and rounded once to T (the device adds pairwise in T;
 * half sums can differ in the last bits, and the device saturates half at 65504).
 */
#ifndef OPBUILD_ASCENDC_KERNEL_REDUCE_H
#define OPBUILD_ASCENDC_KERNEL_REDUCE_H

#include "opbuild_ascendc/kernel_mask.h"

namespace AscendC {
enum class ReduceOrder : uint8_t { ORDER_VALUE_INDEX = 0, ORDER_INDEX_VALUE, ORDER_ONLY_VALUE, ORDER_ONLY_INDEX };
constexpr ReduceOrder ORDER_VALUE_INDEX = ReduceOrder::ORDER_VALUE_INDEX;
constexpr ReduceOrder ORDER_INDEX_VALUE = ReduceOrder::ORDER_INDEX_VALUE;
constexpr ReduceOrder ORDER_ONLY_VALUE = ReduceOrder::ORDER_ONLY_VALUE;
constexpr ReduceOrder ORDER_ONLY_INDEX = ReduceOrder::ORDER_ONLY_INDEX;
}  // namespace AscendC

namespace opbuild {
namespace ascendc {

enum class RedOp { SUM, MAX, MIN };

/* Reduction of a set of lanes: running value and the lane of the first extreme. */
struct Red {
    RedOp op;
    double v = 0;
    int64_t idx = -1;
    void add(double x, int64_t lane) {
        if (idx < 0) {
            v = x;
            idx = lane;
        } else if (op == RedOp::SUM) {
            v += x;
        } else if (op == RedOp::MAX ? x > v : x < v) {
            v = x;
            idx = lane;
        }
    }
};

template <class T>
inline void put_index(T *p, int64_t idx) {
    /* the index as an unsigned integer of T's size, bit for bit */
    if (sizeof(T) == 2) {
        uint16_t u = (uint16_t)idx;
        std::memcpy(p, &u, 2);
    } else if (sizeof(T) == 4) {
        uint32_t u = (uint32_t)idx;
        std::memcpy(p, &u, 4);
    } else {
        *p = (T)idx;
    }
}

template <class T>
inline void whole_reduce(const char *api, RedOp op, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src,
                         const Lanes &L, int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride,
                         AscendC::ReduceOrder order) {
    Stride ss{(uint32_t)srcBlkStride, (uint32_t)srcRepStride};
    check_lanes(api, "src", L, ss, src.GetSize());
    const uint32_t width = op == RedOp::SUM || order == AscendC::ReduceOrder::ORDER_ONLY_VALUE ||
                                   order == AscendC::ReduceOrder::ORDER_ONLY_INDEX
                               ? 1
                               : 2;
    if (L.repeats > 0) {
        uint64_t last = (uint64_t)(L.repeats - 1) * (uint64_t)dstRepStride * width + width;
        check_span<T>(api, "dst", 0, last, dst.GetSize());
    }
    const T *s = src.data();
    T *d = dst.data();
    for (uint32_t r = 0; r < L.repeats; ++r) {
        Red acc{op};
        for (uint32_t j = 0; j < L.per_repeat; ++j)
            if (L.active(r, j)) acc.add((double)up(s[lane_elem(L, ss, r, j)]), j);
        if (acc.idx < 0) acc.idx = 0;
        T *out = d + (uint64_t)r * dstRepStride * width;
        T value = static_cast<T>(acc.v); /* one rounding of the double sum */
        switch (width == 1 ? (op == RedOp::SUM ? AscendC::ReduceOrder::ORDER_ONLY_VALUE : order) : order) {
            case AscendC::ReduceOrder::ORDER_VALUE_INDEX: out[0] = value; put_index(out + 1, acc.idx); break;
            case AscendC::ReduceOrder::ORDER_INDEX_VALUE: put_index(out, acc.idx); out[1] = value; break;
            case AscendC::ReduceOrder::ORDER_ONLY_INDEX: put_index(out, acc.idx); break;
            default: out[0] = value; break;
        }
    }
}

template <class T>
inline void block_reduce(const char *api, RedOp op, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src,
                         const Lanes &L, int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride) {
    Stride ss{(uint32_t)srcBlkStride, (uint32_t)srcRepStride};
    check_lanes(api, "src", L, ss, src.GetSize());
    const uint32_t blocks = L.per_repeat / L.epb;
    const T *s = src.data();
    T *d = dst.data();
    for (uint32_t r = 0; r < L.repeats; ++r) {
        Red acc[8] = {{op}, {op}, {op}, {op}, {op}, {op}, {op}, {op}};
        for (uint32_t j = 0; j < L.per_repeat; ++j)
            if (L.active(r, j)) acc[j / L.epb].add((double)up(s[lane_elem(L, ss, r, j)]), j);
        for (uint32_t k = 0; k < blocks; ++k) {
            if (acc[k].idx < 0) continue;
            uint64_t at = (uint64_t)r * dstRepStride * blocks + k;
            check_span<T>(api, "dst", at, 1, dst.GetSize());
            d[at] = static_cast<T>(acc[k].v);
        }
    }
}

template <class T>
inline void reduce_all(const char *api, RedOp op, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src,
                       int32_t count, bool calIndex) {
    check_count(api, count);
    check_span<T>(api, "src", 0, (uint64_t)count, src.GetSize());
    check_span<T>(api, "dst", 0, calIndex ? 2 : 1, dst.GetSize());
    Red acc{op};
    const T *s = src.data();
    for (int32_t i = 0; i < count; ++i) acc.add((double)up(s[i]), i);
    if (acc.idx < 0) acc.idx = 0;
    dst.data()[0] = static_cast<T>(acc.v);
    if (calIndex) put_index(dst.data() + 1, acc.idx);
}

}  // namespace ascendc
}  // namespace opbuild

#define OPBUILD_ASCENDC_WHOLE(NAME, OP, ORDER_PARAM, ORDER)                                                    \
    template <class T, bool isSetMask = true>                                                                \
    inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t mask,               \
                     const int32_t repeatTimes, const int32_t dstRepStride, const int32_t srcBlkStride,      \
                     const int32_t srcRepStride ORDER_PARAM) {                                               \
        ::opbuild::ascendc::whole_reduce(#NAME, OP, dst, src,                                                \
                                         ::opbuild::ascendc::lanes<T, isSetMask>(#NAME, (uint64_t)mask, repeatTimes), \
                                         dstRepStride, srcBlkStride, srcRepStride, ORDER);                   \
    }                                                                                                        \
    template <class T, bool isSetMask = true>                                                                \
    inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint64_t mask[],            \
                     const int32_t repeatTimes, const int32_t dstRepStride, const int32_t srcBlkStride,      \
                     const int32_t srcRepStride ORDER_PARAM) {                                               \
        ::opbuild::ascendc::whole_reduce(#NAME, OP, dst, src,                                                \
                                         ::opbuild::ascendc::lanes<T, isSetMask>(#NAME, mask, repeatTimes),  \
                                         dstRepStride, srcBlkStride, srcRepStride, ORDER);                   \
    }

#define OPBUILD_ASCENDC_BLOCK(NAME, OP)                                                                        \
    template <class T, bool isSetMask = true>                                                                \
    inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t repeatTimes,        \
                     const int32_t mask, const int32_t dstRepStride, const int32_t srcBlkStride,             \
                     const int32_t srcRepStride) {                                                           \
        ::opbuild::ascendc::block_reduce(#NAME, OP, dst, src,                                                \
                                         ::opbuild::ascendc::lanes<T, isSetMask>(#NAME, (uint64_t)mask, repeatTimes), \
                                         dstRepStride, srcBlkStride, srcRepStride);                          \
    }                                                                                                        \
    template <class T, bool isSetMask = true>                                                                \
    inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t repeatTimes,        \
                     const uint64_t mask[], const int32_t dstRepStride, const int32_t srcBlkStride,          \
                     const int32_t srcRepStride) {                                                           \
        ::opbuild::ascendc::block_reduce(#NAME, OP, dst, src,                                                \
                                         ::opbuild::ascendc::lanes<T, isSetMask>(#NAME, mask, repeatTimes),  \
                                         dstRepStride, srcBlkStride, srcRepStride);                          \
    }

#define OPBUILD_ASCENDC_COMMA ,
namespace AscendC {

OPBUILD_ASCENDC_WHOLE(WholeReduceSum, ::opbuild::ascendc::RedOp::SUM, , ReduceOrder::ORDER_ONLY_VALUE)
OPBUILD_ASCENDC_WHOLE(WholeReduceMax, ::opbuild::ascendc::RedOp::MAX,
                      OPBUILD_ASCENDC_COMMA ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX, order)
OPBUILD_ASCENDC_WHOLE(WholeReduceMin, ::opbuild::ascendc::RedOp::MIN,
                      OPBUILD_ASCENDC_COMMA ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX, order)
OPBUILD_ASCENDC_BLOCK(BlockReduceSum, ::opbuild::ascendc::RedOp::SUM)
OPBUILD_ASCENDC_BLOCK(BlockReduceMax, ::opbuild::ascendc::RedOp::MAX)
OPBUILD_ASCENDC_BLOCK(BlockReduceMin, ::opbuild::ascendc::RedOp::MIN)

template <class T, bool isSetMask = true>
inline void RepeatReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t repeatTimes,
                            const int32_t mask, const int32_t dstBlkStride, const int32_t srcBlkStride,
                            const int32_t dstRepStride, const int32_t srcRepStride) {
    (void)dstBlkStride;
    WholeReduceSum<T, isSetMask>(dst, src, mask, repeatTimes, dstRepStride, srcBlkStride, srcRepStride);
}

template <class T, bool isSetMask = true>
inline void ReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<T> &sharedTmpBuffer,
                      const int32_t count) {
    (void)sharedTmpBuffer;
    ::opbuild::ascendc::reduce_all("ReduceSum", ::opbuild::ascendc::RedOp::SUM, dst, src, count, false);
}
template <class T, bool isSetMask = true>
inline void ReduceMax(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<T> &sharedTmpBuffer,
                      const int32_t count, bool calIndex = false) {
    (void)sharedTmpBuffer;
    ::opbuild::ascendc::reduce_all("ReduceMax", ::opbuild::ascendc::RedOp::MAX, dst, src, count, calIndex);
}
template <class T, bool isSetMask = true>
inline void ReduceMin(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<T> &sharedTmpBuffer,
                      const int32_t count, bool calIndex = false) {
    (void)sharedTmpBuffer;
    ::opbuild::ascendc::reduce_all("ReduceMin", ::opbuild::ascendc::RedOp::MIN, dst, src, count, calIndex);
}

}  // namespace AscendC

#undef OPBUILD_ASCENDC_COMMA
#undef OPBUILD_ASCENDC_WHOLE
#undef OPBUILD_ASCENDC_BLOCK

#endif /* OPBUILD_ASCENDC_KERNEL_REDUCE_H */
