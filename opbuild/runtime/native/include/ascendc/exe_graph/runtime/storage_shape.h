/* exe_graph/runtime/storage_shape.h: gert::StorageShape, a tensor's origin and storage shapes
 * (equal for the ND/NCHW/NHWC tensors opbuild runs). */
#ifndef OPBUILD_ASCENDC_EXE_GRAPH_STORAGE_SHAPE_H
#define OPBUILD_ASCENDC_EXE_GRAPH_STORAGE_SHAPE_H

#include "exe_graph/runtime/shape.h"

namespace gert {

class StorageShape {
public:
    StorageShape() = default;
    StorageShape(std::initializer_list<int64_t> origin, std::initializer_list<int64_t> storage)
        : origin_shape_(origin), storage_shape_(storage) {}
    const Shape &GetOriginShape() const { return origin_shape_; }
    const Shape &GetStorageShape() const { return storage_shape_; }
    Shape &MutableOriginShape() { return origin_shape_; }
    Shape &MutableStorageShape() { return storage_shape_; }
    bool operator==(const StorageShape &o) const {
        return origin_shape_ == o.origin_shape_ && storage_shape_ == o.storage_shape_;
    }
    bool operator!=(const StorageShape &o) const { return !(*this == o); }

private:
    Shape origin_shape_;
    Shape storage_shape_;
};

}  // namespace gert

#endif
