/* opbuild_ascendc/host_io.h: the tensors one side (inputs or outputs) of a gert context holds.
 *
 * Instances are flat, in IR order, as opbuild's TilingContext lays them out (IR parameter i owns
 * instances start[i] .. start[i] + count[i]); gert's GetInputShape(index) takes a flat instance
 * index (an absent optional input takes none), GetOptionalInputShape / GetDynamicInputShape take
 * the IR index. Filled by opbuild_ascendc/host_bridge.h. */
#ifndef OPBUILD_ASCENDC_HOST_IO_H
#define OPBUILD_ASCENDC_HOST_IO_H

#include <cstdint>
#include <string>
#include <vector>

#include "exe_graph/runtime/tensor.h"

namespace opbuild_ascendc {

struct IoSide {
    std::vector<gert::Tensor> tensors;
    std::vector<gert::CompileTimeTensorDesc> descs;
    std::vector<uint32_t> ir_start;
    std::vector<uint32_t> ir_count;

    size_t Num() const { return tensors.size(); }
    gert::Tensor *Flat(size_t index) { return index < tensors.size() ? &tensors[index] : nullptr; }
    const gert::Tensor *Flat(size_t index) const { return index < tensors.size() ? &tensors[index] : nullptr; }
    const gert::CompileTimeTensorDesc *Desc(size_t index) const {
        return index < descs.size() ? &descs[index] : nullptr;
    }
    /* Instance k of IR parameter ir; nullptr when absent. */
    size_t IrFlat(size_t ir, size_t k) const {
        if (ir >= ir_start.size() || k >= ir_count[ir]) return static_cast<size_t>(-1);
        return ir_start[ir] + k;
    }
    const gert::Tensor *Ir(size_t ir, size_t k) const { return Flat(IrFlat(ir, k)); }
    gert::Tensor *Ir(size_t ir, size_t k) { return Flat(IrFlat(ir, k)); }
    void Add(const gert::Tensor &t) {
        tensors.push_back(t);
        descs.emplace_back(t.GetDataType(), t.GetStorageFormat());
    }
};

struct NodeInfo {
    std::string name;
    std::string type;
};

}  // namespace opbuild_ascendc

#endif
