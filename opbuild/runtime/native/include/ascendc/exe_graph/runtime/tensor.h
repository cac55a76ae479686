/* exe_graph/runtime/tensor.h: gert::Tensor (shape, format and dtype of a runtime tensor) and
 * gert::CompileTimeTensorDesc (dtype and formats only).
 *
 * opbuild's tiling context carries no tensor data, so GetAddr()/GetData<T>() are null: a tiling
 * function that reads a value-depend input's data sees nullptr (ValueDepend is recorded by
 * describe, not served). */
#ifndef OPBUILD_ASCENDC_EXE_GRAPH_TENSOR_H
#define OPBUILD_ASCENDC_EXE_GRAPH_TENSOR_H

#include "exe_graph/runtime/storage_format.h"
#include "exe_graph/runtime/storage_shape.h"

namespace gert {

class CompileTimeTensorDesc {
public:
    CompileTimeTensorDesc() = default;
    CompileTimeTensorDesc(ge::DataType dtype, ge::Format format) : dtype_(dtype), format_(format, format) {}
    ge::DataType GetDataType() const { return dtype_; }
    ge::Format GetOriginFormat() const { return format_.GetOriginFormat(); }
    ge::Format GetStorageFormat() const { return format_.GetStorageFormat(); }
    const StorageFormat &GetFormat() const { return format_; }
    void SetDataType(ge::DataType dt) { dtype_ = dt; }

private:
    ge::DataType dtype_ = ge::DT_UNDEFINED;
    StorageFormat format_;
};

class Tensor {
public:
    Tensor() = default;
    Tensor(const StorageShape &shape, ge::DataType dtype, ge::Format format)
        : shape_(shape), dtype_(dtype), format_(format, format) {}
    ge::DataType GetDataType() const { return dtype_; }
    void SetDataType(ge::DataType dt) { dtype_ = dt; }
    int64_t GetShapeSize() const { return shape_.GetStorageShape().GetShapeSize(); }
    const Shape &GetOriginShape() const { return shape_.GetOriginShape(); }
    const Shape &GetStorageShape() const { return shape_.GetStorageShape(); }
    const StorageShape &GetShape() const { return shape_; }
    StorageShape &MutableShape() { return shape_; }
    const StorageFormat &GetFormat() const { return format_; }
    ge::Format GetOriginFormat() const { return format_.GetOriginFormat(); }
    ge::Format GetStorageFormat() const { return format_.GetStorageFormat(); }
    const void *GetAddr() const { return nullptr; }
    template <typename T>
    const T *GetData() const { return nullptr; }

private:
    StorageShape shape_;
    ge::DataType dtype_ = ge::DT_UNDEFINED;
    StorageFormat format_;
};

}  // namespace gert

#endif
