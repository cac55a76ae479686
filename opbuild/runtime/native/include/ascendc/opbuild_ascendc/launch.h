/* opbuild_ascendc/launch.h: running one block of an Ascend C kernel (for the launch shim).
 *
 * The generated launch shim of an Ascend C op includes this header in exactly one translation
 * unit; it defines the kernel state thread-local `opbuild_kernel_state_` (the C shim's job for C
 * kernels) and run_block, which the shim's opbuild_kernel_launch returns:
 *
 *     extern "C" void add_custom(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR);
 *     static void invoke(void *const *a) { add_custom((GM_ADDR)a[0], ..., (GM_ADDR)a[4]); }
 *     ... return opbuild::ascendc::run_block(invoke, args, block_idx, block_num, sync, sync_ctx,
 *                                            tiling_key, err, errlen);
 *
 * UB policy: each thread allocates one arena of OPBUILD_SOC_UB_SIZE bytes the first time it runs
 * a block and reuses it; TPipe::InitBuffer fills every piece it hands out with 0xFF bytes
 * (kernel_pipe.h), so a read of UB the block never wrote sees NaN for float types and -1 for
 * integers, never another block's data.
 */
#ifndef OPBUILD_ASCENDC_LAUNCH_H
#define OPBUILD_ASCENDC_LAUNCH_H

#include <cstdlib>
#include <memory>
#include <new>

#include "opbuild_ascendc/kernel_base.h" /* (not kernel_operator.h: the shim needs only the block state; it compiles in half the time) */

#ifndef OPBUILD_SOC_UB_SIZE
#error "OPBUILD_SOC_UB_SIZE (the SoC's UB bytes per core) must be defined by the build"
#endif
#ifndef OPBUILD_SOC_CORE_NUM
#error "OPBUILD_SOC_CORE_NUM (the SoC's vector cores) must be defined by the build"
#endif

extern "C" {
__thread opbuild_kernel_state opbuild_kernel_state_ __attribute__((visibility("hidden"))) = {};
}

namespace opbuild {
namespace ascendc {

/* The arena's placement: 2 KiB into a page of its own. Every GM -> UB and UB -> GM copy then reads
 * and writes addresses half a page apart (modulo 4 KiB) from GM buffers that start at or near a
 * page (numpy's large arrays start 16 bytes in, device memory on a page). A load that follows a
 * store to an address equal in its low 12 bits waits for that store on x86 (4K aliasing): an arena
 * wherever malloc puts it made copies of some launches 2-3x slower than of others. */
constexpr size_t kArenaPage = 4096, kArenaOffset = 2048;
struct ArenaFree {
    void operator()(uint8_t *p) const { std::free(p - kArenaOffset); }
};

inline uint8_t *ub_arena() {
    static thread_local std::unique_ptr<uint8_t, ArenaFree> arena;
    if (!arena) {
        const size_t bytes = ((size_t)OPBUILD_SOC_UB_SIZE + kArenaOffset + kArenaPage - 1) / kArenaPage * kArenaPage;
        uint8_t *base = static_cast<uint8_t *>(std::aligned_alloc(kArenaPage, bytes));
        if (base) arena.reset(base + kArenaOffset);
    }
    return arena.get();
}

/* The block's failure message goes to err without op or binary: the runtime's message names them
 * (the shim is compiled once for every binary of a SoC, so it knows neither). */
inline int32_t run_block(void (*invoke)(void *const *args), void *const *args, uint32_t block_idx, uint32_t block_num,
                         opbuild_sync_all_fn sync, void *sync_ctx, uint64_t tiling_key, char *err, uint32_t errlen) {
    opbuild_kernel_state *s = opbuild_kernel_begin(block_idx, block_num, sync, sync_ctx);
    s->tiling_key = tiling_key;
    BlockState &b = block();
    b = BlockState();
    int32_t rc = 0;
    char msg[OPBUILD_KERNEL_ERROR_LEN] = "";
    if (block_num > (uint32_t)OPBUILD_SOC_CORE_NUM) {
        std::snprintf(msg, sizeof msg, "launch: block dim %u is more than the SoC's %u cores", block_num,
                      (unsigned)OPBUILD_SOC_CORE_NUM);
        rc = 1;
    } else if ((b.ub = ub_arena()) == nullptr) {
        std::snprintf(msg, sizeof msg, "launch: cannot allocate the UB arena of %u bytes", (unsigned)OPBUILD_SOC_UB_SIZE);
        rc = 1;
    } else {
        b.ub_size = OPBUILD_SOC_UB_SIZE;
        try {
            invoke(args);
        } catch (const KernelError &e) {
            std::snprintf(msg, sizeof msg, "%s", e.what());
            rc = 1;
        } catch (const std::exception &e) {
            std::snprintf(msg, sizeof msg, "kernel: C++ exception: %s", e.what());
            rc = 1;
        } catch (...) {
            std::snprintf(msg, sizeof msg, "kernel: a C++ exception that is not a std::exception");
            rc = 1;
        }
        if (rc == 0 && s->error[0] != '\0') {
            std::snprintf(msg, sizeof msg, "%s", s->error);
            rc = 1;
        }
    }
    b = BlockState();
    s->sync_all = nullptr;
    s->sync_ctx = nullptr;
    if (rc != 0 && err != nullptr && errlen > 0)
        std::snprintf(err, errlen, "%s", msg); /* the simulator adds "block <i>: ", the runtime op and binary */
    return rc;
}

}  // namespace ascendc
}  // namespace opbuild

#endif /* OPBUILD_ASCENDC_LAUNCH_H */
