/* BuggyAdd kernel: z = x + y over the block's span, with the bug the tiling passes (op.yaml). */
#include "opbuild/kernel.h"
#include "buggy_add_tiling.h"

KERNEL_ENTRY void buggy_add(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR workspace, GM_ADDR tiling) {
    (void)workspace;
    GET_TILING_DATA(td, tiling);
    uint64_t begin, end;
    if (opbuild_block_span(td.total_length, td.block_length, &begin, &end) <= 0) return;
    const float *xp = (const float *)x, *yp = (const float *)y;
    volatile float *zp = (volatile float *)z;
    int rounds = (td.bug == 2 && GetBlockIdx() == 3) ? 200 : 1; /* bug 2: block 3 is slow */
    for (int r = 0; r < rounds; ++r)
        for (uint64_t i = begin; i < end; ++i) zp[i] = xp[i] + yp[i];
    if (td.bug == 1 && begin <= 37 && 37 < end) zp[37] += 1.0f; /* bug 1: one wrong element */
    if (td.bug == 3 && end == td.total_length) zp[end] = 0.0f;   /* bug 3: one past the end of z */
}
