/* register/tilingdata_base.h: the Ascend C tiling-data class macros (opbuild's clean-room host
 * headers for op_host sources).
 *
 *     BEGIN_TILING_DATA_DEF(TilingData)
 *     TILING_DATA_FIELD_DEF(uint32_t, totalLength);
 *     TILING_DATA_FIELD_DEF_ARR(uint32_t, 4, lengths);
 *     TILING_DATA_FIELD_DEF_STRUCT(OtherClass, inner);
 *     END_TILING_DATA_DEF;
 *     REGISTER_TILING_DATA_CLASS(AddCustom, TilingData)
 *
 * Each class is a plain C++ class whose data members are the fields in declaration order, so
 * the layout is CANN's: every field at its natural alignment (a struct field at 8), the total
 * rounded up to 8 bytes (`alignas(8)`): three uint32_t fields take 16 bytes. set_<f>/get_<f>
 * set and read a field (an array: set copies `count` items, get returns a pointer), GetDataSize()
 * is the class's size, SaveToBuffer(buf, capacity) copies it (a std::runtime_error when it does
 * not fit, which the bridge turns into a failed tiling call).
 *
 * Fields are also listed at compile time (a member template specialised once per field, numbered
 * with __COUNTER__), so opbuild_ascendc::class_info<T>() gives name, C type, offset, size and count
 * of every field: what the bridge's describe() reports and the kernel-side header is made from.
 * REGISTER_TILING_DATA_CLASS(name, Class) records the class under `name`: the op type for the
 * op's default class, `<OpType>_<tiling key>` for a key's own class, any other name for a class
 * used as a struct field. Registries are header-only (function-local statics): each op's host
 * blob has its own once its hidden symbols are localized (see opbuild/ascendc/host.py).
 */
#ifndef OPBUILD_ASCENDC_REGISTER_TILINGDATA_BASE_H
#define OPBUILD_ASCENDC_REGISTER_TILINGDATA_BASE_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace opbuild_ascendc {

struct ClassInfo;

struct FieldInfo {
    const char *name;
    const char *type;       /* the C type as written (`uint32_t`, a struct class's name) */
    size_t offset;
    size_t size;            /* bytes of the whole field (an array: all items) */
    size_t count;           /* items of an array field, 0 for a scalar or struct field */
    const ClassInfo &(*nested)();  /* a struct field's class, nullptr otherwise */
};

using FieldList = std::vector<FieldInfo>;

struct ClassInfo {
    const char *name;
    size_t size;
    FieldList fields;
};

template <typename T>
inline const ClassInfo &class_info() {
    static const ClassInfo info = [] {
        ClassInfo c{T::OpbuildClassName(), sizeof(T), {}};
        T::OpbuildFields(c.fields);
        return c;
    }();
    return info;
}

struct TilingRegistration {
    std::string name;  /* the first argument of REGISTER_TILING_DATA_CLASS */
    const ClassInfo &(*info)();
};

inline std::vector<TilingRegistration> &tiling_registry() {
    static std::vector<TilingRegistration> registry;
    return registry;
}

inline bool register_tiling_class(const char *name, const ClassInfo &(*info)()) {
    tiling_registry().push_back({name, info});
    return true;
}

inline void save_tiling(const void *self, size_t size, const char *cls, void *data, size_t capacity) {
    if (data == nullptr || size > capacity)
        throw std::runtime_error(std::string("tiling data class ") + cls + " of " + std::to_string(size) +
                                 " bytes does not fit the tiling buffer of " + std::to_string(capacity) +
                                 " bytes");
    std::memcpy(data, self, size);
}

}  // namespace opbuild_ascendc

#define OPBUILD_TD_CAT_(a, b) a##b
#define OPBUILD_TD_CAT(a, b) OPBUILD_TD_CAT_(a, b)

#define BEGIN_TILING_DATA_DEF(class_name)                                                            \
    class alignas(8) class_name {                                                                    \
    public:                                                                                          \
        using OpbuildSelf = class_name;                                                              \
        static const char *OpbuildClassName() { return #class_name; }                                \
        static constexpr int kOpbuildFirst = __COUNTER__ + 1;                                        \
        template <int I, int D = 0>                                                                  \
        struct OpbuildField {                                                                        \
            static void Add(::opbuild_ascendc::FieldList &) {}                                       \
        };                                                                                           \
        static void OpbuildFields(::opbuild_ascendc::FieldList &l) { OpbuildField<0>::Add(l); }      \
        size_t GetDataSize() const { return sizeof(OpbuildSelf); }                                   \
        void SaveToBuffer(void *data, size_t capacity) const {                                       \
            ::opbuild_ascendc::save_tiling(this, sizeof(OpbuildSelf), #class_name, data, capacity);  \
        }

#define OPBUILD_TD_ENTRY_(n, fname, ftype, fsize, fcount, fnested)                                   \
    template <int D>                                                                                 \
    struct OpbuildField<(n) - kOpbuildFirst, D> {                                                    \
        static void Add(::opbuild_ascendc::FieldList &l) {                                           \
            l.push_back({#fname, ftype, offsetof(OpbuildSelf, fname), fsize, fcount, fnested});      \
            OpbuildField<(n) - kOpbuildFirst + 1>::Add(l);                                           \
        }                                                                                            \
    };

#define OPBUILD_TD_FIELD_(n, type, name)                                                             \
    type name{};                                                                                     \
    void set_##name(type value) { name = value; }                                                    \
    type get_##name() const { return name; }                                                         \
    OPBUILD_TD_ENTRY_(n, name, #type, sizeof(type), 0, nullptr)
#define OPBUILD_TD_FIELD(n, type, name) OPBUILD_TD_FIELD_(n, type, name)
#define TILING_DATA_FIELD_DEF(data_type, field_name) OPBUILD_TD_FIELD(__COUNTER__, data_type, field_name)

#define OPBUILD_TD_ARR_(n, type, count, name)                                                        \
    type name[count]{};                                                                              \
    void set_##name(const type *value) { std::memcpy(name, value, sizeof(name)); }                   \
    type *get_##name() { return name; }                                                              \
    OPBUILD_TD_ENTRY_(n, name, #type, sizeof(type) * (count), (count), nullptr)
#define OPBUILD_TD_ARR(n, type, count, name) OPBUILD_TD_ARR_(n, type, count, name)
#define TILING_DATA_FIELD_DEF_ARR(arr_type, arr_size, field_name) \
    OPBUILD_TD_ARR(__COUNTER__, arr_type, arr_size, field_name)

#define OPBUILD_TD_STRUCT_(n, type, name)                                                            \
    type name{};                                                                                     \
    void set_##name(const type &value) { name = value; }                                             \
    type &get_##name() { return name; }                                                              \
    OPBUILD_TD_ENTRY_(n, name, #type, sizeof(type), 0, &::opbuild_ascendc::class_info<type>)
#define OPBUILD_TD_STRUCT(n, type, name) OPBUILD_TD_STRUCT_(n, type, name)
#define TILING_DATA_FIELD_DEF_STRUCT(struct_type, field_name) \
    OPBUILD_TD_STRUCT(__COUNTER__, struct_type, field_name)

#define END_TILING_DATA_DEF }

#define REGISTER_TILING_DATA_CLASS(op_type, class_name)                                             \
    static const bool OPBUILD_TD_CAT(g_opbuild_tiling_##op_type##_##class_name##_, __COUNTER__) =       \
        ::opbuild_ascendc::register_tiling_class(#op_type, &::opbuild_ascendc::class_info<class_name>);

#endif
