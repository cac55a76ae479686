/* kernel_operator_list_tensor_intf.h: ListTensorDesc / TensorDesc over CANN's GM list layout.
 *
 * A dynamic (list) input is one GM address in CANN's list layout (opbuild/abi/tensor_list.py):
 *     [0] dataPtrOffset | per tensor: dim | count << 32, dim sizes | at dataPtrOffset: count pointers
 * read here with opbuild/kernel.h's opbuild_list_count / opbuild_list_item / opbuild_list_shape.
 */
#ifndef OPBUILD_ASCENDC_KERNEL_OPERATOR_LIST_TENSOR_INTF_H
#define OPBUILD_ASCENDC_KERNEL_OPERATOR_LIST_TENSOR_INTF_H

#include "kernel_operator.h"

namespace AscendC {

template <class T>
class TensorDesc {
public:
    TensorDesc() = default;
    void SetShapeAddr(uint64_t *shapePtr) { shape_ = shapePtr; }
    uint64_t GetDim() const { return dim_; }
    uint64_t GetIndex() const { return index_; }
    uint64_t GetShape(uint32_t offset) const {
        if (shape_ == nullptr || offset >= dim_)
            ::opbuild::ascendc::fail("TensorDesc::GetShape", "dimension %u of a tensor of %llu dimensions", offset,
                                     (unsigned long long)dim_);
        return shape_[offset];
    }
    T *GetDataPtr() const { return data_; }
    GlobalTensor<T> GetDataObj() const {
        GlobalTensor<T> g;
        g.SetGlobalBuffer(data_);
        return g;
    }

private:
    friend class ListTensorDesc;
    uint64_t *shape_ = nullptr;
    uint64_t dim_ = 0, index_ = 0;
    T *data_ = nullptr;
};

class ListTensorDesc {
public:
    ListTensorDesc() = default;
    ListTensorDesc(__gm__ void *data, uint32_t length = 0xffffffff, uint32_t shapeSize = 0xffffffff) {
        Init(data, length, shapeSize);
    }
    void Init(__gm__ void *data, uint32_t length = 0xffffffff, uint32_t shapeSize = 0xffffffff) {
        base_ = reinterpret_cast<GM_ADDR>(data);
        if (base_ == nullptr) ::opbuild::ascendc::fail("ListTensorDesc", "the list address is null");
        count_ = (uint32_t)opbuild_list_count(base_);
        if (shapeSize != 0xffffffff && shapeSize != count_)
            ::opbuild::ascendc::fail("ListTensorDesc", "the list holds %u tensors, shapeSize says %u", count_, shapeSize);
        (void)length;
    }
    uint32_t GetSize() const { return count_; }
    template <class T>
    T *GetDataPtr(uint32_t index) const {
        check(index);
        return reinterpret_cast<T *>(opbuild_list_item(base_, index));
    }
    template <class T>
    void GetDesc(TensorDesc<T> &desc, uint32_t index) const {
        check(index);
        const uint64_t *dims = opbuild_list_shape(base_, index, &desc.dim_);
        desc.index_ = index;
        if (desc.shape_ != nullptr)
            for (uint64_t k = 0; k < desc.dim_; ++k) desc.shape_[k] = dims[k];
        desc.data_ = GetDataPtr<T>(index);
    }

private:
    void check(uint32_t index) const {
        if (index >= count_)
            ::opbuild::ascendc::fail("ListTensorDesc", "tensor %u of a list of %u tensors", index, count_);
    }
    GM_ADDR base_ = nullptr;
    uint32_t count_ = 0;
};

}  // namespace AscendC

#endif /* OPBUILD_ASCENDC_KERNEL_OPERATOR_LIST_TENSOR_INTF_H */
