/* exe_graph/runtime/infer_datatype_context.h: gert::InferDataTypeContext, what an InferDataType
 * function reads (input dtypes, attributes) and writes (output dtypes). Built by
 * opbuild_ascendc/host_bridge.h. */
#ifndef OPBUILD_ASCENDC_EXE_GRAPH_INFER_DATATYPE_CONTEXT_H
#define OPBUILD_ASCENDC_EXE_GRAPH_INFER_DATATYPE_CONTEXT_H

#include "exe_graph/runtime/runtime_attrs.h"
#include "graph/ge_error_codes.h"
#include "opbuild_ascendc/host_io.h"

namespace gert {

class InferDataTypeContext {
public:
    ge::DataType GetInputDataType(size_t index) const { return Dt(inputs_.Flat(index)); }
    ge::DataType GetOptionalInputDataType(size_t ir_index) const { return Dt(inputs_.Ir(ir_index, 0)); }
    ge::DataType GetDynamicInputDataType(size_t ir_index, size_t relative_index) const {
        return Dt(inputs_.Ir(ir_index, relative_index));
    }
    ge::DataType GetOutputDataType(size_t index) const { return Dt(outputs_.Flat(index)); }
    ge::graphStatus SetOutputDataType(size_t index, ge::DataType dtype) {
        Tensor *t = outputs_.Flat(index);
        if (t == nullptr) return ge::GRAPH_FAILED;
        t->SetDataType(dtype);
        return ge::GRAPH_SUCCESS;
    }
    size_t GetComputeNodeInputNum() const { return inputs_.Num(); }
    size_t GetComputeNodeOutputNum() const { return outputs_.Num(); }
    const RuntimeAttrs *GetAttrs() const { return &attrs_; }
    const char *GetNodeName() const { return node_.name.c_str(); }
    const char *GetNodeType() const { return node_.type.c_str(); }

    /* ---- the bridge's side ---- */
    opbuild_ascendc::IoSide &OpbuildInputs() { return inputs_; }
    opbuild_ascendc::IoSide &OpbuildOutputs() { return outputs_; }
    RuntimeAttrs &OpbuildAttrs() { return attrs_; }
    opbuild_ascendc::NodeInfo &OpbuildNode() { return node_; }

private:
    static ge::DataType Dt(const Tensor *t) { return t ? t->GetDataType() : ge::DT_UNDEFINED; }
    opbuild_ascendc::IoSide inputs_;
    opbuild_ascendc::IoSide outputs_;
    RuntimeAttrs attrs_;
    opbuild_ascendc::NodeInfo node_;
};

}  // namespace gert

#endif
