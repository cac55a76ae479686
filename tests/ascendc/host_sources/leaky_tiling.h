// In-house lookalike: a tiling header of three fields (16 bytes in CANN's layout).
#ifndef LEAKY_TILING_H
#define LEAKY_TILING_H
#include "register/tilingdata_base.h"
namespace optiling {
BEGIN_TILING_DATA_DEF(TilingData)
TILING_DATA_FIELD_DEF(uint32_t, totalLength);
TILING_DATA_FIELD_DEF(uint32_t, tileNum);
TILING_DATA_FIELD_DEF(float, slope);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(LeakyCustom, TilingData)
}  // namespace optiling
#endif
