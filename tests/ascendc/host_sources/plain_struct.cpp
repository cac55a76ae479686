// In-house lookalike of an op whose tiling writes a plain struct with GetTilingData<T>(), reads
// an int attr declared without AttrType, an optional input, and has a per-SoC config.
#include "plain_struct_tiling.h"
#include "register/op_def_registry.h"

namespace optiling {
static ge::graphStatus PlainTiling(gert::TilingContext *context)
{
    const int64_t *caseId = context->GetAttrs()->GetInt(0);
    context->SetTilingKey(static_cast<uint64_t>(*caseId));
    context->SetBlockDim(context->GetOptionalInputShape(1) == nullptr ? 2 : 3);
    PlainTilingData *tiling = context->GetTilingData<PlainTilingData>();
    tiling->loops = 3U;
    tiling->dtypeSize = ge::GetSizeByDataType(context->GetInputDesc(0)->GetDataType());
    tiling->caseId = *caseId;
    context->GetWorkspaceSizes(1)[0] = 0;
    return ge::GRAPH_SUCCESS;
}
}  // namespace optiling

namespace ops {
class PlainStructCustom : public OpDef {
public:
    explicit PlainStructCustom(const char *name) : OpDef(name)
    {
        this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_INT32}).FormatList({ge::FORMAT_ND});
        this->Input("y").ParamType(OPTIONAL).DataTypeList({ge::DT_FLOAT}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
        this->Output("z").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_INT32}).Format({ge::FORMAT_ND, ge::FORMAT_NCHW});
        this->Attr("case_id").Int(1);
        OpAICoreConfig config;
        config.Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        config.DynamicShapeSupportFlag(true).PrecisionReduceFlag(false);
        this->AICore().SetTiling(optiling::PlainTiling).AddConfig("ascend910b").AddConfig("ascend310p", config);
    }
};
OP_ADD(PlainStructCustom);
}  // namespace ops
