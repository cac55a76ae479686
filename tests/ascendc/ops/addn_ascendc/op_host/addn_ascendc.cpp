// AddnAscendc host side: one tiling class (element count, tensor count), 2 blocks.
#include "register/op_def_registry.h"
#include "register/tilingdata_base.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(AddnTiling)
TILING_DATA_FIELD_DEF(uint32_t, totalLength);
TILING_DATA_FIELD_DEF(uint32_t, tensorCount);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(AddnAscendc, AddnTiling)

static ge::graphStatus AddnTilingFunc(gert::TilingContext *context)
{
    AddnTiling tiling;
    uint32_t count = 0;
    while (context->GetDynamicInputShape(0, count) != nullptr) ++count;
    tiling.set_totalLength(context->GetDynamicInputShape(0, 0)->GetOriginShape().GetShapeSize());
    tiling.set_tensorCount(count);
    context->SetBlockDim(2);
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    context->GetWorkspaceSizes(1)[0] = 0;
    return ge::GRAPH_SUCCESS;
}
}  // namespace optiling

namespace ge {
static graphStatus AddnInferShape(gert::InferShapeContext *context)
{
    *context->GetOutputShape(0) = *context->GetDynamicInputShape(0, 0);
    return GRAPH_SUCCESS;
}
}  // namespace ge

namespace ops {
class AddnAscendc : public OpDef {
public:
    explicit AddnAscendc(const char *name) : OpDef(name)
    {
        this->Input("x").ParamType(DYNAMIC).DataType({ge::DT_FLOAT16}).Format({ge::FORMAT_ND});
        this->Output("z").ParamType(REQUIRED).DataType({ge::DT_FLOAT16}).Format({ge::FORMAT_ND});
        this->SetInferShape(ge::AddnInferShape);
        this->AICore().SetTiling(optiling::AddnTilingFunc).AddConfig("ascend910b");
    }
};
OP_ADD(AddnAscendc);
}  // namespace ops
