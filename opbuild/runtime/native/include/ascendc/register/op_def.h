/* register/op_def.h: ops::OpDef and its builders, the IR of an Ascend C op as its op_host source
 * declares it (opbuild's clean-room host headers).
 *
 *     class AddCustom : public OpDef {
 *     public:
 *         explicit AddCustom(const char *name) : OpDef(name) {
 *             this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT16}).Format({ge::FORMAT_ND});
 *             this->Output("z").ParamType(REQUIRED).DataType({ge::DT_FLOAT16}).Format({ge::FORMAT_ND});
 *             this->Attr("alpha").AttrType(OPTIONAL).Float(1.0);
 *             this->SetInferShape(ge::InferShape).SetInferDataType(ge::InferDataType);
 *             this->AICore().SetTiling(optiling::TilingFunc).AddConfig("ascend910b");
 *         }
 *     };
 *     OP_ADD(AddCustom);
 *
 * The builders only record: Input/Output/Attr capture the file and line of their call (default
 * arguments __builtin_FILE()/__builtin_LINE()), so opbuild's describe can point at the user's
 * source. An Attr without AttrType(...) is OPTIONAL. OP_ADD constructs the op once at load time and
 * adds it to this blob's registry (opbuild_ascendc::op_registry(), header-only and hidden).
 */
#ifndef OPBUILD_ASCENDC_REGISTER_OP_DEF_H
#define OPBUILD_ASCENDC_REGISTER_OP_DEF_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "exe_graph/runtime/infer_datatype_context.h"
#include "exe_graph/runtime/infer_shape_context.h"
#include "exe_graph/runtime/tiling_context.h"
#include "graph/types.h"

namespace ops {

enum Option { IGNORE = 0, OPTIONAL = 1, REQUIRED = 2, DYNAMIC = 3, VIRTUAL = 4 };
enum class DependScope : uint32_t { ALL = 0, TILING = 1, INVALID_SCOPE };
enum class FollowType : uint32_t { ALL = 0, DTYPE = 1, FORMAT = 2, SHAPE = 3, INVALID_TYPE };

using InferShapeFunc = ge::graphStatus (*)(gert::InferShapeContext *);
using InferShapeRangeFunc = ge::graphStatus (*)(gert::InferShapeRangeContext *);
using InferDataTypeFunc = ge::graphStatus (*)(gert::InferDataTypeContext *);
using TilingFunc = ge::graphStatus (*)(gert::TilingContext *);

class OpParamDef {
public:
    explicit OpParamDef(const char *name, const char *file = "", int line = 0)
        : name_(name), file_(file), line_(line) {}
    OpParamDef &ParamType(Option type) { param_type_ = type; return *this; }
    OpParamDef &DataType(std::vector<ge::DataType> types) { dtypes_ = std::move(types); dtype_list_ = false; return *this; }
    OpParamDef &DataTypeList(std::vector<ge::DataType> types) { dtypes_ = std::move(types); dtype_list_ = true; return *this; }
    OpParamDef &Format(std::vector<ge::Format> formats) { formats_ = std::move(formats); format_list_ = false; return *this; }
    OpParamDef &FormatList(std::vector<ge::Format> formats) { formats_ = std::move(formats); format_list_ = true; return *this; }
    OpParamDef &UnknownShapeFormat(std::vector<ge::Format> formats) { unknown_shape_formats_ = std::move(formats); return *this; }
    OpParamDef &ValueDepend(Option value_depend) { value_depend_ = value_depend; return *this; }
    OpParamDef &ValueDepend(Option value_depend, DependScope scope) {
        value_depend_ = value_depend;
        depend_scope_ = scope;
        return *this;
    }
    OpParamDef &IgnoreContiguous() { ignore_contiguous_ = true; return *this; }
    OpParamDef &AutoContiguous() { auto_contiguous_ = true; return *this; }
    OpParamDef &Scalar() { scalar_ = true; return *this; }
    OpParamDef &ScalarList() { scalar_list_ = true; return *this; }
    OpParamDef &To(ge::DataType type) { to_dtype_ = type; return *this; }
    OpParamDef &To(const char *name) { to_name_ = name; return *this; }
    OpParamDef &InitValue(uint64_t value) { init_value_ = value; has_init_value_ = true; return *this; }
    OpParamDef &OutputShapeDependOnCompute() { shape_depend_on_compute_ = true; return *this; }
    OpParamDef &Follow(const char *name) { follow_ = name; return *this; }
    OpParamDef &Follow(const char *name, FollowType type) { follow_ = name; follow_type_ = type; return *this; }
    OpParamDef &Comment(const char *text) { comment_ = text; return *this; }
    OpParamDef &Version(uint32_t version) { version_ = version; return *this; }

    /* ---- read by opbuild's describe ---- */
    const std::string &OpbuildName() const { return name_; }
    Option OpbuildParamType() const { return param_type_; }
    const std::vector<ge::DataType> &OpbuildDataTypes() const { return dtypes_; }
    bool OpbuildDataTypeList() const { return dtype_list_; }
    const std::vector<ge::Format> &OpbuildFormats() const { return formats_; }
    bool OpbuildFormatList() const { return format_list_; }
    Option OpbuildValueDepend() const { return value_depend_; }
    bool OpbuildScalar() const { return scalar_ || scalar_list_; }
    const std::string &OpbuildFollow() const { return follow_; }
    const char *OpbuildFile() const { return file_; }
    int OpbuildLine() const { return line_; }

private:
    std::string name_;
    const char *file_;
    int line_;
    Option param_type_ = REQUIRED;
    std::vector<ge::DataType> dtypes_;
    bool dtype_list_ = false;
    std::vector<ge::Format> formats_;
    bool format_list_ = false;
    std::vector<ge::Format> unknown_shape_formats_;
    Option value_depend_ = IGNORE;
    DependScope depend_scope_ = DependScope::ALL;
    bool ignore_contiguous_ = false;
    bool auto_contiguous_ = false;
    bool scalar_ = false;
    bool scalar_list_ = false;
    ge::DataType to_dtype_ = ge::DT_UNDEFINED;
    std::string to_name_;
    uint64_t init_value_ = 0;
    bool has_init_value_ = false;
    bool shape_depend_on_compute_ = false;
    std::string follow_;
    FollowType follow_type_ = FollowType::ALL;
    std::string comment_;
    uint32_t version_ = 0;
};

/* An attribute: its type (`int`, `float`, `bool`, `str`, `list_int`, `list_float`, `list_bool`:
 * opbuild's spec names) and default, the default kept as JSON text ("" = none). */
class OpAttrDef {
public:
    explicit OpAttrDef(const char *name, const char *file = "", int line = 0) : name_(name), file_(file), line_(line) {}
    OpAttrDef &AttrType(Option type) { required_ = type == REQUIRED; return *this; }
    OpAttrDef &Int() { return Type("int"); }
    OpAttrDef &Int(int64_t value) { return Type("int", std::to_string(value)); }
    OpAttrDef &Float() { return Type("float"); }
    OpAttrDef &Float(float value) { return Type("float", Real(value)); }
    OpAttrDef &Bool() { return Type("bool"); }
    OpAttrDef &Bool(bool value) { return Type("bool", value ? "true" : "false"); }
    OpAttrDef &String() { return Type("str"); }
    OpAttrDef &String(const char *value) { return Type("str", Quote(value ? value : "")); }
    OpAttrDef &ListInt() { return Type("list_int"); }
    OpAttrDef &ListInt(std::vector<int64_t> value) {
        std::string s = "[";
        for (size_t i = 0; i < value.size(); ++i) s += (i ? "," : "") + std::to_string(value[i]);
        return Type("list_int", s + "]");
    }
    OpAttrDef &ListFloat() { return Type("list_float"); }
    OpAttrDef &ListFloat(std::vector<float> value) {
        std::string s = "[";
        for (size_t i = 0; i < value.size(); ++i) s += (i ? "," : "") + Real(value[i]);
        return Type("list_float", s + "]");
    }
    OpAttrDef &ListBool() { return Type("list_bool"); }
    OpAttrDef &ListBool(std::vector<bool> value) {
        std::string s = "[";
        for (size_t i = 0; i < value.size(); ++i) s += std::string(i ? "," : "") + (value[i] ? "true" : "false");
        return Type("list_bool", s + "]");
    }
    OpAttrDef &Comment(const char *text) { comment_ = text; return *this; }
    OpAttrDef &Version(uint32_t version) { version_ = version; return *this; }

    /* ---- read by opbuild's describe and the bridge ---- */
    const std::string &OpbuildName() const { return name_; }
    bool OpbuildRequired() const { return required_; }
    const std::string &OpbuildType() const { return type_; }
    const std::string &OpbuildDefault() const { return default_; }
    const char *OpbuildFile() const { return file_; }
    int OpbuildLine() const { return line_; }

    static std::string Quote(const std::string &s) {
        std::string out = "\"";
        for (unsigned char c : s) {
            if (c == '"' || c == '\\') { out += '\\'; out += static_cast<char>(c); }
            else if (c < 0x20) { char buf[8]; snprintf(buf, sizeof buf, "\\u%04x", c); out += buf; }
            else out += static_cast<char>(c);
        }
        return out + "\"";
    }

private:
    OpAttrDef &Type(const char *type, std::string def = std::string()) {
        type_ = type;
        default_ = std::move(def);
        return *this;
    }
    /* The shortest decimal that reads back as the same float; non-finite values are JSON null. */
    static std::string Real(float v) {
        if (!(v == v) || v > 3.4e38f || v < -3.4e38f) return "null";
        char buf[32];
        for (int prec = 6; prec <= 9; ++prec) {
            snprintf(buf, sizeof buf, "%.*g", prec, static_cast<double>(v));
            if (strtof(buf, nullptr) == v) break;
        }
        std::string s = buf;
        if (s.find_first_of(".eE") == std::string::npos) s += ".0";
        return s;
    }
    std::string name_;
    const char *file_;
    int line_;
    bool required_ = false;
    std::string type_;
    std::string default_;
    std::string comment_;
    uint32_t version_ = 0;
};

/* Per-SoC settings of AICore().AddConfig(soc, config): flags and, when given, the SoC's own IR
 * dtypes/formats (Input/Output here override the OpDef's for that SoC). */
class OpAICoreConfig {
public:
    OpAICoreConfig() = default;
    explicit OpAICoreConfig(const char *soc) : soc_(soc ? soc : "") {}
    OpParamDef &Input(const char *name, const char *file = __builtin_FILE(), int line = __builtin_LINE()) {
        return Find(inputs_, name, file, line);
    }
    OpParamDef &Output(const char *name, const char *file = __builtin_FILE(), int line = __builtin_LINE()) {
        return Find(outputs_, name, file, line);
    }
    OpAICoreConfig &DynamicCompileStaticFlag(bool flag) { return Flag("dynamicCompileStatic", flag); }
    OpAICoreConfig &DynamicFormatFlag(bool flag) { return Flag("dynamicFormat", flag); }
    OpAICoreConfig &DynamicRankSupportFlag(bool flag) { return Flag("dynamicRankSupport", flag); }
    OpAICoreConfig &DynamicShapeSupportFlag(bool flag) { return Flag("dynamicShapeSupport", flag); }
    OpAICoreConfig &NeedCheckSupportFlag(bool flag) { return Flag("needCheckSupport", flag); }
    OpAICoreConfig &PrecisionReduceFlag(bool flag) { return Flag("precisionReduce", flag); }
    OpAICoreConfig &ExtendCfgInfo(const char *key, const char *value) {
        extend_.emplace_back(key, value);
        return *this;
    }

    const std::deque<OpParamDef> &OpbuildInputs() const { return inputs_; }
    const std::deque<OpParamDef> &OpbuildOutputs() const { return outputs_; }
    const std::vector<std::pair<std::string, bool>> &OpbuildFlags() const { return flags_; }
    const std::vector<std::pair<std::string, std::string>> &OpbuildExtend() const { return extend_; }

private:
    static OpParamDef &Find(std::deque<OpParamDef> &list, const char *name, const char *file, int line) {
        for (OpParamDef &p : list)
            if (p.OpbuildName() == name) return p;
        list.emplace_back(name, file, line);
        return list.back();
    }
    OpAICoreConfig &Flag(const char *name, bool flag) {
        for (auto &f : flags_)
            if (f.first == name) { f.second = flag; return *this; }
        flags_.emplace_back(name, flag);
        return *this;
    }
    std::string soc_;
    std::deque<OpParamDef> inputs_;
    std::deque<OpParamDef> outputs_;
    std::vector<std::pair<std::string, bool>> flags_;
    std::vector<std::pair<std::string, std::string>> extend_;
};

class OpAICoreDef {
public:
    OpAICoreDef &SetTiling(TilingFunc func) { tiling_ = func; return *this; }
    template <typename F>
    OpAICoreDef &SetCheckSupport(F) { return *this; }  /* opbuild never asks */
    template <typename F>
    OpAICoreDef &SetOpSelectFormat(F) { return *this; }
    OpAICoreDef &AddConfig(const char *soc) {
        socs_.emplace_back(soc, nullptr);
        return *this;
    }
    OpAICoreDef &AddConfig(const char *soc, OpAICoreConfig &config) {
        socs_.emplace_back(soc, std::make_shared<OpAICoreConfig>(config));
        return *this;
    }

    TilingFunc OpbuildTiling() const { return tiling_; }
    const std::vector<std::pair<std::string, std::shared_ptr<OpAICoreConfig>>> &OpbuildSocs() const { return socs_; }

private:
    TilingFunc tiling_ = nullptr;
    std::vector<std::pair<std::string, std::shared_ptr<OpAICoreConfig>>> socs_;
};

class OpDef {
public:
    explicit OpDef(const char *type) : type_(type ? type : "") {}
    virtual ~OpDef() = default;
    OpDef(const OpDef &) = delete;
    OpDef &operator=(const OpDef &) = delete;

    OpParamDef &Input(const char *name, const char *file = __builtin_FILE(), int line = __builtin_LINE()) {
        return Find(inputs_, name, file, line);
    }
    OpParamDef &Output(const char *name, const char *file = __builtin_FILE(), int line = __builtin_LINE()) {
        return Find(outputs_, name, file, line);
    }
    OpAttrDef &Attr(const char *name, const char *file = __builtin_FILE(), int line = __builtin_LINE()) {
        for (OpAttrDef &a : attrs_)
            if (a.OpbuildName() == name) return a;
        attrs_.emplace_back(name, file, line);
        return attrs_.back();
    }
    OpDef &SetInferShape(InferShapeFunc func) { infer_shape_ = func; return *this; }
    OpDef &SetInferShapeRange(InferShapeRangeFunc func) { infer_shape_range_ = func; return *this; }
    OpDef &SetInferDataType(InferDataTypeFunc func) { infer_dtype_ = func; return *this; }
    OpAICoreDef &AICore() { return aicore_; }
    OpDef &Comment(const char *text) { comment_ = text; return *this; }

    /* ---- read by opbuild's bridge and describe ---- */
    const std::string &OpbuildType() const { return type_; }
    const std::deque<OpParamDef> &OpbuildInputs() const { return inputs_; }
    const std::deque<OpParamDef> &OpbuildOutputs() const { return outputs_; }
    const std::deque<OpAttrDef> &OpbuildAttrs() const { return attrs_; }
    InferShapeFunc OpbuildInferShape() const { return infer_shape_; }
    InferDataTypeFunc OpbuildInferDataType() const { return infer_dtype_; }
    bool OpbuildHasInferShapeRange() const { return infer_shape_range_ != nullptr; }
    const OpAICoreDef &OpbuildAICore() const { return aicore_; }

private:
    static OpParamDef &Find(std::deque<OpParamDef> &list, const char *name, const char *file, int line) {
        for (OpParamDef &p : list)
            if (p.OpbuildName() == name) return p;
        list.emplace_back(name, file, line);
        return list.back();
    }
    std::string type_;
    std::deque<OpParamDef> inputs_;   /* deques: the references the builders return stay valid */
    std::deque<OpParamDef> outputs_;
    std::deque<OpAttrDef> attrs_;
    InferShapeFunc infer_shape_ = nullptr;
    InferShapeRangeFunc infer_shape_range_ = nullptr;
    InferDataTypeFunc infer_dtype_ = nullptr;
    OpAICoreDef aicore_;
    std::string comment_;
};

}  // namespace ops

namespace opbuild_ascendc {

struct OpRegistration {
    std::unique_ptr<ops::OpDef> def;
    const char *file;
    int line;
};

/* Every OP_ADD of this blob, in load order. */
inline std::vector<OpRegistration> &op_registry() {
    static std::vector<OpRegistration> registry;
    return registry;
}

/* A failure while constructing an OpDef at load time (kept for describe to report: throwing out of
 * a static initializer would abort the host process). */
inline std::vector<std::string> &op_registry_errors() {
    static std::vector<std::string> errors;
    return errors;
}

template <typename T>
inline bool add_op(const char *type, const char *file, int line) {
    try {
        op_registry().push_back({std::unique_ptr<ops::OpDef>(new T(type)), file, line});
    } catch (const std::exception &e) {
        op_registry_errors().push_back(std::string(file) + ":" + std::to_string(line) + ": OP_ADD(" + type +
                                       "): " + e.what());
    } catch (...) {
        op_registry_errors().push_back(std::string(file) + ":" + std::to_string(line) + ": OP_ADD(" + type +
                                       "): unknown exception");
    }
    return true;
}

}  // namespace opbuild_ascendc

#define OPBUILD_OP_CAT_(a, b) a##b
#define OPBUILD_OP_CAT(a, b) OPBUILD_OP_CAT_(a, b)
#define OP_ADD(opType, ...)                                                   \
    static const bool OPBUILD_OP_CAT(g_opbuild_op_add_##opType##_, __COUNTER__) = \
        ::opbuild_ascendc::add_op<opType>(#opType, __FILE__, __LINE__)

#endif
