// In-house lookalike of an elementwise Ascend C op_host source (same APIs as the public samples).
#include "register/op_def_registry.h"
#include "register/tilingdata_base.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(TilingData)
TILING_DATA_FIELD_DEF(uint32_t, elementCount);
TILING_DATA_FIELD_DEF(uint32_t, tiles);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(VecAddCustom, TilingData)

static ge::graphStatus VecAddTiling(gert::TilingContext *context)
{
    TilingData data;
    const uint32_t count = context->GetInputShape(0)->GetStorageShape().GetShapeSize();
    if (count == 0) {
        return ge::GRAPH_FAILED;
    }
    if (context->GetInputShape(1)->GetStorageShape().GetShapeSize() != count) return ge::GRAPH_PARAM_INVALID; context->SetBlockDim(4);
    data.set_elementCount(count);
    data.set_tiles(2);
    data.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(data.GetDataSize());
    size_t *ws = context->GetWorkspaceSizes(2);
    ws[0] = 256;
    ws[1] = 64;
    return ge::GRAPH_SUCCESS;
}
}  // namespace optiling

namespace ge {
static graphStatus VecAddShape(gert::InferShapeContext *context)
{
    *context->GetOutputShape(0) = *context->GetInputShape(1);
    return GRAPH_SUCCESS;
}
static graphStatus VecAddDtype(gert::InferDataTypeContext *context)
{
    context->SetOutputDataType(0, context->GetInputDataType(0));
    return GRAPH_SUCCESS;
}
}  // namespace ge

namespace ops {
class VecAddCustom : public OpDef {
public:
    explicit VecAddCustom(const char *name) : OpDef(name)
    {
        this->Input("a").ParamType(REQUIRED).DataType({ge::DT_FLOAT16, ge::DT_FLOAT}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
        this->Input("b")
            .ParamType(REQUIRED)
            .DataType({ge::DT_FLOAT16, ge::DT_FLOAT})
            .Format({ge::FORMAT_ND, ge::FORMAT_ND});
        this->Output("c").ParamType(REQUIRED).DataType({ge::DT_FLOAT16, ge::DT_FLOAT}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
        this->SetInferShape(ge::VecAddShape).SetInferDataType(ge::VecAddDtype);
        this->AICore().SetTiling(optiling::VecAddTiling).AddConfig("ascend910b").AddConfig("ascend310p");
    }
};
OP_ADD(VecAddCustom);
}  // namespace ops
