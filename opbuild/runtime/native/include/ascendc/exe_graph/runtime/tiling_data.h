/* exe_graph/runtime/tiling_data.h: gert::TilingData, the raw tiling-data buffer of a tiling call
 * (opbuild's TilingContext.tiling_data / tiling_data_capacity; SetDataSize sets the bytes the
 * bridge reports as tiling_data_size). */
#ifndef OPBUILD_ASCENDC_EXE_GRAPH_TILING_DATA_H
#define OPBUILD_ASCENDC_EXE_GRAPH_TILING_DATA_H

#include <cstddef>
#include <cstring>

#include "graph/ge_error_codes.h"

namespace gert {

class TilingData {
public:
    TilingData() = default;
    TilingData(void *data, size_t capacity) : data_(data), capacity_(capacity) {}
    void *GetData() { return data_; }
    const void *GetData() const { return data_; }
    size_t GetCapacity() const { return capacity_; }
    size_t GetDataSize() const { return data_size_; }
    void SetDataSize(size_t size) { data_size_ = size; }
    /* Append a value's bytes after the current data (CANN's `*raw << value` style). */
    template <typename T>
    ge::graphStatus Append(const T &value) {
        if (data_ == nullptr || data_size_ + sizeof(T) > capacity_) return ge::GRAPH_FAILED;
        std::memcpy(static_cast<char *>(data_) + data_size_, &value, sizeof(T));
        data_size_ += sizeof(T);
        return ge::GRAPH_SUCCESS;
    }
    template <typename T>
    TilingData &operator<<(const T &value) {
        Append(value);
        return *this;
    }

private:
    void *data_ = nullptr;
    size_t capacity_ = 0;
    size_t data_size_ = 0;
};

}  // namespace gert

#endif
