/* opbuild/kernel.h: the kernel side of the device ABI (what an Ascend C kernel sees, in C).
 *
 * A kernel source defines one entry with the Ascend C argument order:
 *
 *     KERNEL_ENTRY void add_custom_template(GM_ADDR x, GM_ADDR y, GM_ADDR z,
 *                                           GM_ADDR workspace, GM_ADDR tiling) {
 *         GET_TILING_DATA(td, tiling);            // needs the op's generated <op>_tiling.h
 *         uint32_t block = GetBlockIdx(), blocks = GetBlockNum();
 *         ...
 *     }
 *
 * Inputs come first (a dynamic input is one GM_ADDR to a tensor list, below), then outputs, then
 * the workspace, then the tiling data. The build compiles the source once per binary with that
 * binary's macros (DTYPE_<NAME> the C element type, ORIG_DTYPE_<NAME> the GE dtype number, an
 * OPBUILD_DT_* macro usable in `#if`, FORMAT_<NAME>,
 * OPBUILD_BINARY_NAME, ...) and links it with a generated launch shim that exports
 * `opbuild_kernel_launch` (type opbuild_kernel_launch_fn below) for the device simulator.
 */
#ifndef OPBUILD_KERNEL_H
#define OPBUILD_KERNEL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "opbuild/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GM_ADDR uint8_t *
#define __global__
#define __aicore__
#define KERNEL_ENTRY __attribute__((visibility("hidden")))
#define OPBUILD_KERNEL_ERROR_LEN 256

/* A dynamic (tensor list) input: CANN's GM list layout (opbuild/abi/tensor_list.py), uint64 words
 *     [0] dataPtrOffset | per tensor: dim | count << 32, dim sizes | at dataPtrOffset: count pointers
 * (what Ascend C's ListTensorDesc reads). */
static inline uint64_t opbuild_list_count(GM_ADDR list) {
    const uint64_t *w = (const uint64_t *)list;
    return w[0] <= 8 ? 0 : w[1] >> 32;
}
static inline void *opbuild_list_item(GM_ADDR list, uint64_t i) {
    const uint64_t *w = (const uint64_t *)list;
    return (void *)(uintptr_t)((const uint64_t *)(list + w[0]))[i];
}
/* The shape of tensor i: its dims, *dim set to their number. */
static inline const uint64_t *opbuild_list_shape(GM_ADDR list, uint64_t i, uint64_t *dim) {
    const uint64_t *w = (const uint64_t *)list + 1;
    for (uint64_t k = 0; k < i; ++k) w += 1 + (w[0] & 0xffffffffu);
    *dim = w[0] & 0xffffffffu;
    return w + 1;
}

/* Cross-block barrier (Ascend C SyncAll). Only valid in kernels whose spec sets
 * `kernel.intercore_sync: true`: the simulator then runs all blocks concurrently, and the tiling
 * must keep block_dim <= the core count. A block that returns early leaves the barrier. */
typedef void (*opbuild_sync_all_fn)(void *barrier);

/* What the launch shim sets in the thread that runs a block. One thread-local struct, not one
 * variable per field: in a dlopen'ed binary every thread-local variable costs a __tls_get_addr
 * call per access, and the shim touches all of them on every launch. */
typedef struct opbuild_kernel_state {
    uint32_t block_idx, block_num;
    opbuild_sync_all_fn sync_all;
    void *sync_ctx;
    uint64_t tiling_key;
    char error[OPBUILD_KERNEL_ERROR_LEN]; /* the block's KERNEL_FAIL message, or "" */
} opbuild_kernel_state;
extern __thread opbuild_kernel_state opbuild_kernel_state_ __attribute__((visibility("hidden")));

/* A launch shim's start of a block: the calling thread's state for it (block, barrier, no error
 * yet, tiling key 0 until the shim reads it from the tiling argument). */
static inline opbuild_kernel_state *opbuild_kernel_begin(uint32_t block_idx, uint32_t block_num,
                                                         opbuild_sync_all_fn sync, void *sync_ctx) {
    opbuild_kernel_state *s = &opbuild_kernel_state_; /* one thread-local lookup per launch */
    s->block_idx = block_idx;
    s->block_num = block_num;
    s->sync_all = sync;
    s->sync_ctx = sync_ctx;
    s->error[0] = '\0';
    s->tiling_key = 0;
    return s;
}

/* The C API's names for the block, the barrier and the tiling data. An Ascend C kernel
 * (kernel_operator.h defines OPBUILD_ASCENDC) gets AscendC:: ones with the Ascend C types instead. */
#ifndef OPBUILD_ASCENDC
static inline void SyncAll(void) {
    opbuild_kernel_state *s = &opbuild_kernel_state_;
    if (s->sync_all) s->sync_all(s->sync_ctx);
}

static inline uint32_t GetBlockIdx(void) { return opbuild_kernel_state_.block_idx; }
static inline uint32_t GetBlockNum(void) { return opbuild_kernel_state_.block_num; }
#endif

/* The launch's tiling key (the tiling function's tiling_set_tiling_key). The runtime passes it
 * after the tiling data, at the next 8-byte boundary past opParaSize (at least 1) bytes; the
 * launch shim reads it before calling the entry. As in Ascend C:
 *
 *     if (TILING_KEY_IS(1)) { ...aligned path... } else if (TILING_KEY_IS(2)) { ...tail path... }
 */
static inline uint64_t GetTilingKey(void) { return opbuild_kernel_state_.tiling_key; }
#define TILING_KEY_IS(k) (opbuild_kernel_state_.tiling_key == (uint64_t)(k))

/* Record a kernel failure for this block; the launch reports it as an error. */
static inline void opbuild_kernel_fail(const char *fmt, ...) {
    char *error = opbuild_kernel_state_.error;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(error, OPBUILD_KERNEL_ERROR_LEN, fmt, ap);
    va_end(ap);
    if (error[0] == '\0') error[0] = '?';
}
#define KERNEL_FAIL(...) do { opbuild_kernel_fail(__VA_ARGS__); return; } while (0)

/* Copy the op's tiling data (type OPBUILD_TILING_DATA_TYPE from the generated <op>_tiling.h). */
#ifndef OPBUILD_ASCENDC
#define GET_TILING_DATA(var, tiling) \
    OPBUILD_TILING_DATA_TYPE var;    \
    memcpy(&(var), (tiling), sizeof(var))
#endif

/* The split of n items over the blocks: this block's [begin, end). */
static inline void opbuild_block_range(uint64_t n, uint64_t *begin, uint64_t *end) {
    uint64_t blocks = opbuild_kernel_state_.block_num, idx = opbuild_kernel_state_.block_idx;
    uint64_t per = n / blocks, rem = n % blocks;
    *begin = idx * per + (idx < rem ? idx : rem);
    *end = *begin + per + (idx < rem ? 1 : 0);
}

#ifndef OPBUILD_BINARY_NAME
#define OPBUILD_BINARY_NAME "kernel"
#endif

/* This block's [begin, end) of `total` elements split in blocks of `block_length` (the split of
 * tiling_split_elementwise). Returns 1 if the block has work, 0 if not, and -1 after recording a
 * failure when the launch's blocks cannot cover `total` (a tiling/launch mismatch). */
static inline int opbuild_block_span(uint64_t total, uint64_t block_length, uint64_t *begin, uint64_t *end) {
    uint32_t blocks = opbuild_kernel_state_.block_num;
    if ((uint64_t)blocks * block_length < total) {
        opbuild_kernel_fail("%s: %u blocks of %llu elements cannot cover %llu elements", OPBUILD_BINARY_NAME,
                            blocks, (unsigned long long)block_length, (unsigned long long)total);
        return -1;
    }
    *begin = (uint64_t)opbuild_kernel_state_.block_idx * block_length;
    if (*begin >= total) return 0;
    *end = *begin + block_length < total ? *begin + block_length : total;
    return 1;
}

/* Signature of the launch shim every kernel binary exports as `opbuild_kernel_launch`: runs block
 * `block_idx` of `block_num` (sync/sync_ctx: the barrier behind SyncAll; for a launch without
 * intercore_sync the simulator passes a checker that makes a SyncAll call fail the block, so a
 * shim must pass both through unchanged); returns 0, or nonzero with a message in err. */
typedef int32_t (*opbuild_kernel_launch_fn)(void *const *args, uint32_t nargs, uint32_t block_idx,
                                            uint32_t block_num, opbuild_sync_all_fn sync, void *sync_ctx,
                                            char *err, uint32_t errlen);

#ifdef __cplusplus
}
#endif
#endif /* OPBUILD_KERNEL_H */
