/* opbuild_ascendc/host_exports.h: one Ascend C op's exports, the generated per-op TU of its host
 * blob (opbuild_ascendc/host_bridge.h has the implementation they call, compiled once per build):
 *
 *     #include "opbuild_ascendc/host_exports.h"
 *     OPBUILD_ASCENDC_HOST_EXPORTS(add_custom, "AddCustom")
 *
 * defines, with C linkage and default visibility (OPBUILD_API):
 *
 *   uint32_t add_custom_opbuild_tiling(TilingContext *ctx)
 *   uint32_t add_custom_opbuild_infer_shape(TilingContext *ctx, uint32_t output_index,
 *                                           int64_t *dims, uint32_t *dim_num)
 *   uint32_t add_custom_opbuild_infer_dtype(TilingContext *ctx, uint32_t output_index, int32_t *dtype)
 *   const char *add_custom_opbuild_describe(void)
 *
 * (what each does: host_bridge.h). This header includes only opbuild's C tiling ABI, so the TU
 * compiles in a fraction of a second.
 */
#ifndef OPBUILD_ASCENDC_HOST_EXPORTS_H
#define OPBUILD_ASCENDC_HOST_EXPORTS_H

#include <stdint.h>

#include "opbuild/tiling.h"

extern "C" {
uint32_t opbuild_ascendc_host_tiling(TilingContext *ctx, const char *op_type);
uint32_t opbuild_ascendc_host_infer_shape(TilingContext *ctx, const char *op_type, uint32_t output_index,
                                          int64_t *dims, uint32_t *dim_num);
uint32_t opbuild_ascendc_host_infer_dtype(TilingContext *ctx, const char *op_type, uint32_t output_index,
                                          int32_t *dtype);
const char *opbuild_ascendc_host_describe(void);
}

#define OPBUILD_ASCENDC_HOST_EXPORTS(op_snake, op_type)                                                     \
    extern "C" OPBUILD_API uint32_t op_snake##_opbuild_tiling(TilingContext *ctx) {                         \
        return opbuild_ascendc_host_tiling(ctx, op_type);                                                   \
    }                                                                                                       \
    extern "C" OPBUILD_API uint32_t op_snake##_opbuild_infer_shape(TilingContext *ctx, uint32_t output_index, \
                                                                   int64_t *dims, uint32_t *dim_num) {      \
        return opbuild_ascendc_host_infer_shape(ctx, op_type, output_index, dims, dim_num);                 \
    }                                                                                                       \
    extern "C" OPBUILD_API uint32_t op_snake##_opbuild_infer_dtype(TilingContext *ctx, uint32_t output_index, \
                                                                   int32_t *dtype) {                        \
        return opbuild_ascendc_host_infer_dtype(ctx, op_type, output_index, dtype);                         \
    }                                                                                                       \
    extern "C" OPBUILD_API const char *op_snake##_opbuild_describe(void) { return opbuild_ascendc_host_describe(); }

#endif
