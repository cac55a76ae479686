/* opbuild_ascendc/kernel_copy.h: DataCopy, DataCopyPad and the atomic modes of UB -> GM copies.
 *
 * Units (public reference, DataCopy / DataCopyPad pages):
 *   DataCopy(dst, src, count)            count elements; count * sizeof(T) must be a multiple of 32.
 *   DataCopy(dst, src, DataCopyParams)   blockCount blocks of blockLen 32-byte units; srcStride and
 *                                        dstStride are the gaps between blocks, in 32-byte units.
 *   DataCopyPad(ub, gm, DataCopyExtParams, DataCopyPadExtParams<T>)
 *                                        blockCount blocks of blockLen BYTES; srcStride is the GM gap
 *                                        in bytes, dstStride the UB gap in 32-byte units; in UB each
 *                                        block starts 32-byte aligned, after leftPadding elements,
 *                                        and the block's slot is leftPadding + blockLen + rightPadding
 *                                        rounded up to 32 bytes; with isPad the padding elements are
 *                                        set to paddingValue.
 *   DataCopyPad(gm, ub, DataCopyExtParams) the reverse: srcStride is the UB gap in 32-byte units,
 *                                        dstStride the GM gap in bytes.
 * With SetAtomicAdd<T>() (Max, Min) every UB -> GM copy combines with the GM contents instead of
 * overwriting them, atomically with respect to the other blocks.
 */
#ifndef OPBUILD_ASCENDC_KERNEL_COPY_H
#define OPBUILD_ASCENDC_KERNEL_COPY_H

#include <cstring>
#include <mutex>
#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "opbuild_ascendc/kernel_tensor.h"

namespace AscendC {

struct DataCopyParams {
    uint16_t blockCount = 1;
    uint16_t blockLen = 0;
    uint16_t srcStride = 0;
    uint16_t dstStride = 0;
    DataCopyParams() = default;
    DataCopyParams(uint16_t count, uint16_t len, uint16_t srcGap, uint16_t dstGap)
        : blockCount(count), blockLen(len), srcStride(srcGap), dstStride(dstGap) {}
};

struct DataCopyExtParams {
    uint16_t blockCount = 1;
    uint32_t blockLen = 0;
    uint32_t srcStride = 0;
    uint32_t dstStride = 0;
    uint32_t rsv = 0;
    DataCopyExtParams() = default;
    DataCopyExtParams(uint16_t count, uint32_t len, uint32_t srcGap, uint32_t dstGap, uint32_t reserved)
        : blockCount(count), blockLen(len), srcStride(srcGap), dstStride(dstGap), rsv(reserved) {}
};

template <class T>
struct DataCopyPadExtParams {
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    T paddingValue = T(0);
    DataCopyPadExtParams() = default;
    DataCopyPadExtParams(bool pad, uint8_t left, uint8_t right, T value)
        : isPad(pad), leftPadding(left), rightPadding(right), paddingValue(value) {}
};

struct DataCopyPadParams {
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    uint64_t paddingValue = 0;
    DataCopyPadParams() = default;
    DataCopyPadParams(bool pad, uint8_t left, uint8_t right, uint64_t value)
        : isPad(pad), leftPadding(left), rightPadding(right), paddingValue(value) {}
};

template <class T>
inline void SetAtomicAdd() {
    ::opbuild::ascendc::block().atomic = ::opbuild::ascendc::AtomicMode::ADD;
}
template <class T>
inline void SetAtomicMax() {
    ::opbuild::ascendc::block().atomic = ::opbuild::ascendc::AtomicMode::MAX;
}
template <class T>
inline void SetAtomicMin() {
    ::opbuild::ascendc::block().atomic = ::opbuild::ascendc::AtomicMode::MIN;
}
inline void SetAtomicNone() { ::opbuild::ascendc::block().atomic = ::opbuild::ascendc::AtomicMode::NONE; }

}  // namespace AscendC

namespace opbuild {
namespace ascendc {

/* One lock for all atomic GM updates of the process: blocks run on threads of one process. */
inline std::mutex &atomic_lock() {
    static std::mutex m;
    return m;
}

/* A launch writes this many GM bytes or more through one GlobalTensor on every block (the size given
 * to SetGlobalBuffer times the block count, however far into the buffer the copy is): far beyond a
 * last-level cache, so UB -> GM copies bypass the cache (non-temporal stores: the destination is
 * not read in first, a third less memory traffic for a streaming kernel). Same bytes either way. */
constexpr uint64_t kStreamLaunchBytes = 32ull << 20;

inline void copy_streaming(void *dst, const void *src, size_t bytes) {
#if defined(__x86_64__) && defined(__SSE2__)
    uint8_t *d = static_cast<uint8_t *>(dst);
    const uint8_t *s = static_cast<const uint8_t *>(src);
    size_t head = (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15;
    if (head > bytes) head = bytes;
    std::memcpy(d, s, head);
    size_t i = head;
    for (; i + 16 <= bytes; i += 16)
        _mm_stream_si128(reinterpret_cast<__m128i *>(d + i), _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + i)));
    std::memcpy(d + i, s + i, bytes - i);
    _mm_sfence();
#else
    std::memcpy(dst, src, bytes);
#endif
}

/* A GM -> UB copy of this many bytes or more reads its source as four streams at once. */
constexpr size_t kSplitCopyBytes = 4096;

/* GM -> UB: the same bytes as memcpy. A large copy reads the four quarters of its source side by
 * side (32 bytes of each in turn) instead of front to back: the CPU's prefetchers then follow four
 * streams, and a copy from memory far beyond the caches runs ~1.3x faster than one memcpy on the
 * machines measured (bench/README.md, Ascend C). The device's MTE2 engine has no such limit; on
 * the twin the copy-in is most of a streaming kernel's time. */
inline void copy_in(void *dst, const void *src, size_t bytes) {
#if defined(__x86_64__) && defined(__SSE2__)
    if (bytes >= kSplitCopyBytes) {
        uint8_t *d = static_cast<uint8_t *>(dst);
        const uint8_t *s = static_cast<const uint8_t *>(src);
        const size_t part = bytes / 4 / 32 * 32;
        for (size_t i = 0; i < part; i += 32) {
            const uint8_t *s0 = s + i, *s1 = s0 + part, *s2 = s1 + part, *s3 = s2 + part;
            __m128i a0 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s0));
            __m128i a1 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s0 + 16));
            __m128i b0 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s1));
            __m128i b1 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s1 + 16));
            __m128i c0 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s2));
            __m128i c1 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s2 + 16));
            __m128i e0 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s3));
            __m128i e1 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s3 + 16));
            uint8_t *d0 = d + i, *d1 = d0 + part, *d2 = d1 + part, *d3 = d2 + part;
            _mm_storeu_si128(reinterpret_cast<__m128i *>(d0), a0);
            _mm_storeu_si128(reinterpret_cast<__m128i *>(d0 + 16), a1);
            _mm_storeu_si128(reinterpret_cast<__m128i *>(d1), b0);
            _mm_storeu_si128(reinterpret_cast<__m128i *>(d1 + 16), b1);
            _mm_storeu_si128(reinterpret_cast<__m128i *>(d2), c0);
            _mm_storeu_si128(reinterpret_cast<__m128i *>(d2 + 16), c1);
            _mm_storeu_si128(reinterpret_cast<__m128i *>(d3), e0);
            _mm_storeu_si128(reinterpret_cast<__m128i *>(d3 + 16), e1);
        }
        std::memcpy(d + 4 * part, s + 4 * part, bytes - 4 * part);
        return;
    }
#endif
    std::memcpy(dst, src, bytes);
}

/* Store n elements to GM under the block's atomic mode (`streaming`: see kStreamLaunchBytes). */
template <class T>
inline void gm_store(T *dst, const T *src, uint64_t n, bool streaming = false) {
    AtomicMode mode = block().atomic;
    if (mode == AtomicMode::NONE) {
        if (streaming)
            copy_streaming(dst, src, n * sizeof(T));
        else
            std::memcpy(dst, src, n * sizeof(T));
        return;
    }
    std::lock_guard<std::mutex> lock(atomic_lock());
    for (uint64_t i = 0; i < n; ++i) {
        acc_t<T> a = up(dst[i]), b = up(src[i]);
        dst[i] = down<T>(mode == AtomicMode::ADD ? a + b : mode == AtomicMode::MAX ? (a > b ? a : b) : (a < b ? a : b));
    }
}

template <class T>
inline void check_gm(const char *api, const AscendC::GlobalTensor<T> &g, uint64_t end_elems) {
    if (g.GetSize() != 0 && end_elems > g.GetSize())
        fail(api, "GM elements [0, %llu) are outside the GlobalTensor of %llu elements", (unsigned long long)end_elems,
             (unsigned long long)g.GetSize());
}

template <class T>
inline void check_ub(const char *api, const AscendC::LocalTensor<T> &t, uint64_t end_bytes) {
    uint64_t have = (uint64_t)t.GetSize() * sizeof(T);
    if (end_bytes > have)
        fail(api, "UB bytes [0, %llu) are outside the LocalTensor of %llu bytes (UB offset %lld)",
             (unsigned long long)end_bytes, (unsigned long long)have, ub_offset(t.data()));
}

template <class T>
inline void check_count(uint64_t count) {
    if (count * sizeof(T) % kBlockBytes != 0)
        fail("DataCopy", "%llu elements of %u bytes = %llu bytes, not a multiple of 32 (use DataCopyPad)",
             (unsigned long long)count, (unsigned)sizeof(T), (unsigned long long)(count * sizeof(T)));
}

}  // namespace ascendc
}  // namespace opbuild

namespace AscendC {

/* ---- contiguous DataCopy ---------------------------------------------------------------------- */

template <class T>
inline void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src, const uint32_t count) {
    namespace oa = ::opbuild::ascendc;
    oa::check_count<T>(count);
    oa::check_ub("DataCopy", dst, (uint64_t)count * sizeof(T));
    oa::check_gm("DataCopy", src, count);
    oa::copy_in(dst.data(), src.GetPhyAddr(), (size_t)count * sizeof(T));
}

template <class T>
inline void DataCopy(const GlobalTensor<T> &dst, const LocalTensor<T> &src, const uint32_t count) {
    namespace oa = ::opbuild::ascendc;
    oa::check_count<T>(count);
    oa::check_ub("DataCopy", src, (uint64_t)count * sizeof(T));
    oa::check_gm("DataCopy", dst, count);
    const bool streaming =
        (uint64_t)dst.OpbuildBufferSize() * sizeof(T) * (uint64_t)GetBlockNum() >= oa::kStreamLaunchBytes;
    oa::gm_store(dst.GetPhyAddr(), src.data(), count, streaming);
}

template <class T>
inline void DataCopy(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint32_t count) {
    namespace oa = ::opbuild::ascendc;
    oa::check_count<T>(count);
    oa::check_ub("DataCopy", dst, (uint64_t)count * sizeof(T));
    oa::check_ub("DataCopy", src, (uint64_t)count * sizeof(T));
    std::memmove(dst.data(), src.data(), (size_t)count * sizeof(T));
}

/* ---- DataCopy with DataCopyParams (all in 32-byte units) -------------------------------------- */

namespace detail_copy {
template <class T>
inline uint64_t strided_end(const DataCopyParams &p, uint32_t gap) {
    if (p.blockCount == 0) return 0;
    return ((uint64_t)(p.blockCount - 1) * (p.blockLen + gap) + p.blockLen) * ::opbuild::ascendc::kBlockBytes;
}
template <class T, class Store>
inline void strided(uint8_t *dst, const uint8_t *src, const DataCopyParams &p, Store store) {
    const uint64_t blk = ::opbuild::ascendc::kBlockBytes, len = (uint64_t)p.blockLen * blk;
    for (uint32_t i = 0; i < p.blockCount; ++i)
        store(dst + i * (len + p.dstStride * blk), src + i * (len + p.srcStride * blk), len);
}
}  // namespace detail_copy

template <class T>
inline void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src, const DataCopyParams &p) {
    namespace oa = ::opbuild::ascendc;
    oa::check_ub("DataCopy", dst, detail_copy::strided_end<T>(p, p.dstStride));
    oa::check_gm("DataCopy", src, detail_copy::strided_end<T>(p, p.srcStride) / sizeof(T));
    detail_copy::strided<T>((uint8_t *)dst.data(), (const uint8_t *)src.GetPhyAddr(), p,
                            [](uint8_t *d, const uint8_t *s, uint64_t n) { oa::copy_in(d, s, n); });
}

template <class T>
inline void DataCopy(const GlobalTensor<T> &dst, const LocalTensor<T> &src, const DataCopyParams &p) {
    namespace oa = ::opbuild::ascendc;
    oa::check_ub("DataCopy", src, detail_copy::strided_end<T>(p, p.srcStride));
    oa::check_gm("DataCopy", dst, detail_copy::strided_end<T>(p, p.dstStride) / sizeof(T));
    detail_copy::strided<T>((uint8_t *)dst.GetPhyAddr(), (const uint8_t *)src.data(), p,
                            [](uint8_t *d, const uint8_t *s, uint64_t n) {
                                oa::gm_store((T *)d, (const T *)s, n / sizeof(T));
                            });
}

template <class T>
inline void DataCopy(const LocalTensor<T> &dst, const LocalTensor<T> &src, const DataCopyParams &p) {
    namespace oa = ::opbuild::ascendc;
    oa::check_ub("DataCopy", dst, detail_copy::strided_end<T>(p, p.dstStride));
    oa::check_ub("DataCopy", src, detail_copy::strided_end<T>(p, p.srcStride));
    detail_copy::strided<T>((uint8_t *)dst.data(), (const uint8_t *)src.data(), p,
                            [](uint8_t *d, const uint8_t *s, uint64_t n) { std::memmove(d, s, n); });
}

/* ---- DataCopyPad (block lengths in bytes) ------------------------------------------------------ */

template <class T>
inline void DataCopyPad(const LocalTensor<T> &dst, const GlobalTensor<T> &src, const DataCopyExtParams &p,
                        const DataCopyPadExtParams<T> &pad) {
    namespace oa = ::opbuild::ascendc;
    const uint64_t blk = oa::kBlockBytes, lpad = (uint64_t)pad.leftPadding * sizeof(T),
                   rpad = (uint64_t)pad.rightPadding * sizeof(T);
    if (p.blockLen % sizeof(T) != 0)
        oa::fail("DataCopyPad", "blockLen %u bytes is not a whole number of %u-byte elements", p.blockLen,
                 (unsigned)sizeof(T));
    if (lpad > blk || rpad > blk)
        oa::fail("DataCopyPad", "padding of %u + %u elements exceeds 32 bytes", (unsigned)pad.leftPadding,
                 (unsigned)pad.rightPadding);
    const uint64_t slot = (lpad + p.blockLen + rpad + blk - 1) / blk * blk, ub_step = slot + (uint64_t)p.dstStride * blk,
                   gm_step = (uint64_t)p.blockLen + p.srcStride;
    if (p.blockCount == 0) return;
    oa::check_ub("DataCopyPad", dst, (p.blockCount - 1) * ub_step + slot);
    oa::check_gm("DataCopyPad", src, ((p.blockCount - 1) * gm_step + p.blockLen) / sizeof(T));
    uint8_t *d = (uint8_t *)dst.data();
    const uint8_t *s = (const uint8_t *)src.GetPhyAddr();
    for (uint32_t i = 0; i < p.blockCount; ++i) {
        uint8_t *row = d + i * ub_step;
        oa::copy_in(row + lpad, s + i * gm_step, p.blockLen);
        if (pad.isPad) {
            T *e = (T *)row;
            for (uint32_t k = 0; k < pad.leftPadding; ++k) e[k] = pad.paddingValue;
            T *r = (T *)(row + lpad + p.blockLen);
            for (uint32_t k = 0; k < pad.rightPadding; ++k) r[k] = pad.paddingValue;
        }
    }
}

template <class T>
inline void DataCopyPad(const GlobalTensor<T> &dst, const LocalTensor<T> &src, const DataCopyExtParams &p) {
    namespace oa = ::opbuild::ascendc;
    const uint64_t blk = oa::kBlockBytes;
    if (p.blockLen % sizeof(T) != 0)
        oa::fail("DataCopyPad", "blockLen %u bytes is not a whole number of %u-byte elements", p.blockLen,
                 (unsigned)sizeof(T));
    const uint64_t slot = ((uint64_t)p.blockLen + blk - 1) / blk * blk, ub_step = slot + (uint64_t)p.srcStride * blk,
                   gm_step = (uint64_t)p.blockLen + p.dstStride;
    if (p.blockCount == 0) return;
    oa::check_ub("DataCopyPad", src, (p.blockCount - 1) * ub_step + p.blockLen);
    oa::check_gm("DataCopyPad", dst, ((p.blockCount - 1) * gm_step + p.blockLen) / sizeof(T));
    for (uint32_t i = 0; i < p.blockCount; ++i)
        oa::gm_store((T *)((uint8_t *)dst.GetPhyAddr() + i * gm_step), (const T *)((const uint8_t *)src.data() + i * ub_step),
                     p.blockLen / sizeof(T));
}

template <class T>
inline void DataCopyPad(const LocalTensor<T> &dst, const GlobalTensor<T> &src, const DataCopyParams &p,
                        const DataCopyPadParams &pad) {
    T value;
    uint64_t bits = pad.paddingValue;
    std::memcpy(&value, &bits, sizeof(T)); /* the low bytes: the value's bit pattern */
    DataCopyPad(dst, src, DataCopyExtParams(p.blockCount, p.blockLen, p.srcStride, p.dstStride, 0),
                DataCopyPadExtParams<T>(pad.isPad, pad.leftPadding, pad.rightPadding, value));
}

template <class T>
inline void DataCopyPad(const GlobalTensor<T> &dst, const LocalTensor<T> &src, const DataCopyParams &p) {
    DataCopyPad(dst, src, DataCopyExtParams(p.blockCount, p.blockLen, p.srcStride, p.dstStride, 0));
}

}  // namespace AscendC

#endif /* OPBUILD_ASCENDC_KERNEL_COPY_H */
