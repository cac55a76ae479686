// In-house lookalike of a unary op with a float attribute; its tiling class is also called
// optiling::TilingData (with another layout than vec_add.cpp's).
#include "leaky_tiling.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"

namespace optiling {
static ge::graphStatus LeakyTiling(gert::TilingContext *context)
{
    TilingData tiling;
    auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
    uint64_t ub = 0;
    platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ub);
    const float *slope = context->GetAttrs()->GetAttrPointer<float>(0);
    tiling.set_totalLength(context->GetInputShape(0)->GetOriginShape().GetShapeSize());
    tiling.set_tileNum(static_cast<uint32_t>(ub / 1024));
    tiling.set_slope(*slope);
    context->SetBlockDim(platform.GetCoreNumAiv());
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    context->GetWorkspaceSizes(1)[0] = platform.GetLibApiWorkSpaceSize();
    return ge::GRAPH_SUCCESS;
}
}  // namespace optiling

namespace ge {
static ge::graphStatus LeakyShape(gert::InferShapeContext *context)
{
    const gert::Shape *x = context->GetInputShape(0);
    gert::Shape *y = context->GetOutputShape(0);
    *y = *x;
    return GRAPH_SUCCESS;
}
static ge::graphStatus LeakyDtype(gert::InferDataTypeContext *context)
{
    context->SetOutputDataType(0, context->GetInputDataType(0));
    return GRAPH_SUCCESS;
}
}  // namespace ge

namespace ops {
class LeakyCustom : public OpDef {
public:
    LeakyCustom(const char *name) : OpDef(name)
    {
        this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->Output("y").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->Attr("slope").AttrType(OPTIONAL).Float(0.25);
        this->SetInferShape(ge::LeakyShape).SetInferDataType(ge::LeakyDtype);
        this->AICore().SetTiling(optiling::LeakyTiling).AddConfig("ascend910b");
    }
};
OP_ADD(LeakyCustom);
}  // namespace ops
