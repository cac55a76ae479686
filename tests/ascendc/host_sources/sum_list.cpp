// In-house lookalike of an AddN-style op: one DYNAMIC input list.
#include "register/op_def_registry.h"
#include "register/tilingdata_base.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(SumListTiling)
TILING_DATA_FIELD_DEF(uint32_t, length);
TILING_DATA_FIELD_DEF(uint32_t, listSize);
TILING_DATA_FIELD_DEF_ARR(uint32_t, 4, firstDims);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(SumListCustom, SumListTiling)

static ge::graphStatus SumListTilingFunc(gert::TilingContext *context)
{
    SumListTiling tiling;
    uint32_t n = 0;
    uint32_t dims[4] = {0, 0, 0, 0};
    while (context->GetDynamicInputShape(0, n) != nullptr) {
        if (n < 4) dims[n] = context->GetDynamicInputShape(0, n)->GetOriginShape().GetDim(0);
        ++n;
    }
    tiling.set_length(context->GetDynamicInputShape(0, 0)->GetOriginShape().GetShapeSize());
    tiling.set_listSize(n);
    tiling.set_firstDims(dims);
    context->SetBlockDim(1);
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    return ge::GRAPH_SUCCESS;
}
}  // namespace optiling

namespace ge {
static graphStatus SumListShape(gert::InferShapeContext *context)
{
    *context->GetOutputShape(0) = *context->GetDynamicInputShape(0, 0);
    return GRAPH_SUCCESS;
}
static graphStatus SumListDtype(gert::InferDataTypeContext *context)
{
    context->SetOutputDataType(0, context->GetDynamicInputDataType(0, 1));
    return GRAPH_SUCCESS;
}
}  // namespace ge

namespace ops {
class SumListCustom : public OpDef {
public:
    explicit SumListCustom(const char *name) : OpDef(name)
    {
        this->Input("items").ParamType(DYNAMIC).DataType({ge::DT_FLOAT16}).Format({ge::FORMAT_ND});
        this->Output("total").ParamType(REQUIRED).DataType({ge::DT_FLOAT16}).Format({ge::FORMAT_ND});
        this->SetInferShape(ge::SumListShape).SetInferDataType(ge::SumListDtype);
        this->AICore().SetTiling(optiling::SumListTilingFunc).AddConfig("ascend310p").AddConfig("ascend910b");
    }
};
OP_ADD(SumListCustom);
}  // namespace ops
