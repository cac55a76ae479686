/* opbuild_ascendc/host_bridge.h: an Ascend C op_host source's OpDef, tiling and infer functions
 * behind opbuild's C ABI (opbuild/tiling.h, opbuild/infer.h) -- the implementation.
 *
 * An op's host blob is its op_host objects, one generated exports TU per op
 * (opbuild_ascendc/host_exports.h: `OPBUILD_ASCENDC_HOST_EXPORTS(add_custom, "AddCustom")`, a few
 * lines that compile in a blink) and the bridge core, the same object for every op of a build,
 * compiled once from a TU of two lines:
 *
 *     #include "opbuild_ascendc/host_bridge.h"
 *     OPBUILD_ASCENDC_HOST_CORE()
 *
 * The core defines opbuild_ascendc_host_{tiling,infer_shape,infer_dtype,describe}, which the
 * exports call with the op type:
 *
 *   tiling(ctx, op_type)
 *       opbuild's tiling function: runs the tiling function the OpDef op_type set with
 *       AICore().SetTiling over a gert::TilingContext made from ctx (inputs and outputs, attributes
 *       by index in the OpDef's Attr order, platform from core_num/ub_size/soc_version, raw tiling
 *       data = ctx->tiling_data / tiling_data_capacity, zeroed first) and writes back block_dim,
 *       tiling_key, workspace_size (the sum of the GetWorkspaceSizes entries) and tiling_data_size
 *       (GetRawTilingData()->GetDataSize(), or sizeof(T) of GetTilingData<T>() when larger).
 *   infer_shape(ctx, op_type, output_index, dims, dim_num)
 *       an OpbuildInferShapeFunc: runs the OpDef's InferShape (one output tensor per IR output)
 *       and returns output output_index's shape.
 *   infer_dtype(ctx, op_type, output_index, dtype)
 *       the same with InferDataType; the dtype is a GE number.
 *   describe()
 *       JSON text (static storage) of every OpDef and tiling-data class registered in this blob
 *       (docs/ascendc-host.md describes it).
 *
 * Each returns OPBUILD_GRAPH_SUCCESS or OPBUILD_GRAPH_FAILED with ctx->error naming the op
 * (C++ exceptions are caught). Everything here is header-only or hidden, so the blob of one op
 * (`ld -r` of its objects, then `objcopy --localize-hidden`) keeps its own copy of the core, its
 * registries and classes when several ops' blobs link into one tiling library.
 */
#ifndef OPBUILD_ASCENDC_HOST_BRIDGE_H
#define OPBUILD_ASCENDC_HOST_BRIDGE_H

#include <cstdarg>
#include <cstdio>
#include <exception>
#include <string>

#include "opbuild/infer.h"
#include "opbuild/tiling.h"
#include "register/op_def.h"
#include "register/tilingdata_base.h"

namespace opbuild_ascendc {
namespace bridge {

/* opbuild's spec name of a GE dtype / format ("ge:<n>" for one opbuild does not run); the tables
 * equal opbuild/abi/vocabulary.py's DTYPES and FORMATS (tests/ascendc/test_host_headers.py). */
inline std::string dtype_name(int dtype) {
    switch (dtype) {
        case ge::DT_FLOAT16: return "float16";
        case ge::DT_FLOAT: return "float32";
        case ge::DT_BF16: return "bfloat16";
        case ge::DT_DOUBLE: return "float64";
        case ge::DT_INT8: return "int8";
        case ge::DT_INT16: return "int16";
        case ge::DT_INT32: return "int32";
        case ge::DT_INT64: return "int64";
        case ge::DT_UINT8: return "uint8";
        case ge::DT_UINT16: return "uint16";
        case ge::DT_UINT32: return "uint32";
        case ge::DT_UINT64: return "uint64";
        case ge::DT_BOOL: return "bool";
        default: return "ge:" + std::to_string(dtype);
    }
}

inline std::string format_name(int format) {
    switch (format) {
        case ge::FORMAT_NCHW: return "NCHW";
        case ge::FORMAT_NHWC: return "NHWC";
        case ge::FORMAT_ND: return "ND";
        default: return "ge:" + std::to_string(format);
    }
}

inline uint32_t fail(::TilingContext *ctx, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->error, OPBUILD_ERROR_LEN, fmt, ap);
    va_end(ap);
    return OPBUILD_GRAPH_FAILED;
}

inline const ops::OpDef *find_op(const char *op_type) {
    for (const OpRegistration &r : op_registry())
        if (r.def->OpbuildType() == op_type) return r.def.get();
    return nullptr;
}

inline const ops::OpDef *require_op(::TilingContext *ctx, const char *op_type) {
    const ops::OpDef *def = find_op(op_type);
    if (def == nullptr) {
        std::string known;
        for (const OpRegistration &r : op_registry()) known += (known.empty() ? "" : ", ") + r.def->OpbuildType();
        if (!op_registry_errors().empty())
            fail(ctx, "%s: %s", op_type, op_registry_errors().front().c_str());
        else
            fail(ctx, "%s: no OpDef registered with OP_ADD(%s) (registered: %s)", op_type, op_type,
                 known.empty() ? "none" : known.c_str());
    }
    return def;
}

inline gert::Tensor tensor_of(const OpbuildTensorDesc &d) {
    gert::StorageShape shape;
    uint32_t rank = d.dim_num < OPBUILD_MAX_DIMS ? d.dim_num : OPBUILD_MAX_DIMS;
    for (uint32_t i = 0; i < rank; ++i) {
        shape.MutableOriginShape().AppendDim(d.dims[i]);
        shape.MutableStorageShape().AppendDim(d.dims[i]);
    }
    return gert::Tensor(shape, static_cast<ge::DataType>(d.dtype), static_cast<ge::Format>(d.format));
}

inline void fill_side(IoSide &side, uint32_t num, const uint32_t *start, const uint32_t *count,
                      const OpbuildTensorDesc *descs) {
    for (uint32_t ir = 0; ir < num; ++ir) {
        side.ir_start.push_back(static_cast<uint32_t>(side.Num()));
        side.ir_count.push_back(count[ir]);
        for (uint32_t k = 0; k < count[ir]; ++k) side.Add(tensor_of(descs[start[ir] + k]));
    }
}

/* One output tensor per IR output of the OpDef (infer functions get no outputs in ctx). */
/* An output shape InferShape has not written: one dim of kInvalidDimValue (no real shape has it),
 * so an InferShape that leaves an output alone is an error, not a scalar the kernel overflows. */
inline gert::Shape unset_shape() { return gert::Shape({gert::Shape::kInvalidDimValue}); }

inline void fill_infer_outputs(IoSide &side, const ops::OpDef &def) {
    for (size_t ir = 0; ir < def.OpbuildOutputs().size(); ++ir) {
        side.ir_start.push_back(static_cast<uint32_t>(ir));
        side.ir_count.push_back(1);
        gert::Tensor t;
        t.MutableShape().MutableOriginShape() = unset_shape();
        t.MutableShape().MutableStorageShape() = unset_shape();
        side.Add(t);
    }
}

/* Attribute i of the OpDef from ctx->attrs[i], stored as the OpDef declares its type. */
inline void fill_attrs(gert::RuntimeAttrs &attrs, const ops::OpDef &def, const ::TilingContext *ctx) {
    uint32_t i = 0;
    for (const ops::OpAttrDef &a : def.OpbuildAttrs()) {
        if (i >= ctx->attr_num || ctx->attrs == nullptr) {
            attrs.OpbuildAppendAbsent();
            ++i;
            continue;
        }
        const OpbuildAttrValue &v = ctx->attrs[i++];
        const std::string &t = a.OpbuildType();
        bool is_float = v.type == OPBUILD_ATTR_FLOAT;
        if (t == "int") attrs.OpbuildAppendInt(is_float ? static_cast<int64_t>(v.f) : v.i);
        else if (t == "float") attrs.OpbuildAppendFloat(static_cast<float>(is_float ? v.f : static_cast<double>(v.i)));
        else if (t == "bool") attrs.OpbuildAppendBool(v.i != 0);
        else if (t == "str") attrs.OpbuildAppendStr(v.s);
        else if (t == "list_int") attrs.OpbuildAppendListInt(v.list_int, v.list_int ? v.count : 0);
        else if (t == "list_float") attrs.OpbuildAppendListFloat(v.list_float, v.list_float ? v.count : 0);
        else if (t == "list_bool") attrs.OpbuildAppendListBool(v.list_bool, v.list_bool ? v.count : 0);
        else attrs.OpbuildAppendAbsent();
    }
}

template <typename Context>
inline void fill_common(Context &g, const ops::OpDef &def, const ::TilingContext *ctx) {
    fill_side(g.OpbuildInputs(), ctx->input_num, ctx->input_start, ctx->input_count, ctx->input_descs);
    fill_attrs(g.OpbuildAttrs(), def, ctx);
    g.OpbuildNode().name = def.OpbuildType();
    g.OpbuildNode().type = def.OpbuildType();
}

inline uint32_t tiling(::TilingContext *ctx, const char *op_type) {
    ctx->error[0] = '\0';
    try {
        const ops::OpDef *def = require_op(ctx, op_type);
        if (def == nullptr) return OPBUILD_GRAPH_FAILED;
        ops::TilingFunc fn = def->OpbuildAICore().OpbuildTiling();
        if (fn == nullptr) return fail(ctx, "%s: the OpDef sets no tiling function (AICore().SetTiling)", op_type);
        gert::TilingContext g;
        fill_common(g, *def, ctx);
        fill_side(g.OpbuildOutputs(), ctx->output_num, ctx->output_start, ctx->output_count, ctx->output_descs);
        g.OpbuildSetPlatform(fe::PlatFormInfos(ctx->soc_version, ctx->core_num, ctx->ub_size));
        g.OpbuildSetDeterministic(static_cast<int32_t>(ctx->deterministic));
        if (ctx->tiling_data != nullptr && ctx->tiling_data_capacity != 0)
            std::memset(ctx->tiling_data, 0, ctx->tiling_data_capacity);
        g.OpbuildSetTilingBuffer(ctx->tiling_data, ctx->tiling_data ? ctx->tiling_data_capacity : 0);
        ge::graphStatus status = fn(&g);
        if (status == ge::GRAPH_PARAM_INVALID) { /* the call's parameters: 161002 for the caller */
            fail(ctx, "%s: the tiling function rejected the call's parameters (GRAPH_PARAM_INVALID)", op_type);
            return OPBUILD_GRAPH_PARAM_INVALID;
        }
        if (status != ge::GRAPH_SUCCESS)
            return fail(ctx, "%s: the tiling function returned %u (GRAPH_FAILED is %u)", op_type, status,
                        ge::GRAPH_FAILED);
        size_t size = g.GetRawTilingData()->GetDataSize();
        if (g.OpbuildTypedSize() > size) size = g.OpbuildTypedSize();
        if (size > ctx->tiling_data_capacity)
            return fail(ctx, "%s: the tiling function declared %zu bytes of tiling data; the buffer has %llu", op_type,
                        size, static_cast<unsigned long long>(ctx->tiling_data_capacity));
        ctx->block_dim = g.GetBlockDim();
        ctx->tiling_key = g.GetTilingKey();
        ctx->workspace_size = g.OpbuildWorkspaceTotal();
        ctx->tiling_data_size = size;
        return OPBUILD_GRAPH_SUCCESS;
    } catch (const std::exception &e) {
        return fail(ctx, "%s: the tiling function threw: %s", op_type, e.what());
    } catch (...) {
        return fail(ctx, "%s: the tiling function threw an exception", op_type);
    }
}

inline uint32_t infer_shape(::TilingContext *ctx, const char *op_type, uint32_t output_index, int64_t *dims,
                            uint32_t *dim_num) {
    ctx->error[0] = '\0';
    try {
        const ops::OpDef *def = require_op(ctx, op_type);
        if (def == nullptr) return OPBUILD_GRAPH_FAILED;
        ops::InferShapeFunc fn = def->OpbuildInferShape();
        if (fn == nullptr) return fail(ctx, "%s: the OpDef sets no InferShape (SetInferShape)", op_type);
        gert::InferShapeContext g;
        fill_common(g, *def, ctx);
        fill_infer_outputs(g.OpbuildOutputs(), *def);
        if (output_index >= g.GetComputeNodeOutputNum())
            return fail(ctx, "%s: no output %u (the OpDef has %zu)", op_type, output_index, g.GetComputeNodeOutputNum());
        ge::graphStatus status = fn(&g);
        if (status != ge::GRAPH_SUCCESS) return fail(ctx, "%s: InferShape returned %u", op_type, status);
        const gert::Shape &s = *g.GetOutputShape(output_index);
        if (s == unset_shape())
            return fail(ctx, "%s: InferShape set no shape for output %u (leave it to the caller: give the output "
                             "a `shape` rule in op.yaml, or set it in InferShape)", op_type, output_index);
        if (s.GetDimNum() > OPBUILD_MAX_DIMS)
            return fail(ctx, "%s: InferShape gave output %u rank %zu (at most %d)", op_type, output_index,
                        s.GetDimNum(), OPBUILD_MAX_DIMS);
        for (size_t i = 0; i < s.GetDimNum(); ++i) dims[i] = s.GetDim(i);
        *dim_num = static_cast<uint32_t>(s.GetDimNum());
        return OPBUILD_GRAPH_SUCCESS;
    } catch (const std::exception &e) {
        return fail(ctx, "%s: InferShape threw: %s", op_type, e.what());
    } catch (...) {
        return fail(ctx, "%s: InferShape threw an exception", op_type);
    }
}

inline uint32_t infer_dtype(::TilingContext *ctx, const char *op_type, uint32_t output_index, int32_t *dtype) {
    ctx->error[0] = '\0';
    try {
        const ops::OpDef *def = require_op(ctx, op_type);
        if (def == nullptr) return OPBUILD_GRAPH_FAILED;
        ops::InferDataTypeFunc fn = def->OpbuildInferDataType();
        if (fn == nullptr) return fail(ctx, "%s: the OpDef sets no InferDataType (SetInferDataType)", op_type);
        gert::InferDataTypeContext g;
        fill_common(g, *def, ctx);
        fill_infer_outputs(g.OpbuildOutputs(), *def);
        if (output_index >= g.GetComputeNodeOutputNum())
            return fail(ctx, "%s: no output %u (the OpDef has %zu)", op_type, output_index, g.GetComputeNodeOutputNum());
        ge::graphStatus status = fn(&g);
        if (status != ge::GRAPH_SUCCESS) return fail(ctx, "%s: InferDataType returned %u", op_type, status);
        ge::DataType dt = g.GetOutputDataType(output_index);
        if (dt == ge::DT_UNDEFINED) return fail(ctx, "%s: InferDataType set no dtype for output %u", op_type, output_index);
        *dtype = static_cast<int32_t>(dt);
        return OPBUILD_GRAPH_SUCCESS;
    } catch (const std::exception &e) {
        return fail(ctx, "%s: InferDataType threw: %s", op_type, e.what());
    } catch (...) {
        return fail(ctx, "%s: InferDataType threw an exception", op_type);
    }
}

/* ---- describe ------------------------------------------------------------------------------ */

inline std::string quote(const std::string &s) { return ops::OpAttrDef::Quote(s); }

inline const char *param_type_name(ops::Option o) {
    switch (o) {
        case ops::OPTIONAL: return "optional";
        case ops::DYNAMIC: return "dynamic";
        case ops::REQUIRED: return "required";
        case ops::VIRTUAL: return "virtual";
        default: return "ignore";
    }
}

inline std::string params_json(const std::deque<ops::OpParamDef> &params) {
    std::string out = "[";
    bool first = true;
    for (const ops::OpParamDef &p : params) {
        out += first ? "" : ",";
        first = false;
        out += "{\"name\":" + quote(p.OpbuildName()) + ",\"param_type\":\"" + param_type_name(p.OpbuildParamType()) +
               "\",\"dtypes\":[";
        for (size_t i = 0; i < p.OpbuildDataTypes().size(); ++i)
            out += (i ? "," : "") + quote(dtype_name(p.OpbuildDataTypes()[i]));
        out += "],\"dtype_list\":" + std::string(p.OpbuildDataTypeList() ? "true" : "false") + ",\"formats\":[";
        for (size_t i = 0; i < p.OpbuildFormats().size(); ++i)
            out += (i ? "," : "") + quote(format_name(p.OpbuildFormats()[i]));
        out += "],\"format_list\":" + std::string(p.OpbuildFormatList() ? "true" : "false");
        ops::Option vd = p.OpbuildValueDepend();
        out += ",\"value_depend\":" +
               std::string(vd == ops::IGNORE ? "null" : vd == ops::OPTIONAL ? "\"optional\"" : "\"required\"");
        out += ",\"scalar\":" + std::string(p.OpbuildScalar() ? "true" : "false");
        out += ",\"follow\":" + (p.OpbuildFollow().empty() ? std::string("null") : quote(p.OpbuildFollow()));
        out += ",\"file\":" + quote(p.OpbuildFile()) + ",\"line\":" + std::to_string(p.OpbuildLine()) + "}";
    }
    return out + "]";
}

inline std::string attrs_json(const std::deque<ops::OpAttrDef> &attrs) {
    std::string out = "[";
    bool first = true;
    for (const ops::OpAttrDef &a : attrs) {
        out += first ? "" : ",";
        first = false;
        out += "{\"name\":" + quote(a.OpbuildName()) + ",\"param_type\":\"" +
               (a.OpbuildRequired() ? "required" : "optional") + "\",\"type\":" +
               (a.OpbuildType().empty() ? std::string("null") : quote(a.OpbuildType())) + ",\"default\":" +
               (a.OpbuildDefault().empty() ? std::string("null") : a.OpbuildDefault()) + ",\"file\":" +
               quote(a.OpbuildFile()) + ",\"line\":" + std::to_string(a.OpbuildLine()) + "}";
    }
    return out + "]";
}

inline std::string fields_json(const ClassInfo &c) {
    std::string out = "[";
    for (size_t i = 0; i < c.fields.size(); ++i) {
        const FieldInfo &f = c.fields[i];
        out += std::string(i ? "," : "") + "{\"name\":" + quote(f.name) + ",\"type\":" + quote(f.type) +
               ",\"offset\":" + std::to_string(f.offset) + ",\"size\":" + std::to_string(f.size) + ",\"count\":" +
               (f.count ? std::to_string(f.count) : std::string("null")) + ",\"struct\":" +
               (f.nested ? quote(f.nested().name) : std::string("null")) + "}";
    }
    return out + "]";
}

inline void collect_class(const ClassInfo &c, std::vector<const ClassInfo *> &seen) {
    for (const ClassInfo *s : seen)
        if (s == &c) return;
    for (const FieldInfo &f : c.fields)
        if (f.nested) collect_class(f.nested(), seen);
    seen.push_back(&c);  /* nested classes first */
}

inline std::string describe_json() {
    std::string out = "{\"ops\":[";
    bool first = true;
    for (const OpRegistration &r : op_registry()) {
        const ops::OpDef &d = *r.def;
        out += first ? "" : ",";
        first = false;
        out += "{\"op\":" + quote(d.OpbuildType()) + ",\"file\":" + quote(r.file) + ",\"line\":" +
               std::to_string(r.line) + ",\"inputs\":" + params_json(d.OpbuildInputs()) +
               ",\"outputs\":" + params_json(d.OpbuildOutputs()) + ",\"attrs\":" + attrs_json(d.OpbuildAttrs()) +
               ",\"socs\":[";
        const auto &socs = d.OpbuildAICore().OpbuildSocs();
        for (size_t i = 0; i < socs.size(); ++i) out += (i ? "," : "") + quote(socs[i].first);
        out += "],\"soc_configs\":[";
        bool first_cfg = true;
        for (const auto &s : socs) {
            if (!s.second) continue;
            out += std::string(first_cfg ? "" : ",") + "{\"soc\":" + quote(s.first) +
                   ",\"inputs\":" + params_json(s.second->OpbuildInputs()) +
                   ",\"outputs\":" + params_json(s.second->OpbuildOutputs()) + ",\"flags\":{";
            first_cfg = false;
            const auto &flags = s.second->OpbuildFlags();
            for (size_t i = 0; i < flags.size(); ++i)
                out += (i ? "," : "") + quote(flags[i].first) + ":" + (flags[i].second ? "true" : "false");
            out += "}}";
        }
        out += "],\"has_tiling\":" + std::string(d.OpbuildAICore().OpbuildTiling() ? "true" : "false") +
               ",\"has_infer_shape\":" + (d.OpbuildInferShape() ? "true" : "false") +
               ",\"has_infer_dtype\":" + (d.OpbuildInferDataType() ? "true" : "false") + "}";
    }
    out += "],\"tiling\":[";
    std::vector<const ClassInfo *> classes;
    const std::vector<TilingRegistration> &regs = tiling_registry();
    for (size_t i = 0; i < regs.size(); ++i) {
        const ClassInfo &c = regs[i].info();
        collect_class(c, classes);
        out += std::string(i ? "," : "") + "{\"op\":" + quote(regs[i].name) + ",\"class\":" + quote(c.name) +
               ",\"size\":" + std::to_string(c.size) + ",\"fields\":" + fields_json(c) + "}";
    }
    out += "],\"tiling_classes\":{";
    for (size_t i = 0; i < classes.size(); ++i)
        out += std::string(i ? "," : "") + quote(classes[i]->name) + ":{\"size\":" + std::to_string(classes[i]->size) +
               ",\"fields\":" + fields_json(*classes[i]) + "}";
    out += "},\"errors\":[";
    const std::vector<std::string> &errors = op_registry_errors();
    for (size_t i = 0; i < errors.size(); ++i) out += (i ? "," : "") + quote(errors[i]);
    return out + "]}";
}

inline const char *describe() {
    static const std::string text = [] {
        try {
            return describe_json();
        } catch (const std::exception &e) {
            return std::string("{\"error\":") + quote(e.what()) + "}";
        }
    }();
    return text.c_str();
}

}  // namespace bridge
}  // namespace opbuild_ascendc

/* The bridge's implementation, out of line: the one TU of a build that includes this header says
 * OPBUILD_ASCENDC_HOST_CORE() once. Its functions (declared in opbuild_ascendc/host_exports.h)
 * have hidden visibility, so each op's blob, linked with its own copy of this object, keeps them
 * and the registries they read to itself. */
#define OPBUILD_ASCENDC_HOST_CORE()                                                                         \
    extern "C" uint32_t opbuild_ascendc_host_tiling(TilingContext *ctx, const char *op_type) {              \
        return ::opbuild_ascendc::bridge::tiling(ctx, op_type);                                             \
    }                                                                                                       \
    extern "C" uint32_t opbuild_ascendc_host_infer_shape(TilingContext *ctx, const char *op_type,           \
                                                         uint32_t output_index, int64_t *dims,              \
                                                         uint32_t *dim_num) {                               \
        return ::opbuild_ascendc::bridge::infer_shape(ctx, op_type, output_index, dims, dim_num);           \
    }                                                                                                       \
    extern "C" uint32_t opbuild_ascendc_host_infer_dtype(TilingContext *ctx, const char *op_type,           \
                                                         uint32_t output_index, int32_t *dtype) {           \
        return ::opbuild_ascendc::bridge::infer_dtype(ctx, op_type, output_index, dtype);                   \
    }                                                                                                       \
    extern "C" const char *opbuild_ascendc_host_describe(void) { return ::opbuild_ascendc::bridge::describe(); }

#endif
