// In-house lookalike: a kernel-side tiling struct in standard C++ (no macros), which the host
// fills through GetTilingData<T>().
#ifndef PLAIN_STRUCT_TILING_H
#define PLAIN_STRUCT_TILING_H
#include <cstdint>
struct PlainTilingData {
    uint32_t loops;
    uint32_t dtypeSize;
    int64_t caseId;
};
#endif
