/* exe_graph/runtime/tiling_context.h: gert::TilingContext, what an Ascend C tiling function
 * (`ge::graphStatus TilingFunc(gert::TilingContext *)`) reads and writes.
 *
 * opbuild's bridge (opbuild_ascendc/host_bridge.h) builds one from the C TilingContext of
 * opbuild/tiling.h: shapes, dtypes and formats of the inputs and outputs, the attributes in the
 * OpDef's order, the platform (core_num, ub_size, soc_version) and the raw tiling-data buffer;
 * after the call it copies back block dim, tiling key, workspace (the sum of the
 * GetWorkspaceSizes entries) and the tiling-data size. */
#ifndef OPBUILD_ASCENDC_EXE_GRAPH_TILING_CONTEXT_H
#define OPBUILD_ASCENDC_EXE_GRAPH_TILING_CONTEXT_H

#include <cstring>
#include <vector>

#include "exe_graph/runtime/runtime_attrs.h"
#include "exe_graph/runtime/tiling_data.h"
#include "graph/ge_error_codes.h"
#include "opbuild_ascendc/host_io.h"
#include "platform/platform_infos_def.h"

namespace gert {

class TilingContext {
public:
    const StorageShape *GetInputShape(size_t index) const { return Shape(inputs_.Flat(index)); }
    const Tensor *GetInputTensor(size_t index) const { return inputs_.Flat(index); }
    const CompileTimeTensorDesc *GetInputDesc(size_t index) const { return inputs_.Desc(index); }
    const StorageShape *GetOptionalInputShape(size_t ir_index) const { return Shape(inputs_.Ir(ir_index, 0)); }
    const Tensor *GetOptionalInputTensor(size_t ir_index) const { return inputs_.Ir(ir_index, 0); }
    const CompileTimeTensorDesc *GetOptionalInputDesc(size_t ir_index) const {
        return inputs_.Desc(inputs_.IrFlat(ir_index, 0));
    }
    const StorageShape *GetDynamicInputShape(size_t ir_index, size_t relative_index) const {
        return Shape(inputs_.Ir(ir_index, relative_index));
    }
    const Tensor *GetDynamicInputTensor(size_t ir_index, size_t relative_index) const {
        return inputs_.Ir(ir_index, relative_index);
    }
    const CompileTimeTensorDesc *GetDynamicInputDesc(size_t ir_index, size_t relative_index) const {
        return inputs_.Desc(inputs_.IrFlat(ir_index, relative_index));
    }
    const StorageShape *GetOutputShape(size_t index) const { return Shape(outputs_.Flat(index)); }
    const CompileTimeTensorDesc *GetOutputDesc(size_t index) const { return outputs_.Desc(index); }
    size_t GetComputeNodeInputNum() const { return inputs_.Num(); }
    size_t GetComputeNodeOutputNum() const { return outputs_.Num(); }
    const RuntimeAttrs *GetAttrs() const { return &attrs_; }
    fe::PlatFormInfos *GetPlatformInfo() { return &platform_; }
    const char *GetNodeName() const { return node_.name.c_str(); }
    const char *GetNodeType() const { return node_.type.c_str(); }

    ge::graphStatus SetBlockDim(uint32_t block_dim) {
        block_dim_ = block_dim;
        return ge::GRAPH_SUCCESS;
    }
    uint32_t GetBlockDim() const { return block_dim_; }
    ge::graphStatus SetTilingKey(uint64_t key) {
        tiling_key_ = key;
        return ge::GRAPH_SUCCESS;
    }
    uint64_t GetTilingKey() const { return tiling_key_; }
    ge::graphStatus SetScheduleMode(uint32_t mode) {
        schedule_mode_ = mode;
        return ge::GRAPH_SUCCESS;
    }
    uint32_t GetScheduleMode() const { return schedule_mode_; }
    ge::graphStatus SetNeedAtomic(bool atomic) {
        need_atomic_ = atomic;
        return ge::GRAPH_SUCCESS;
    }
    bool NeedAtomic() const { return need_atomic_; }
    int32_t GetDeterministic() const { return deterministic_; }

    TilingData *GetRawTilingData() { return &raw_; }
    /* The tiling-data buffer as a T (zeroed on first use); nullptr when T does not fit. The
     * bridge reports at least sizeof(T) bytes of tiling data. */
    template <typename T>
    T *GetTilingData() {
        if (raw_.GetData() == nullptr || sizeof(T) > raw_.GetCapacity()) return nullptr;
        if (typed_size_ < sizeof(T)) {
            std::memset(static_cast<char *>(raw_.GetData()) + typed_size_, 0, sizeof(T) - typed_size_);
            typed_size_ = sizeof(T);
        }
        return static_cast<T *>(raw_.GetData());
    }
    /* `num` workspace sizes (bytes), zeroed; the op's workspace is their sum. */
    size_t *GetWorkspaceSizes(size_t num) {
        if (workspaces_.size() < num) workspaces_.resize(num, 0);
        return workspaces_.data();
    }
    size_t GetWorkspaceNum() const { return workspaces_.size(); }

    /* ---- the bridge's side ---- */
    opbuild_ascendc::IoSide &OpbuildInputs() { return inputs_; }
    opbuild_ascendc::IoSide &OpbuildOutputs() { return outputs_; }
    RuntimeAttrs &OpbuildAttrs() { return attrs_; }
    opbuild_ascendc::NodeInfo &OpbuildNode() { return node_; }
    void OpbuildSetPlatform(const fe::PlatFormInfos &p) { platform_ = p; }
    void OpbuildSetTilingBuffer(void *data, size_t capacity) { raw_ = TilingData(data, capacity); }
    void OpbuildSetDeterministic(int32_t d) { deterministic_ = d; }
    size_t OpbuildTypedSize() const { return typed_size_; }
    uint64_t OpbuildWorkspaceTotal() const {
        uint64_t total = 0;
        for (size_t w : workspaces_) total += w;
        return total;
    }

private:
    static const StorageShape *Shape(const Tensor *t) { return t ? &t->GetShape() : nullptr; }
    opbuild_ascendc::IoSide inputs_;
    opbuild_ascendc::IoSide outputs_;
    RuntimeAttrs attrs_;
    fe::PlatFormInfos platform_;
    opbuild_ascendc::NodeInfo node_;
    TilingData raw_;
    size_t typed_size_ = 0;
    std::vector<size_t> workspaces_;
    uint32_t block_dim_ = 0;
    uint64_t tiling_key_ = 0;
    uint32_t schedule_mode_ = 0;
    bool need_atomic_ = false;
    int32_t deterministic_ = 0;
};

}  // namespace gert

#endif
