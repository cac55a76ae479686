// In-house lookalike of an op whose InferShape returns success without setting its output's shape
// (as one of the public unaligned-reduce samples does): the bridge reports it instead of handing
// back a scalar shape that a kernel would overflow.
#include "register/op_def_registry.h"
#include "register/tilingdata_base.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(NoShapeTiling)
TILING_DATA_FIELD_DEF(uint32_t, n);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(NoShapeCustom, NoShapeTiling)

static ge::graphStatus NoShapeTilingFunc(gert::TilingContext *context)
{
    context->SetBlockDim(1);
    context->GetWorkspaceSizes(1)[0] = 0;
    return ge::GRAPH_SUCCESS;
}
}  // namespace optiling

namespace ge {
static graphStatus NoShapeInferShape(gert::InferShapeContext *context)
{
    const gert::Shape *x = context->GetInputShape(0);
    (void)x;
    return GRAPH_SUCCESS;
}
}  // namespace ge

namespace ops {
class NoShapeCustom : public OpDef {
public:
    explicit NoShapeCustom(const char *name) : OpDef(name)
    {
        this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->Output("y").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->SetInferShape(ge::NoShapeInferShape);
        this->AICore().SetTiling(optiling::NoShapeTilingFunc).AddConfig("ascend910b");
    }
};
OP_ADD(NoShapeCustom);
}  // namespace ops
