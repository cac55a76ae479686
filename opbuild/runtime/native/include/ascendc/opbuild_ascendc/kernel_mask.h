/* opbuild_ascendc/kernel_mask.h: the vector mask register and the level-0 lane walk.
 *
 * A level-0 vector API works in repeats of 256 bytes (64 lanes of 4-byte, 128 of 2-byte elements),
 * each repeat 8 data blocks of 32 bytes. Lane j of repeat r of an operand with block stride B and
 * repeat stride R (both in 32-byte blocks) is element
 *     r * R * E + (j / E) * B * E + j % E          (E = 32 / sizeof(T) elements per block).
 * Which lanes run:
 *   normal mode (SetMaskNorm, the default): the lanes whose bit is set in the 128-bit mask
 *     (SetVectorMask(high, low), or the API's own mask argument when isSetMask is true: a count n
 *     means lanes 0..n-1, an array {low, high} means those bits), in each of repeatTimes repeats;
 *   counter mode (SetMaskCount): n elements in all, 256 bytes per repeat with the last repeat
 *     partial, repeatTimes ignored (n = SetVectorMask(0, n), or the mask argument when isSetMask).
 */
#ifndef OPBUILD_ASCENDC_KERNEL_MASK_H
#define OPBUILD_ASCENDC_KERNEL_MASK_H

#include "opbuild_ascendc/kernel_tensor.h"

namespace AscendC {

struct BinaryRepeatParams {
    uint8_t blockNumber = 8;
    uint8_t dstBlkStride = 1, src0BlkStride = 1, src1BlkStride = 1;
    uint8_t dstRepStride = 8, src0RepStride = 8, src1RepStride = 8;
    bool repeatStrideMode = false, strideSizeMode = false;
    BinaryRepeatParams() = default;
    BinaryRepeatParams(uint8_t dB, uint8_t s0B, uint8_t s1B, uint8_t dR, uint8_t s0R, uint8_t s1R)
        : dstBlkStride(dB), src0BlkStride(s0B), src1BlkStride(s1B), dstRepStride(dR), src0RepStride(s0R),
          src1RepStride(s1R) {}
};

struct UnaryRepeatParams {
    uint8_t blockNumber = 8;
    uint16_t dstBlkStride = 1, srcBlkStride = 1;
    uint8_t dstRepStride = 8, srcRepStride = 8;
    bool repeatStrideMode = false, strideSizeMode = false, halfBlock = false;
    UnaryRepeatParams() = default;
    UnaryRepeatParams(uint16_t dB, uint16_t sB, uint8_t dR, uint8_t sR)
        : dstBlkStride(dB), srcBlkStride(sB), dstRepStride(dR), srcRepStride(sR) {}
};

inline void SetMaskCount() { ::opbuild::ascendc::block().mask_counter = true; }
inline void SetMaskNorm() { ::opbuild::ascendc::block().mask_counter = false; }

/* Normal mode: the lane bits (high: lanes 64..127). Counter mode: maskLow elements. */
template <class T, MaskMode mode = MaskMode::NORMAL>
inline void SetVectorMask(uint64_t maskHigh, uint64_t maskLow) {
    ::opbuild::ascendc::BlockState &b = ::opbuild::ascendc::block();
    if (mode == MaskMode::COUNTER || b.mask_counter) {
        b.mask[0] = maskLow;
        b.mask[1] = 0;
    } else {
        b.mask[0] = maskLow;
        b.mask[1] = maskHigh;
    }
}

/* Normal mode: lanes 0..len-1. Counter mode: len elements. */
template <class T, MaskMode mode = MaskMode::NORMAL>
inline void SetVectorMask(int32_t len) {
    ::opbuild::ascendc::BlockState &b = ::opbuild::ascendc::block();
    if (mode == MaskMode::COUNTER || b.mask_counter) {
        b.mask[0] = (uint64_t)len;
        b.mask[1] = 0;
        return;
    }
    uint32_t n = len < 0 ? 0u : len > 128 ? 128u : (uint32_t)len;
    b.mask[0] = n >= 64 ? ~0ull : (n == 0 ? 0ull : (~0ull >> (64 - n)));
    b.mask[1] = n <= 64 ? 0ull : (n >= 128 ? ~0ull : (~0ull >> (128 - n)));
}

inline void ResetMask() {
    ::opbuild::ascendc::BlockState &b = ::opbuild::ascendc::block();
    b.mask[0] = b.mask[1] = ~0ull;
}

}  // namespace AscendC

namespace opbuild {
namespace ascendc {

/* The count-mask forms take any integer (a literal 0 included, which would otherwise also match the
 * bit-mask array forms' pointer). */
template <class M>
using if_integral = typename std::enable_if<std::is_integral<M>::value, int>::type;

inline void check_count(const char *api, int64_t count) {
    if (count < 0) fail(api, "count %lld is negative", (long long)count);
}

/* The lanes a level-0 call runs. */
struct Lanes {
    uint32_t per_repeat = 0; /* lanes in one repeat */
    uint32_t epb = 0;        /* elements per 32-byte block */
    bool counter = false;
    uint64_t bits[2] = {0, 0};
    uint64_t count = 0;   /* counter mode: elements in all */
    uint32_t repeats = 0; /* repeats run */

    bool active(uint32_t r, uint32_t j) const {
        if (counter) return (uint64_t)r * per_repeat + j < count;
        return (bits[j >> 6] >> (j & 63)) & 1u;
    }
    /* The largest lane of repeat r that runs, or -1. */
    int64_t last_lane(uint32_t r) const {
        if (counter) {
            uint64_t done = (uint64_t)r * per_repeat;
            if (done >= count) return -1;
            uint64_t left = count - done;
            return (int64_t)(left >= per_repeat ? per_repeat - 1 : left - 1);
        }
        if (bits[1]) return 127 - __builtin_clzll(bits[1]);
        if (bits[0]) return 63 - __builtin_clzll(bits[0]);
        return -1;
    }
};

template <class T>
inline Lanes lanes_common(const char *api) {
    Lanes L;
    L.per_repeat = kRepeatBytes / sizeof(T);
    L.epb = kBlockBytes / sizeof(T);
    L.counter = block().mask_counter;
    if (!L.counter && L.per_repeat > 128)
        fail(api, "normal-mask mode for %u-byte elements is not yet supported by the CPU twin", (unsigned)sizeof(T));
    return L;
}

template <class T>
inline void finish(const char *api, Lanes &L, uint32_t repeatTimes) {
    BlockState &b = block();
    if (L.counter) {
        L.count = b.mask[0];
        L.repeats = (uint32_t)((L.count + L.per_repeat - 1) / L.per_repeat);
    } else {
        L.bits[0] = b.mask[0];
        L.bits[1] = L.per_repeat <= 64 ? 0 : b.mask[1];
        if (L.per_repeat < 64) L.bits[0] &= (1ull << L.per_repeat) - 1;
        L.repeats = repeatTimes;
    }
    (void)api;
}

/* Lanes of a call with a count mask (isSetMask: the API sets the register from it first). */
template <class T, bool isSetMask>
inline Lanes lanes(const char *api, uint64_t mask, uint32_t repeatTimes) {
    Lanes L = lanes_common<T>(api);
    if (isSetMask) {
        if (L.counter) {
            block().mask[0] = mask;
        } else {
            if (mask > L.per_repeat)
                fail(api, "mask %llu is outside [1, %u] for %u-byte elements", (unsigned long long)mask, L.per_repeat,
                     (unsigned)sizeof(T));
            AscendC::SetVectorMask<T>((int32_t)mask);
        }
    }
    finish<T>(api, L, repeatTimes);
    return L;
}

/* Lanes of a call with a bit mask {low, high}. */
template <class T, bool isSetMask>
inline Lanes lanes(const char *api, const uint64_t mask[], uint32_t repeatTimes) {
    Lanes L = lanes_common<T>(api);
    if (isSetMask) {
        if (L.counter)
            block().mask[0] = mask[0];
        else {
            block().mask[0] = mask[0];
            block().mask[1] = L.per_repeat > 64 ? mask[1] : 0;
        }
    }
    finish<T>(api, L, repeatTimes);
    return L;
}

/* Strides of one operand, in 32-byte blocks. */
struct Stride {
    uint32_t blk, rep;
};

/* The element of lane j of repeat r. */
inline uint64_t lane_elem(const Lanes &L, Stride s, uint32_t r, uint32_t j) {
    return (uint64_t)r * s.rep * L.epb + (uint64_t)(j / L.epb) * s.blk * L.epb + j % L.epb;
}

/* Fail unless every lane that runs is inside the tensor of `size` elements. */
inline void check_lanes(const char *api, const char *what, const Lanes &L, Stride s, uint64_t size) {
    for (uint32_t r = 0; r < L.repeats; ++r) {
        int64_t j = L.last_lane(r);
        if (j < 0) continue;
        /* with a block stride >= 1 the element grows with the lane: the last lane is the largest */
        if (s.blk == 0)
            for (int64_t k = 0; k < j; ++k)
                if (L.active(r, (uint32_t)k) && lane_elem(L, s, r, (uint32_t)k) > lane_elem(L, s, r, (uint32_t)j)) j = k;
        uint64_t e = lane_elem(L, s, r, (uint32_t)j);
        if (e >= size)
            fail(api, "%s: repeat %u lane %lld reaches element %llu of a LocalTensor of %llu elements", what, r,
                 (long long)j, (unsigned long long)e, (unsigned long long)size);
    }
}

}  // namespace ascendc
}  // namespace opbuild

#endif /* OPBUILD_ASCENDC_KERNEL_MASK_H */
