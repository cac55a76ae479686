/* register/op_impl_registry.h: the function types an op's host implementation registers
 * (gert::OpImplRegisterV2's TilingKernelFunc, InferShapeKernelFunc, InferDataTypeKernelFunc).
 * opbuild reaches an op's functions through its OpDef (SetTiling, SetInferShape,
 * SetInferDataType); IMPL_OP(...) registration chains are not served. */
#ifndef OPBUILD_ASCENDC_REGISTER_OP_IMPL_REGISTRY_H
#define OPBUILD_ASCENDC_REGISTER_OP_IMPL_REGISTRY_H

#include "exe_graph/runtime/infer_datatype_context.h"
#include "exe_graph/runtime/infer_shape_context.h"
#include "exe_graph/runtime/tiling_context.h"

namespace gert {
struct OpImplRegisterV2 {
    using TilingKernelFunc = ge::graphStatus (*)(TilingContext *);
    using InferShapeKernelFunc = ge::graphStatus (*)(InferShapeContext *);
    using InferDataTypeKernelFunc = ge::graphStatus (*)(InferDataTypeContext *);
};
}  // namespace gert

#endif
