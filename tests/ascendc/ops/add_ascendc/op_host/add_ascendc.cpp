// AddAscendc host side: OpDef, tiling, shape and dtype inference.
// The kernel splits the elements evenly over the blocks and each block's share into tileNum * 2
// tiles (double buffering), so the tiling picks the largest block count (up to 8) and tile count
// (up to 8) for which every tile is a whole number of 32-byte blocks.
#include "add_ascendc_tiling.h"
#include "register/op_def_registry.h"

namespace optiling {
static ge::graphStatus AddTiling(gert::TilingContext *context)
{
    const uint64_t total = context->GetInputShape(0)->GetOriginShape().GetShapeSize();
    const uint32_t typeSize = context->GetInputDesc(0)->GetDataType() == ge::DT_FLOAT ? 4 : 2;
    const uint32_t perBlock32 = 32 / typeSize;  // elements in one 32-byte block
    uint32_t blocks = 8, tiles = 8;
    while (blocks > 1 && total % (uint64_t(blocks) * tiles * 2 * perBlock32) != 0) {
        if (tiles > 1) {
            tiles /= 2;
        } else {
            blocks /= 2;
            tiles = 8;
        }
    }
    while (tiles > 1 && total % (uint64_t(blocks) * tiles * 2 * perBlock32) != 0) tiles /= 2;
    if (total == 0 || total % (uint64_t(blocks) * tiles * 2 * perBlock32) != 0) {
        return ge::GRAPH_FAILED;  // the kernel handles whole 32-byte tiles only
    }
    TilingData tiling;
    tiling.set_totalLength(static_cast<uint32_t>(total));
    tiling.set_tileNum(tiles);
    context->SetBlockDim(blocks);
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    size_t *workspace = context->GetWorkspaceSizes(1);
    workspace[0] = 0;
    return ge::GRAPH_SUCCESS;
}
}  // namespace optiling

namespace ge {
static graphStatus AddInferShape(gert::InferShapeContext *context)
{
    *context->GetOutputShape(0) = *context->GetInputShape(0);
    return GRAPH_SUCCESS;
}

static graphStatus AddInferDataType(gert::InferDataTypeContext *context)
{
    context->SetOutputDataType(0, context->GetInputDataType(0));
    return GRAPH_SUCCESS;
}
}  // namespace ge

namespace ops {
class AddAscendc : public OpDef {
public:
    explicit AddAscendc(const char *name) : OpDef(name)
    {
        this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT16, ge::DT_FLOAT}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
        this->Input("y").ParamType(REQUIRED).DataType({ge::DT_FLOAT16, ge::DT_FLOAT}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
        this->Output("z").ParamType(REQUIRED).DataType({ge::DT_FLOAT16, ge::DT_FLOAT}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
        this->SetInferShape(ge::AddInferShape).SetInferDataType(ge::AddInferDataType);
        this->AICore().SetTiling(optiling::AddTiling).AddConfig("ascend910b").AddConfig("ascend310p");
    }
};
OP_ADD(AddAscendc);
}  // namespace ops
