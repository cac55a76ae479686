/* exe_graph/runtime/continuous_vector.h: gert::ContinuousVector, a list attribute's items (what
 * RuntimeAttrs::GetListInt/GetListFloat/GetListBool return). */
#ifndef OPBUILD_ASCENDC_EXE_GRAPH_CONTINUOUS_VECTOR_H
#define OPBUILD_ASCENDC_EXE_GRAPH_CONTINUOUS_VECTOR_H

#include <cstddef>

namespace gert {

class ContinuousVector {
public:
    ContinuousVector() = default;
    ContinuousVector(const void *data, size_t size) : data_(data), size_(size), capacity_(size) {}
    size_t GetSize() const { return size_; }
    size_t GetCapacity() const { return capacity_; }
    const void *GetData() const { return data_; }

private:
    const void *data_ = nullptr;
    size_t size_ = 0;
    size_t capacity_ = 0;
};

template <typename T>
class TypedContinuousVector : public ContinuousVector {
public:
    using ContinuousVector::ContinuousVector;
    const T *GetData() const { return static_cast<const T *>(ContinuousVector::GetData()); }
};

}  // namespace gert

#endif
