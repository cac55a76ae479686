// AddAscendc host side: OpDef, tiling, shape and dtype inference.
// The tiling asks the platform for the vector core count and the UB size: the elements are split
// evenly over at most that many blocks, each block's share into tiles so that the kernel's three
// double-buffered queues (6 tiles) fit the UB; every tile is a whole number of 32-byte blocks.
#include <algorithm>
#include <cstdint>

#include "add_ascendc_tiling.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"

namespace optiling {
static ge::graphStatus AddTiling(gert::TilingContext *context)
{
    auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
    uint64_t ubSize = 0;
    platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ubSize);
    const uint64_t total = context->GetInputShape(0)->GetOriginShape().GetShapeSize();
    const uint32_t typeSize = context->GetInputDesc(0)->GetDataType() == ge::DT_FLOAT ? 4 : 2;
    const uint64_t align = 32 / typeSize;  // elements in one 32-byte block
    if (total == 0 || total % align != 0 || total > UINT32_MAX) {
        return ge::GRAPH_FAILED;  // the kernel copies whole 32-byte blocks only
    }
    uint64_t blocks = std::min<uint64_t>(platform.GetCoreNumAiv(), total / align);
    while (total % (blocks * align) != 0) --blocks;
    const uint64_t share = total / blocks;
    uint64_t tile = std::min<uint64_t>(ubSize / (6 * typeSize) / align * align, share);
    while (share % tile != 0) tile -= align;

    TilingData tiling;
    tiling.set_totalLength(static_cast<uint32_t>(total));
    tiling.set_tileLength(static_cast<uint32_t>(tile));
    context->SetBlockDim(static_cast<uint32_t>(blocks));
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
