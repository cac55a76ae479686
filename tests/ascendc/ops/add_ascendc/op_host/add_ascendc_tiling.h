// Tiling class of AddAscendc: the element count and the elements of one UB tile.
#ifndef ADD_ASCENDC_TILING_H
#define ADD_ASCENDC_TILING_H
#include "register/tilingdata_base.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(TilingData)
TILING_DATA_FIELD_DEF(uint32_t, totalLength);
TILING_DATA_FIELD_DEF(uint32_t, tileLength);
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(AddAscendc, TilingData)
}  // namespace optiling
#endif
