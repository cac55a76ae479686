/* opbuild_ascendc/kernel_base.h: what every Ascend C API family needs on the CPU twin.
 *
 * Clean-room implementation from the public Ascend C API reference (docs/ascendc.md lists the
 * pages). One block of a launch runs on one host thread; the per-block state (UB arena, mask
 * register, atomic mode) is a thread-local BlockState that run_block (launch.h) resets at the
 * start of every block. A broken rule of the device (UB overflow, a queue misuse, a 32-byte rule,
 * an out-of-buffer access) throws KernelError from the API that saw it; run_block catches it and
 * fails the block with "<API>: <what>" (the simulator adds "block <i>: ", the runtime the op and
 * the binary: "AddCustom: kernel AddCustom_fp16 failed: block 3: DataCopy: ...").
 */
#ifndef OPBUILD_ASCENDC_KERNEL_BASE_H
#define OPBUILD_ASCENDC_KERNEL_BASE_H

#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <type_traits>

#if defined(OPBUILD_KERNEL_H) && !defined(OPBUILD_ASCENDC)
#error "opbuild/kernel.h was included before kernel_operator.h: an Ascend C kernel includes kernel_operator.h first"
#endif
#ifndef OPBUILD_ASCENDC
#define OPBUILD_ASCENDC 1
#endif
#include "opbuild/kernel.h"

/* Device address-space qualifiers and function attributes: nothing on the host.
 * (__global__, __aicore__ and GM_ADDR come from opbuild/kernel.h.) */
#ifndef __gm__
#define __gm__
#endif
#ifndef __ubuf__
#define __ubuf__
#endif
#ifndef __inout_pipe__
#define __inout_pipe__(...)
#endif
#ifndef __in_pipe__
#define __in_pipe__(...)
#endif
#ifndef __out_pipe__
#define __out_pipe__(...)
#endif

namespace opbuild {
namespace ascendc {

constexpr uint32_t kBlockBytes = 32;   /* one data block (the unit of strides and DataCopy lengths) */
constexpr uint32_t kRepeatBytes = 256; /* one vector repeat: 8 data blocks */

/* A device rule broken by the kernel: "<API>: <what, with the numbers>". */
class KernelError : public std::exception {
public:
    explicit KernelError(const char *msg) { std::snprintf(msg_, sizeof msg_, "%s", msg); }
    const char *what() const noexcept override { return msg_; }

private:
    char msg_[OPBUILD_KERNEL_ERROR_LEN];
};

[[noreturn]] inline void fail(const char *api, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
[[noreturn]] inline void fail(const char *api, const char *fmt, ...) {
    char msg[OPBUILD_KERNEL_ERROR_LEN];
    int n = std::snprintf(msg, sizeof msg, "%s: ", api);
    if (n < 0 || n >= (int)sizeof msg) n = 0;
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    va_end(ap);
    throw KernelError(msg);
}

enum class AtomicMode : uint8_t { NONE, ADD, MAX, MIN };

/* The state of the block running on this thread (one per thread, reset by run_block). */
struct BlockState {
    uint8_t *ub = nullptr;   /* this block's Unified Buffer arena */
    uint32_t ub_size = 0;    /* its size in bytes (the SoC's UB size) */
    uint32_t ub_used = 0;    /* bytes handed out by TPipe::InitBuffer so far */
    bool mask_counter = false;       /* SetMaskCount (true) or SetMaskNorm (false) */
    uint64_t mask[2] = {~0ull, ~0ull}; /* normal mode: lane bits; counter mode: mask[0] is the count */
    AtomicMode atomic = AtomicMode::NONE;
    void *pipe = nullptr; /* the block's TPipe, the latest constructed (GetTPipePtr) */
};
inline thread_local BlockState g_block;

inline BlockState &block() { return g_block; }

/* The element count of `bytes` bytes of T (for messages). */
template <class T>
constexpr uint64_t elems(uint64_t bytes) {
    return bytes / sizeof(T);
}

/* Arithmetic type of T: half and bfloat16_t compute in float (and round once per op). */
template <class T>
struct Acc {
    using type = T;
};
template <>
struct Acc<half> {
    using type = float;
};
template <>
struct Acc<bfloat16_t> {
    using type = float;
};
template <class T>
using acc_t = typename Acc<T>::type;

template <class T>
inline acc_t<T> up(T v) {
    return static_cast<acc_t<T>>(v);
}
template <class T, class A>
inline T down(A v) {
    return static_cast<T>(v);
}

}  // namespace ascendc
}  // namespace opbuild

/* The device's pipes (a global type of the device compiler, so global here too). */
enum pipe_t : uint8_t { PIPE_S = 0, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL, PIPE_MTE4, PIPE_MTE5,
                        PIPE_V2, PIPE_FIX };

namespace AscendC {

/* Where a tensor lives (Ascend C TPosition); the CPU twin keeps them all in the block's UB. */
enum class TPosition : uint8_t {
    GM,
    A1,
    A2,
    B1,
    B2,
    C1,
    C2,
    CO1,
    CO2,
    VECIN,
    VECOUT,
    VECCALC,
    LCM = VECCALC,
    SPM,
    SHM,
    TSCM,
    C2PIPE2GM,
    C2PIPE2LOCAL,
    MAX,
};
using QuePosition = TPosition;

enum class HardEvent : uint8_t {
    MTE2_MTE1, MTE1_MTE2, MTE1_M, M_MTE1, MTE2_V, V_MTE2, MTE3_V, V_MTE3, M_V, V_M, V_V, MTE3_MTE1,
    MTE1_MTE3, MTE1_V, MTE2_M, M_MTE2, V_MTE1, M_FIX, FIX_M, MTE3_MTE2, MTE2_MTE3, S_V, V_S, S_MTE2,
    MTE2_S, S_MTE3, MTE3_S, MTE2_FIX, FIX_MTE2, FIX_S, M_S, FIX_MTE3, MTE1_FIX, FIX_MTE1, FIX_FIX, MAX,
};

enum class MaskMode : uint8_t { NORMAL = 0, COUNTER };

/* isSetMask=false APIs take this instead of a mask: the mask register (SetVectorMask) applies. */
constexpr int32_t MASK_PLACEHOLDER = 0;

using event_t = int32_t;

/* Sizes the kernels spell with these names (bytes / blocks / repeats). */
constexpr int32_t ONE_BLK_SIZE = 32;
constexpr int32_t ONE_REPEAT_BYTE_SIZE = 256;
constexpr int32_t DEFAULT_BLK_NUM = 8;
constexpr int32_t DEFAULT_BLK_STRIDE = 1;
constexpr int32_t DEFAULT_REPEAT_STRIDE = 8;
constexpr int32_t MAX_REPEAT_TIMES = 255;
constexpr int32_t ONE_BYTE_BIT_SIZE = 8;

__aicore__ inline constexpr int64_t GetDataBlockSizeInBytes() { return ONE_BLK_SIZE; }

template <class T, class U>
struct IsSameType {
    static constexpr bool value = std::is_same<T, U>::value;
};

inline float ToFloat(const bfloat16_t &v) { return static_cast<float>(v); }
inline float ToFloat(const half &v) { return static_cast<float>(v); }
inline bfloat16_t ToBfloat16(const float &v) { return bfloat16_t(v); }

/* ---- block, core and time --------------------------------------------------------------------- */

inline int64_t GetBlockIdx() { return opbuild_kernel_state_.block_idx; }
inline int64_t GetBlockNum() { return opbuild_kernel_state_.block_num; }
inline int64_t GetTaskRation() { return 1; }
inline int64_t GetSubBlockIdx() { return 0; }

/* The barrier over all blocks of an intercore_sync launch (opbuild/kernel.h's sync_all). */
template <bool isAIVOnly = true>
inline void SyncAll() {
    opbuild_kernel_state *s = &opbuild_kernel_state_;
    if (s->sync_all) s->sync_all(s->sync_ctx);
}

/* A steadily increasing counter (host nanoseconds on the CPU twin, not device cycles). */
inline int64_t GetSystemCycle() {
    return (int64_t)std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

/* The user part of the workspace: opbuild reserves no system workspace, so the whole of it. */
inline GM_ADDR GetUserWorkspace(GM_ADDR workspace) { return workspace; }
inline GM_ADDR GetSysWorkSpacePtr() { return nullptr; }

template <class T, class U>
__aicore__ inline constexpr auto DivCeil(T a, U b) -> decltype(a / b) {
    return (a + b - 1) / b;
}
template <class T, class U>
__aicore__ inline constexpr auto CeilDiv(T a, U b) -> decltype(a / b) {
    return (a + b - 1) / b;
}
template <class T, class U>
__aicore__ inline constexpr auto AlignUp(T a, U b) -> decltype(a / b) {
    return (a + b - 1) / b * b;
}
/* ---- pipes and events: the CPU twin runs every pipe in program order ---------------------------- */

template <HardEvent event>
inline void SetFlag(int32_t) {}
template <HardEvent event>
inline void WaitFlag(int32_t) {}
template <pipe_t pipe>
inline void PipeBarrier() {}
inline void pipe_barrier(pipe_t) {}
inline void DataSyncBarrier() {}

/* ---- debugging -------------------------------------------------------------------------------- */

using ::printf;

}  // namespace AscendC

/* Unqualified use, as in the public samples (`ASSERT(GetBlockNum() != 0)`): the same functions. */
using AscendC::GetBlockIdx;
using AscendC::GetBlockNum;
using AscendC::SyncAll;

#define PRINTF(...) ::printf(__VA_ARGS__)

/* A failed ASSERT fails the block (the device traps). */
#define ASSERT(cond)                                                                                        \
    do {                                                                                                    \
        if (!(cond)) ::opbuild::ascendc::fail("ASSERT", "%s failed at %s:%d", #cond, __FILE__, __LINE__);    \
    } while (0)
#define ascendc_assert(cond, ...)                                                                           \
    do {                                                                                                    \
        if (!(cond)) ::opbuild::ascendc::fail("ascendc_assert", "%s failed at %s:%d", #cond, __FILE__, __LINE__); \
    } while (0)

/* Core type: the CPU twin runs vector (AIV) blocks only. Used as `if ASCEND_IS_AIV { ... }`. */
#define ASCEND_IS_AIV (true)
#define ASCEND_IS_AIC (false)
#define ASCEND_IS_NOT_AIV (false)
#define ASCEND_IS_NOT_AIC (true)
#define KERNEL_TASK_TYPE_DEFAULT(type)
#define KERNEL_TASK_TYPE(key, type)

#endif /* OPBUILD_ASCENDC_KERNEL_BASE_H */
