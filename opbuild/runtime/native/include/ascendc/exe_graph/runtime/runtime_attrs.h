/* exe_graph/runtime/runtime_attrs.h: gert::RuntimeAttrs, an op's attribute values by index (the
 * order of the OpDef's Attr(...) calls), as CANN stores them: int as int64_t, float as float
 * (32-bit), bool as bool, str as a NUL-terminated char array, lists as a gert::ContinuousVector
 * of int64_t / float / bool. GetAttrPointer<T>(i) reinterprets that storage (CANN samples read an
 * int attr with GetAttrPointer<uint32_t>: the low half on a little-endian host).
 *
 * The bridge (opbuild_ascendc/host_bridge.h) fills it from opbuild's OpbuildAttrValue array with
 * the OpbuildAppend* methods. */
#ifndef OPBUILD_ASCENDC_EXE_GRAPH_RUNTIME_ATTRS_H
#define OPBUILD_ASCENDC_EXE_GRAPH_RUNTIME_ATTRS_H

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "exe_graph/runtime/continuous_vector.h"

namespace gert {

class RuntimeAttrs {
public:
    size_t GetAttrNum() const { return slots_.size(); }

    template <typename T>
    const T *GetAttrPointer(size_t index) const {
        const void *p = Raw(index);
        return static_cast<const T *>(p);
    }
    const int64_t *GetInt(size_t index) const { return GetAttrPointer<int64_t>(index); }
    const float *GetFloat(size_t index) const { return GetAttrPointer<float>(index); }
    const bool *GetBool(size_t index) const { return GetAttrPointer<bool>(index); }
    const char *GetStr(size_t index) const { return GetAttrPointer<char>(index); }
    const TypedContinuousVector<int64_t> *GetListInt(size_t index) const {
        return GetAttrPointer<TypedContinuousVector<int64_t>>(index);
    }
    const TypedContinuousVector<float> *GetListFloat(size_t index) const {
        return GetAttrPointer<TypedContinuousVector<float>>(index);
    }
    const TypedContinuousVector<bool> *GetListBool(size_t index) const {
        return GetAttrPointer<TypedContinuousVector<bool>>(index);
    }

    /* ---- filled by the bridge ---- */
    void OpbuildAppendInt(int64_t v) { Slot &s = Add(); s.scalar.i = v; }
    void OpbuildAppendFloat(float v) { Slot &s = Add(); s.scalar.f = v; }
    void OpbuildAppendBool(bool v) { Slot &s = Add(); s.scalar.b = v; }
    void OpbuildAppendStr(const char *v) {
        Slot &s = Add();
        s.str = v ? v : "";
        s.kind = Slot::kStr;
    }
    void OpbuildAppendListInt(const int64_t *v, size_t n) {
        Slot &s = Add();
        s.ints.assign(v, v + n);
        s.vec_int = TypedContinuousVector<int64_t>(s.ints.data(), n);
        s.kind = Slot::kListInt;
    }
    void OpbuildAppendListFloat(const double *v, size_t n) {
        Slot &s = Add();
        for (size_t i = 0; i < n; ++i) s.floats.push_back(static_cast<float>(v[i]));
        s.vec_float = TypedContinuousVector<float>(s.floats.data(), n);
        s.kind = Slot::kListFloat;
    }
    void OpbuildAppendListBool(const uint8_t *v, size_t n) {
        Slot &s = Add();
        for (size_t i = 0; i < n; ++i) s.bools.push_back(v[i] ? 1 : 0);
        s.vec_bool = TypedContinuousVector<bool>(s.bools.data(), n);
        s.kind = Slot::kListBool;
    }
    void OpbuildAppendAbsent() { Add().kind = Slot::kAbsent; }

private:
    struct Slot {
        enum Kind { kScalar, kStr, kListInt, kListFloat, kListBool, kAbsent } kind = kScalar;
        union {
            int64_t i;
            float f;
            bool b;
        } scalar{};
        std::string str;
        std::vector<int64_t> ints;
        std::vector<float> floats;
        std::vector<uint8_t> bools;  // bool storage: 0 / 1 bytes
        TypedContinuousVector<int64_t> vec_int;
        TypedContinuousVector<float> vec_float;
        TypedContinuousVector<bool> vec_bool;
    };
    Slot &Add() {
        slots_.emplace_back();
        return slots_.back();
    }
    const void *Raw(size_t index) const {
        if (index >= slots_.size()) return nullptr;
        const Slot &s = slots_[index];
        switch (s.kind) {
            case Slot::kScalar: return &s.scalar;
            case Slot::kStr: return s.str.c_str();
            case Slot::kListInt: return &s.vec_int;
            case Slot::kListFloat: return &s.vec_float;
            case Slot::kListBool: return &s.vec_bool;
            default: return nullptr;
        }
    }
    std::deque<Slot> slots_;  // a deque: slots (and the vectors' data pointers) never move
};

}  // namespace gert

#endif
