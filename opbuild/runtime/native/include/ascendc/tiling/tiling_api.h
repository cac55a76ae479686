/* tiling/tiling_api.h: the host tiling API umbrella (opbuild's clean-room headers).
 *
 * Includes the platform API, ge::Shape and the tiling-data macros. CANN's library tiling helpers
 * (matmul_tiling::*, AscendC::Get*MaxMinTmpSize, ...) are not provided yet: a source that calls
 * them fails to compile with the name it used. */
#ifndef OPBUILD_ASCENDC_TILING_TILING_API_H
#define OPBUILD_ASCENDC_TILING_TILING_API_H

#include "graph/tensor.h"
#include "register/tilingdata_base.h"
#include "tiling/platform/platform_ascendc.h"

#endif
