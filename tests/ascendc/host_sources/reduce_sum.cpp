// In-house lookalike of a reduction op choosing a tiling key from the size and dtype; with a
// nested struct field, a key's own class and attributes of every type.
#include "register/op_def_registry.h"
#include "register/tilingdata_base.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(ReduceShapeInfo)
TILING_DATA_FIELD_DEF(uint16_t, rank);
TILING_DATA_FIELD_DEF(uint64_t, elements);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(ReduceSumCustomShapeInfo, ReduceShapeInfo)

BEGIN_TILING_DATA_DEF(TilingData)
TILING_DATA_FIELD_DEF(uint32_t, totalLength);
TILING_DATA_FIELD_DEF_STRUCT(ReduceShapeInfo, shape);
TILING_DATA_FIELD_DEF(uint8_t, mode);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(ReduceSumCustom, TilingData)

BEGIN_TILING_DATA_DEF(TilingDataBig)
TILING_DATA_FIELD_DEF(uint64_t, totalLength);
TILING_DATA_FIELD_DEF(int32_t, rounds);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(ReduceSumCustom_3, TilingDataBig)

constexpr uint32_t SMALL_HALF = 128;
constexpr uint32_t SMALL_FLOAT = 64;

static ge::graphStatus ReduceTiling(gert::TilingContext *context)
{
    const uint32_t total = context->GetInputShape(0)->GetOriginShape().GetShapeSize();
    const auto dtype = context->GetInputTensor(0)->GetDataType();
    const gert::RuntimeAttrs *attrs = context->GetAttrs();
    const int64_t *rounds = attrs->GetInt(0);
    const bool *fast = attrs->GetBool(2);
    const char *mode = attrs->GetStr(3);
    const gert::TypedContinuousVector<int64_t> *axes = attrs->GetListInt(4);
    if ((dtype == ge::DT_FLOAT16 && total <= SMALL_HALF) || (dtype == ge::DT_FLOAT && total <= SMALL_FLOAT)) {
        context->SetTilingKey(1);
    } else if (total <= 4096) {
        context->SetTilingKey(2);
    } else {
        context->SetTilingKey(3);
        TilingDataBig big;
        big.set_totalLength(total);
        big.set_rounds(static_cast<int32_t>(*rounds));
        big.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
        context->GetRawTilingData()->SetDataSize(big.GetDataSize());
        context->SetBlockDim(1);
        return ge::GRAPH_SUCCESS;
    }
    TilingData tiling;
    tiling.set_totalLength(total);
    tiling.shape.set_rank(static_cast<uint16_t>(context->GetInputShape(0)->GetOriginShape().GetDimNum()));
    tiling.shape.set_elements(total + axes->GetSize() * 1000);
    tiling.set_mode(static_cast<uint8_t>((*fast ? 10 : 0) + (mode[0] == 'm' ? 1 : 2)));
    context->SetBlockDim(1);
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    return ge::GRAPH_SUCCESS;
}
}  // namespace optiling

namespace ge {
static graphStatus ReduceShape(gert::InferShapeContext *context)
{
    const gert::TypedContinuousVector<int64_t> *axes = context->GetAttrs()->GetListInt(4);
    gert::Shape *out = context->GetOutputShape(0);
    *out = {static_cast<int64_t>(axes->GetSize()), 32};
    return GRAPH_SUCCESS;
}
static graphStatus ReduceDtype(gert::InferDataTypeContext *context)
{
    context->SetOutputDataType(0, ge::DT_FLOAT);
    return GRAPH_SUCCESS;
}
}  // namespace ge

namespace ops {
class ReduceSumCustom : public OpDef {
public:
    explicit ReduceSumCustom(const char *name) : OpDef(name)
    {
        this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT16, ge::DT_FLOAT}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
        this->Input("bias").ParamType(OPTIONAL).DataType({ge::DT_FLOAT, ge::DT_FLOAT}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
        this->Output("z").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
        this->Attr("rounds").AttrType(REQUIRED).Int();
        this->Attr("scale").AttrType(OPTIONAL).Float(1.5);
        this->Attr("fast").Bool(true);
        this->Attr("mode").AttrType(OPTIONAL).String("mean");
        this->Attr("axes").AttrType(OPTIONAL).ListInt({0, -1});
        this->Attr("weights").AttrType(OPTIONAL).ListFloat({0.5, 2.0});
        this->Attr("flags").AttrType(OPTIONAL).ListBool({true, false});
        this->SetInferShape(ge::ReduceShape).SetInferDataType(ge::ReduceDtype);
        this->AICore().SetTiling(optiling::ReduceTiling).AddConfig("ascend910b");
    }
};
OP_ADD(ReduceSumCustom);
}  // namespace ops
