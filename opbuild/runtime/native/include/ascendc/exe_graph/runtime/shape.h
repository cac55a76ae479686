/* exe_graph/runtime/shape.h: gert::Shape, a tensor shape of at most kMaxDimNum dims (opbuild's
 * clean-room host headers for Ascend C op_host sources). */
#ifndef OPBUILD_ASCENDC_EXE_GRAPH_SHAPE_H
#define OPBUILD_ASCENDC_EXE_GRAPH_SHAPE_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>

namespace gert {

class Shape {
public:
    static constexpr size_t kMaxDimNum = 25;
    static constexpr int64_t kInvalidDimValue = INT64_MIN;

    Shape() : dim_num_(0), dims_{} {}
    Shape(std::initializer_list<int64_t> dims) : dim_num_(0), dims_{} {
        for (int64_t d : dims) {
            if (dim_num_ == kMaxDimNum) break;
            dims_[dim_num_++] = d;
        }
    }

    size_t GetDimNum() const { return dim_num_; }
    void SetDimNum(size_t n) { dim_num_ = n > kMaxDimNum ? kMaxDimNum : n; }
    int64_t GetDim(size_t i) const { return i < dim_num_ ? dims_[i] : kInvalidDimValue; }
    void SetDim(size_t i, int64_t v) {
        if (i < kMaxDimNum) dims_[i] = v;
    }
    Shape &AppendDim(int64_t v) {
        if (dim_num_ < kMaxDimNum) dims_[dim_num_++] = v;
        return *this;
    }
    bool IsScalar() const { return dim_num_ == 0; }
    void SetScalar() { dim_num_ = 0; }
    /* Elements: 1 for a scalar; -1 when a dim is unknown (negative) or the product overflows. */
    int64_t GetShapeSize() const {
        int64_t n = 1;
        for (size_t i = 0; i < dim_num_; ++i) {
            if (dims_[i] < 0) return -1;
            if (__builtin_mul_overflow(n, dims_[i], &n)) return -1;
        }
        return n;
    }
    const int64_t &operator[](size_t i) const { return dims_[i]; }
    int64_t &operator[](size_t i) { return dims_[i]; }
    bool operator==(const Shape &o) const {
        if (dim_num_ != o.dim_num_) return false;
        for (size_t i = 0; i < dim_num_; ++i)
            if (dims_[i] != o.dims_[i]) return false;
        return true;
    }
    bool operator!=(const Shape &o) const { return !(*this == o); }

private:
    size_t dim_num_;
    int64_t dims_[kMaxDimNum];
};

}  // namespace gert

#endif
