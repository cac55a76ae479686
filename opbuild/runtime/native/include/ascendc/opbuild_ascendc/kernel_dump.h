/* opbuild_ascendc/kernel_dump.h: DumpTensor, the CPU twin's print of a tensor's first elements. */
#ifndef OPBUILD_ASCENDC_KERNEL_DUMP_H
#define OPBUILD_ASCENDC_KERNEL_DUMP_H

#include "opbuild_ascendc/kernel_tensor.h"

namespace opbuild {
namespace ascendc {
template <class T>
inline void dump(const char *kind, const T *p, uint64_t have, uint32_t desc, uint32_t count) {
    uint64_t n = count < have || have == 0 ? count : have;
    std::printf("DumpTensor: block %u, desc %u, %s, %llu elements:", opbuild_kernel_state_.block_idx, desc, kind,
                (unsigned long long)n);
    for (uint64_t i = 0; i < n; ++i) {
        if (std::is_integral<T>::value)
            std::printf(" %lld", (long long)p[i]);
        else
            std::printf(" %g", (double)up(p[i]));
    }
    std::printf("\n");
}
}  // namespace ascendc
}  // namespace opbuild

namespace AscendC {
/* How DumpTensor lays out what it prints: dim sizes (printed with the elements). */
struct ShapeInfo {
    uint32_t shapeDim = 0;
    uint32_t shape[8] = {0};
    ShapeInfo() = default;
    ShapeInfo(uint32_t dim, const uint32_t *sizes) : shapeDim(dim > 8 ? 8 : dim) {
        for (uint32_t i = 0; i < shapeDim; ++i) shape[i] = sizes[i];
    }
};

template <class T>
inline void DumpTensor(const LocalTensor<T> &t, uint32_t desc, uint32_t dumpSize, const ShapeInfo &info) {
    std::printf("DumpTensor: shape (");
    for (uint32_t i = 0; i < info.shapeDim; ++i) std::printf(i ? ",%u" : "%u", info.shape[i]);
    std::printf(")\n");
    ::opbuild::ascendc::dump("UB", t.data(), t.GetSize(), desc, dumpSize);
}
/* DumpAccChkPoint(tensor, index, countOff, dumpSize): DumpTensor of the elements from countOff on. */
template <class T>
inline void DumpAccChkPoint(const LocalTensor<T> &t, uint32_t index, uint32_t countOff, uint32_t dumpSize) {
    ::opbuild::ascendc::dump("UB", t[countOff].data(), t.GetSize() - countOff, index, dumpSize);
}
template <class T>
inline void DumpAccChkPoint(const GlobalTensor<T> &t, uint32_t index, uint32_t countOff, uint32_t dumpSize) {
    ::opbuild::ascendc::dump("GM", t.GetPhyAddr() + countOff, t.GetSize() > countOff ? t.GetSize() - countOff : 0, index,
                             dumpSize);
}
template <class T>
inline void DumpTensor(const LocalTensor<T> &t, uint32_t desc, uint32_t dumpSize) {
    ::opbuild::ascendc::dump("UB", t.data(), t.GetSize(), desc, dumpSize);
}
template <class T>
inline void DumpTensor(const GlobalTensor<T> &t, uint32_t desc, uint32_t dumpSize) {
    ::opbuild::ascendc::dump("GM", t.GetPhyAddr(), t.GetSize(), desc, dumpSize);
}
}  // namespace AscendC

#endif /* OPBUILD_ASCENDC_KERNEL_DUMP_H */
