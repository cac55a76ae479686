/* exe_graph/runtime/infer_shape_context.h: gert::InferShapeContext, what an InferShape function
 * (`ge::graphStatus InferShape(gert::InferShapeContext *)`) reads (input shapes, attributes) and
 * writes (output shapes). Shapes are origin shapes. Built by opbuild_ascendc/host_bridge.h. */
#ifndef OPBUILD_ASCENDC_EXE_GRAPH_INFER_SHAPE_CONTEXT_H
#define OPBUILD_ASCENDC_EXE_GRAPH_INFER_SHAPE_CONTEXT_H

#include "exe_graph/runtime/runtime_attrs.h"
#include "graph/ge_error_codes.h"
#include "opbuild_ascendc/host_io.h"

namespace gert {

class InferShapeContext {
public:
    const Shape *GetInputShape(size_t index) const { return Origin(inputs_.Flat(index)); }
    const Shape *GetOptionalInputShape(size_t ir_index) const { return Origin(inputs_.Ir(ir_index, 0)); }
    const Shape *GetDynamicInputShape(size_t ir_index, size_t relative_index) const {
        return Origin(inputs_.Ir(ir_index, relative_index));
    }
    const Tensor *GetInputTensor(size_t index) const { return inputs_.Flat(index); }
    const Tensor *GetOptionalInputTensor(size_t ir_index) const { return inputs_.Ir(ir_index, 0); }
    const CompileTimeTensorDesc *GetInputDesc(size_t index) const { return inputs_.Desc(index); }
    Shape *GetOutputShape(size_t index) {
        Tensor *t = outputs_.Flat(index);
        return t ? &t->MutableShape().MutableOriginShape() : nullptr;
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
    static const Shape *Origin(const Tensor *t) { return t ? &t->GetOriginShape() : nullptr; }
    opbuild_ascendc::IoSide inputs_;
    opbuild_ascendc::IoSide outputs_;
    RuntimeAttrs attrs_;
    opbuild_ascendc::NodeInfo node_;
};

class InferShapeRangeContext;  // SetInferShapeRange takes a function of one; opbuild never calls it

}  // namespace gert

#endif
