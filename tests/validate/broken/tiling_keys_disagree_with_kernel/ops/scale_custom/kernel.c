#include "opbuild/kernel.h"
#include "scale_custom_tiling.h"

/* The tiling function sets key 2 for a tail; TILING_KEY_IS(2) in a comment is no branch. */
KERNEL_ENTRY void scale_custom(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
    (void)x;
    (void)y;
    (void)workspace;
    (void)tiling;
    if (TILING_KEY_IS(0)) {
    } else if (TILING_KEY_IS(1)) {
        KERNEL_FAIL("TILING_KEY_IS(2) in a string is no branch either");
    }
}
