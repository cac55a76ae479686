/* graph/ge_error_codes.h: ge::graphStatus and its two values (opbuild's clean-room host headers).
 *
 * GRAPH_SUCCESS is 0 and GRAPH_FAILED is 0xFFFFFFFF, as opbuild/tiling.h's OPBUILD_GRAPH_SUCCESS /
 * OPBUILD_GRAPH_FAILED (the bridge returns a tiling function's status through that C ABI).
 */
#ifndef OPBUILD_ASCENDC_GRAPH_GE_ERROR_CODES_H
#define OPBUILD_ASCENDC_GRAPH_GE_ERROR_CODES_H

#include <cstdint>

namespace ge {
using graphStatus = uint32_t;
constexpr graphStatus GRAPH_SUCCESS = 0U;
constexpr graphStatus GRAPH_FAILED = 0xFFFFFFFFU;
constexpr graphStatus GRAPH_PARAM_INVALID = 50331649U;
}  // namespace ge

#endif
