/* AddCustomTemplate kernel: z = x + y, elementwise, same shape.
 *
 * Built once per binary with DTYPE_X / DTYPE_Y / DTYPE_Z = half or float. Each element is
 * converted to float, added, and converted back once: for fp16 this is exactly numpy's float16
 * add (the float sum of two halves rounded once to half equals the correctly rounded half sum,
 * since float has more than 2 * 11 + 2 significand bits); for fp32 it is the plain float add.
 *
 * Block split (from the tiling): block i owns [i * block_length, min(total, (i + 1) * block_length)).
 */
#include "opbuild/kernel.h"
#include "add_custom_template_tiling.h"

static inline float to_float_h(half v) { return opbuild_half_to_float(v); }
static inline float to_float_f(float v) { return v; }
#define TO_FLOAT(v) _Generic((v), half: to_float_h, float: to_float_f)(v)
#define FROM_FLOAT(T, f) _Generic((T *)0, half *: opbuild_float_to_half, float *: to_float_f)(f)

KERNEL_ENTRY void add_custom_template(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR workspace, GM_ADDR tiling) {
    (void)workspace;
    GET_TILING_DATA(td, tiling);
    if ((uint64_t)GetBlockNum() * td.block_length < td.total_length)
        KERNEL_FAIL("%s: %u blocks of %llu elements cannot cover %llu elements", OPBUILD_BINARY_NAME, GetBlockNum(),
                    (unsigned long long)td.block_length, (unsigned long long)td.total_length);
    uint64_t begin = (uint64_t)GetBlockIdx() * td.block_length;
    if (begin >= td.total_length) return;
    uint64_t end = begin + td.block_length < td.total_length ? begin + td.block_length : td.total_length;

    const DTYPE_X *xp = (const DTYPE_X *)x;
    const DTYPE_Y *yp = (const DTYPE_Y *)y;
    DTYPE_Z *zp = (DTYPE_Z *)z;
    for (uint64_t i = begin; i < end; ++i) zp[i] = FROM_FLOAT(DTYPE_Z, TO_FLOAT(xp[i]) + TO_FLOAT(yp[i]));
}
