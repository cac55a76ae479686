/* opbuild_ascendc/kernel_tensor.h: GlobalTensor (device memory) and LocalTensor (a span of UB).
 *
 * A LocalTensor is an address in the block's UB and the number of elements from there to the end
 * of the buffer it came from; every element access and every vector/copy API checks its span
 * against that size ("LocalTensor access outside its buffer"). A GlobalTensor's size is the one
 * given to SetGlobalBuffer (0: unknown, then GM spans are not checked).
 */
#ifndef OPBUILD_ASCENDC_KERNEL_TENSOR_H
#define OPBUILD_ASCENDC_KERNEL_TENSOR_H

#include "opbuild_ascendc/kernel_base.h"

namespace opbuild {
namespace ascendc {

/* The UB offset of p (for messages). */
inline long long ub_offset(const void *p) {
    const uint8_t *b = block().ub;
    return b ? (long long)((const uint8_t *)p - b) : -1;
}

template <class T>
inline void check_span(const char *api, const char *what, uint64_t begin, uint64_t count, uint64_t size) {
    if (begin + count > size)
        fail(api, "%s: elements [%llu, %llu) are outside the LocalTensor of %llu elements", what,
             (unsigned long long)begin, (unsigned long long)(begin + count), (unsigned long long)size);
}

}  // namespace ascendc
}  // namespace opbuild

namespace AscendC {

/* GlobalTensor::SetL2CacheHint's modes (a hint: no effect on the CPU twin). */
enum class CacheMode : uint8_t { CACHE_MODE_DISABLE = 0, CACHE_MODE_NORMAL, CACHE_MODE_LAST, CACHE_MODE_PERSISTENT };

template <class T>
class LocalTensor {
public:
    using PrimType = T;
    LocalTensor() = default;
    LocalTensor(T *addr, uint32_t size) : addr_(addr), size_(size) {}

    /* The tensor from element `offset` on (to the end of the same buffer). */
    LocalTensor operator[](uint32_t offset) const {
        if (offset > size_)
            ::opbuild::ascendc::fail("LocalTensor::operator[]", "offset %u is past the end of the LocalTensor of %u elements",
                                     offset, size_);
        return LocalTensor(addr_ + offset, size_ - offset);
    }
    T GetValue(uint32_t i) const {
        check("LocalTensor::GetValue", i);
        return addr_[i];
    }
    template <class U>
    void SetValue(uint32_t i, const U &v) const {
        check("LocalTensor::SetValue", i);
        addr_[i] = static_cast<T>(v);
    }
    T &operator()(uint32_t i) const {
        check("LocalTensor::operator()", i);
        return addr_[i];
    }
    /* The same bytes seen as elements of U. */
    template <class U>
    LocalTensor<U> ReinterpretCast() const {
        return LocalTensor<U>(reinterpret_cast<U *>(addr_), (uint32_t)((uint64_t)size_ * sizeof(T) / sizeof(U)));
    }
    uint32_t GetSize() const { return size_; }
    void SetSize(uint32_t n) {
        if (n > size_)
            ::opbuild::ascendc::fail("LocalTensor::SetSize", "%u elements do not fit in the LocalTensor of %u elements", n,
                                     size_);
        size_ = n;
    }
    uint32_t GetLength() const { return size_ * (uint32_t)sizeof(T); }
    T *GetPhyAddr() const { return addr_; }
    T *GetPhyAddr(uint32_t offset) const { return addr_ + offset; }
    TPosition GetPosition() const { return TPosition::VECCALC; }
    void SetUserTag(int32_t tag) { tag_ = tag; }
    int32_t GetUserTag() const { return tag_; }

    /* The raw span, for the API implementations (which check it themselves). */
    T *data() const { return addr_; }

private:
    void check(const char *api, uint32_t i) const {
        if (i >= size_)
            ::opbuild::ascendc::fail(api, "index %u is outside the LocalTensor of %u elements (UB offset %lld)", i, size_,
                                     ::opbuild::ascendc::ub_offset(addr_));
    }
    T *addr_ = nullptr;
    uint32_t size_ = 0;
    int32_t tag_ = 0;
};

template <class T>
class GlobalTensor {
public:
    using PrimType = T;
    GlobalTensor() = default;
    void SetGlobalBuffer(__gm__ T *buffer, uint64_t size = 0) {
        addr_ = buffer;
        size_ = size;
        buffer_size_ = size;
    }
    GlobalTensor operator[](uint64_t offset) const {
        GlobalTensor g;
        g.addr_ = addr_ + offset;
        g.size_ = size_ == 0 ? 0 : (offset >= size_ ? 0 : size_ - offset);
        g.buffer_size_ = buffer_size_;
        if (size_ != 0 && offset > size_)
            ::opbuild::ascendc::fail("GlobalTensor::operator[]", "offset %llu is past the %llu elements of the GlobalTensor",
                                     (unsigned long long)offset, (unsigned long long)size_);
        return g;
    }
    T GetValue(uint64_t i) const {
        check("GlobalTensor::GetValue", i);
        return addr_[i];
    }
    template <class U>
    void SetValue(uint64_t i, const U &v) const {
        check("GlobalTensor::SetValue", i);
        addr_[i] = static_cast<T>(v);
    }
    T &operator()(uint64_t i) const { return addr_[i]; }
    __gm__ T *GetPhyAddr() const { return addr_; }
    __gm__ T *GetPhyAddr(uint64_t offset) const { return addr_ + offset; }
    uint64_t GetSize() const { return size_; }
    /* Not Ascend C: the size given to SetGlobalBuffer, kept by operator[] (0: not given). How much
     * the kernel streams through this buffer, for DataCopy's choice of streaming stores. */
    uint64_t OpbuildBufferSize() const { return buffer_size_; }
    void SetL2CacheHint(CacheMode) {}
    template <CacheMode mode>
    void SetL2CacheHint() {}

private:
    void check(const char *api, uint64_t i) const {
        if (size_ != 0 && i >= size_)
            ::opbuild::ascendc::fail(api, "index %llu is outside the GlobalTensor of %llu elements", (unsigned long long)i,
                                     (unsigned long long)size_);
    }
    __gm__ T *addr_ = nullptr;
    uint64_t size_ = 0;
    uint64_t buffer_size_ = 0;
};

}  // namespace AscendC

#endif /* OPBUILD_ASCENDC_KERNEL_TENSOR_H */
