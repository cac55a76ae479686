// LeakyAscendc host side: 4 blocks, 4 double-buffered tiles per block; the slope from the attr.
#include "leaky_ascendc_tiling.h"
#include "register/op_def_registry.h"

namespace optiling {
static ge::graphStatus LeakyTiling(gert::TilingContext *context)
{
    const uint32_t total = context->GetInputShape(0)->GetOriginShape().GetShapeSize();
    const float *slope = context->GetAttrs()->GetAttrPointer<float>(0);
    TilingData tiling;
    tiling.set_totalLength(total);
    tiling.set_tileNum(4);
    tiling.set_slope(slope == nullptr ? 0.0f : *slope);
    context->SetBlockDim(4);
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    context->GetWorkspaceSizes(1)[0] = 0;
    return ge::GRAPH_SUCCESS;
}
}  // namespace optiling

namespace ge {
static graphStatus LeakyInferShape(gert::InferShapeContext *context)
{
    *context->GetOutputShape(0) = *context->GetInputShape(0);
    return GRAPH_SUCCESS;
}
static graphStatus LeakyInferDataType(gert::InferDataTypeContext *context)
{
    context->SetOutputDataType(0, context->GetInputDataType(0));
    return GRAPH_SUCCESS;
}
}  // namespace ge

namespace ops {
class LeakyAscendc : public OpDef {
public:
    explicit LeakyAscendc(const char *name) : OpDef(name)
    {
        this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->Output("y").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->Attr("negative_slope").AttrType(OPTIONAL).Float(0.0);
        this->SetInferShape(ge::LeakyInferShape).SetInferDataType(ge::LeakyInferDataType);
        this->AICore().SetTiling(optiling::LeakyTiling).AddConfig("ascend910b");
    }
};
OP_ADD(LeakyAscendc);
}  // namespace ops
