/* graph/types.h: ge::DataType and ge::Format with GE's enumerator values (opbuild's clean-room host
 * headers for Ascend C op_host sources).
 *
 * The numbers are GE's, the same as opbuild/abi/vocabulary.py's `ge` values (DTYPES, FORMATS,
 * CANN_DATA_TYPES); tests/ascendc/test_host_headers.py compiles this header and asserts equality.
 */
#ifndef OPBUILD_ASCENDC_GRAPH_TYPES_H
#define OPBUILD_ASCENDC_GRAPH_TYPES_H

#include <cstddef>
#include <cstdint>

#include "graph/ge_error_codes.h"

namespace ge {

enum DataType {
    DT_FLOAT = 0,
    DT_FLOAT16 = 1,
    DT_INT8 = 2,
    DT_INT32 = 3,
    DT_UINT8 = 4,
    DT_INT16 = 6,
    DT_UINT16 = 7,
    DT_UINT32 = 8,
    DT_INT64 = 9,
    DT_UINT64 = 10,
    DT_DOUBLE = 11,
    DT_BOOL = 12,
    DT_STRING = 13,
    DT_COMPLEX64 = 16,
    DT_COMPLEX128 = 17,
    DT_BF16 = 27,
    DT_UNDEFINED = 28,
    DT_INT4 = 29,
    DT_UINT1 = 30,
    DT_COMPLEX32 = 33,
    DT_HIFLOAT8 = 34,
    DT_FLOAT8_E5M2 = 35,
    DT_FLOAT8_E4M3FN = 36,
    DT_FLOAT8_E8M0 = 37,
    DT_FLOAT6_E3M2 = 38,
    DT_FLOAT6_E2M3 = 39,
    DT_FLOAT4_E2M1 = 40,
    DT_FLOAT4_E1M2 = 41,
    DT_MAX
};

enum Format {
    FORMAT_NCHW = 0,
    FORMAT_NHWC = 1,
    FORMAT_ND = 2,
    FORMAT_NC1HWC0 = 3,
    FORMAT_FRACTAL_Z = 4,
    FORMAT_NC1HWC0_C04 = 12,
    FORMAT_HWCN = 16,
    FORMAT_NDHWC = 27,
    FORMAT_FRACTAL_NZ = 29,
    FORMAT_NCDHW = 30,
    FORMAT_NDC1HWC0 = 32,
    FORMAT_FRACTAL_Z_3D = 33,
    FORMAT_NC = 35,
    FORMAT_NCL = 47,
    FORMAT_MAX = 0xff
};

/* Bytes per element of the dtypes opbuild runs (0 for the others), as opbuild/tiling.h's
 * tiling_dtype_size. */
inline int GetSizeByDataType(DataType dt) {
    switch (dt) {
        case DT_INT8: case DT_UINT8: case DT_BOOL: return 1;
        case DT_FLOAT16: case DT_BF16: case DT_INT16: case DT_UINT16: return 2;
        case DT_FLOAT: case DT_INT32: case DT_UINT32: return 4;
        case DT_INT64: case DT_UINT64: case DT_DOUBLE: case DT_COMPLEX64: return 8;
        case DT_COMPLEX128: return 16;
        default: return 0;
    }
}

}  // namespace ge

#endif
