// ReduceAscendc host side: the tiling key says which reduction path the kernel takes.
#include "register/op_def_registry.h"
#include "register/tilingdata_base.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(ReduceTiling)
TILING_DATA_FIELD_DEF(uint32_t, totalLength);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(ReduceAscendc, ReduceTiling)

static ge::graphStatus ReduceTilingFunc(gert::TilingContext *context)
{
    const uint32_t n = context->GetInputTensor(0)->GetShapeSize();
    if (context->GetInputTensor(0)->GetDataType() != ge::DT_FLOAT || n == 0 || n > 4096 || n % 8 != 0) {
        return ge::GRAPH_FAILED;
    }
    ReduceTiling tiling;
    tiling.set_totalLength(n);
    context->SetTilingKey(n <= 64 ? 1 : 2);
    context->SetBlockDim(1);
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    context->GetWorkspaceSizes(1)[0] = 0;
    return ge::GRAPH_SUCCESS;
}
}  // namespace optiling

namespace ge {
static graphStatus ReduceInferShape(gert::InferShapeContext *context)
{
    gert::Shape *z = context->GetOutputShape(0);
    *z = {8};
    return GRAPH_SUCCESS;
}
}  // namespace ge

namespace ops {
class ReduceAscendc : public OpDef {
public:
    explicit ReduceAscendc(const char *name) : OpDef(name)
    {
        this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->Output("z").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->SetInferShape(ge::ReduceInferShape);
        this->AICore().SetTiling(optiling::ReduceTilingFunc).AddConfig("ascend910b");
    }
};
OP_ADD(ReduceAscendc);
}  // namespace ops
