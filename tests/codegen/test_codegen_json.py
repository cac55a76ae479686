"""Structure of the JSON artefacts against the real formats (docs/package-format.md §3–5)."""

from __future__ import annotations

import json
import re

import pytest

from opbuild import codegen
from opbuild.abi.kernel_launch import kernel_list_keys
from opbuild.keys import binary_full_keys
from opbuild.spec.model import Binary
from opbuild_spec_factory import REPO, SAMPLES, make_spec, sample_spec, when

SOC = "ascend910b"
SHA = "ab" * 32

# Field layouts of the real formats. Kernel JSON: opbase's mock
# nnopbase/mock/built-in/op_impl/ai_core/tbe/kernel/ascend910/quant_batch_matmul_v3/QuantBatchMatmulV3_fail.json
# (asc_opc output) plus the fields of the CANN format notes (kernel JSON section); per-op config binList entry: opbase's
# kernel/config/ascend910/mul.json; binary_info_config.json params: asc-devkit ascendc_ops_config.py.
REAL_KERNEL_JSON_KEYS = {
    "binFileName", "binFileSuffix", "blockDim", "coreType", "intercoreSync", "kernelName", "magic", "memoryStamping",
    "opParaSize", "parameters", "sha256", "workspace", "kernelList", "taskRation", "compileInfo", "supportInfo",
}
KERNEL_JSON_KEYS = REAL_KERNEL_JSON_KEYS | {"core_type", "deterministic", "supportSuperKernel", "debugOptions",
                                            "debugBufSize", "filePath"}
REAL_SUPPORT_INFO_KEYS = {"int64Mode", "simplifiedKeyMode", "simplifiedKey", "staticKey", "inputs", "outputs",
                          "opMode", "deterministic"}  # + implMode, attrs, optionalInputMode, dynamicParamMode if any
SUPPORT_INFO_KEYS = REAL_SUPPORT_INFO_KEYS | {"op_debug_config"}
TENSOR_KEYS = {"name", "index", "dtype", "format", "paramType", "shape", "format_match_mode"}
BIN_LIST_KEYS = {"int64Mode", "simplifiedKeyMode", "simplifiedKey", "staticKey", "inputs", "outputs", "opMode",
                 "deterministic", "binInfo"}  # mul.json; + implMode, attrs, dynamicParamMode, optionalInputMode if any


def conditional_keys(spec, binary) -> set[str]:
    """The optional supportInfo / binList fields this binary must have, and only these."""
    keys = set()
    if any(m != "default" for m in binary.impl_modes):
        keys.add("implMode")
    if spec.attrs:
        keys.add("attrs")
    if any(p.param_type == "optional" for p in spec.inputs):
        keys.add("optionalInputMode")
    if any(p.param_type == "dynamic" for p in spec.tensors):
        keys.add("dynamicParamMode")
    return keys


def kernel_json(spec, binary, **kw):
    text = codegen.render_kernel_json(spec, binary, SOC, bin_file_name=binary.name, bin_suffix=".so", sha256=SHA,
                                      core_type_name=kw.pop("core_type_name", spec.core_type))
    return text, json.loads(text)


def all_artefacts(spec) -> list[str]:
    out = [codegen.render_tiling_header(spec), codegen.render_launch_shim(spec),
           codegen.render_op_kernel_config(spec, SOC, ".so"), codegen.render_binary_info_config([spec], SOC, ".so"),
           codegen.render_ops_info([spec], SOC)]
    out += [kernel_json(spec, b)[0] for b in spec.binaries]
    out += [json.dumps(codegen.binary_macros(spec, b)) for b in spec.binaries]
    return out


def test_kernel_list_has_one_entry_per_declared_tiling_key():
    """The sample that declares tiling keys lists them; the others list key 0 only (asc_opc's
    list for a kernel without TILING_KEY_IS)."""
    specs = [sample_spec(name) for name in SAMPLES]
    declared = {s.op: s.tiling_keys for s in specs}
    assert declared.pop("AddCustomTemplate") == (0, 1) and declared.pop("LeakyReluCustom") == (0, 1)
    assert all(keys == (0,) for keys in declared.values()), declared
    spec = sample_spec("add_custom_template")
    _, j = kernel_json(spec, spec.binaries[0])
    assert j["kernelList"] == [{"kernelName": "AddCustomTemplate_FP16_0"}, {"kernelName": "AddCustomTemplate_FP16_1"}]


def test_kernel_json_structure(sample):
    for binary in sample.binaries:
        _, j = kernel_json(sample, binary)
        cond = conditional_keys(sample, binary)
        assert set(j) == KERNEL_JSON_KEYS | (cond & {"optionalInputMode", "dynamicParamMode"})
        assert j["binFileName"] == binary.name and j["binFileSuffix"] == ".so"
        assert j["blockDim"] == -1
        assert j["coreType"] == "VectorCore" and j["core_type"] == "AIV"
        assert j["magic"] == "RT_DEV_BINARY_MAGIC_ELF_AIVEC" and j["taskRation"] == "0:1"
        # kernelName is the binary's name; kernelList one `<binFileName>_<tilingKey>` per declared key
        assert j["kernelName"] == binary.name
        assert j["kernelList"] == [{"kernelName": f"{binary.name}_{key}"} for key in sample.tiling_keys]
        assert kernel_list_keys(j) == sample.tiling_keys  # what the runtime reads back
        assert j["opParaSize"] == codegen.tiling_struct_size(sample) and isinstance(j["opParaSize"], int)
        assert j["parameters"] == [None] * len(sample.tensors)
        assert j["workspace"] == {"num": 1, "size": [-1], "type": [0]}
        assert j["memoryStamping"] == [] and j["compileInfo"] == {}
        assert j["deterministic"] == binary.deterministic
        assert (j["supportSuperKernel"], j["debugOptions"], j["debugBufSize"]) == (0, "", 0)
        assert j.get("dynamicParamMode", "folded_with_desc") == "folded_with_desc"
        assert j["filePath"] == f"{SOC}/{sample.snake}/{binary.name}.json"
        assert j["sha256"] == SHA
        si = j["supportInfo"]
        assert set(si) == SUPPORT_INFO_KEYS | cond
        assert si["simplifiedKey"] == binary_full_keys(sample, binary)
        assert si["simplifiedKeyMode"] == sample.key_rule.simplified_key_mode
        assert si["opMode"] == "dynamic" and si["int64Mode"] is False and si["op_debug_config"] == ""
        assert "attrs" not in si or si["attrs"] != []  # real JSONs leave out an empty attrs
        assert re.fullmatch(r"[0-9a-f]{64}", si["staticKey"])
        assert len(si["inputs"]) == len(sample.inputs) and len(si["outputs"]) == len(sample.outputs)
        for p, t in zip(sample.tensors, si["inputs"] + si["outputs"]):
            if p.param_type == "dynamic":
                assert isinstance(t, list) and len(t) == 1
                t = t[0]
            assert set(t) == TENSOR_KEYS
            assert t["name"] == p.name and t["shape"] == [-2] and t["format_match_mode"] == "FormatAgnostic"
            assert t["paramType"] == p.param_type
            assert t["dtype"] != "float"  # CANN spells fp32 float32
        assert [a["name"] for a in si.get("attrs", [])] == [a.name for a in sample.attrs]


def test_kernel_json_details():
    spec = sample_spec("add_custom_template")
    _, j = kernel_json(spec, spec.binaries[0])
    assert j["supportInfo"]["implMode"] == "high_performance"  # the binary has p=1 and p=0 keys
    assert j["supportInfo"]["inputs"][0]["dtype"] == "float16"
    _, j32 = kernel_json(spec, spec.binaries[1])
    assert j32["supportInfo"]["inputs"][0]["dtype"] == "float32"
    rs = sample_spec("reduce_sum_custom")
    _, jr = kernel_json(rs, rs.binaries[0])
    assert jr["intercoreSync"] == 1 and jr["deterministic"] == "true"
    # an attribute the binary does not pin serves every value: null (QuantBatchMatmulV3 mock)
    assert jr["supportInfo"]["attrs"] == [{"name": "axes", "dtype": "list_int", "value": None},
                                          {"name": "keep_dims", "dtype": "bool", "value": None}]
    leaky = sample_spec("leaky_relu_custom")
    relu = next(b for b in leaky.binaries if b.attr_when)
    assert kernel_json(leaky, relu)[1]["supportInfo"]["attrs"][0]["value"] == 0.0
    assert kernel_json(leaky, leaky.binaries[0])[1]["supportInfo"]["attrs"][0]["value"] is None
    assert kernel_json(leaky, leaky.binaries[0])[1]["intercoreSync"] == 0
    for core, short, magic, ratio in [("AiCore", "AIC", "RT_DEV_BINARY_MAGIC_ELF_AICUBE", "1:0"),
                                      ("MIX", "MIX", "RT_DEV_BINARY_MAGIC_ELF", "1:2")]:
        _, jc = kernel_json(spec, spec.binaries[0], core_type_name=core)
        assert (jc["coreType"], jc["core_type"], jc["magic"], jc["taskRation"]) == (core, short, magic, ratio)
    with pytest.raises(ValueError, match="core type"):
        kernel_json(spec, spec.binaries[0], core_type_name="Cube")
    default_only = make_spec("D", binaries=[Binary("D1", when(x="float16", y="float16", z="float16"),
                                                   impl_modes=("default",))])
    assert "implMode" not in kernel_json(default_only, default_only.binaries[0])[1]["supportInfo"]


def test_optional_input_fields():
    """An op with an optional input: optionalInputMode in the kernel JSON (top level and supportInfo)
    and the per-op config, the optional tensor listed with a dtype (QuantBatchMatmulV3 mock)."""
    spec = make_spec("Opt", inputs=[("x", ["float32"]), ("bias", ["float32"], "optional")],
                     outputs=[("y", ["float32"])], binaries=[Binary("Opt1", when(x="float32", y="float32"))])
    _, j = kernel_json(spec, spec.binaries[0])
    assert j["optionalInputMode"] == j["supportInfo"]["optionalInputMode"] == "gen_placeholder"
    assert j["supportInfo"]["inputs"][1]["dtype"] == "float32" and j["supportInfo"]["inputs"][1]["paramType"] == "optional"
    assert j["supportInfo"]["simplifiedKey"][0] == "Opt/d=0,p=1/0,2/0,2"
    entry = json.loads(codegen.render_op_kernel_config(spec, SOC, ".o"))["binList"][0]
    assert entry["optionalInputMode"] == "gen_placeholder" and "attrs" not in entry
    cfg = json.loads(codegen.render_binary_info_config([spec], SOC, ".o"))["Opt"]
    assert cfg["optionalInputMode"] == "gen_placeholder"
    assert cfg["params"]["inputs"][1] == {"name": "bias", "index": 1, "paramType": "optional",
                                          "formatMode": "static_nd_agnostic"}


def test_impl_mode_string():
    assert codegen.impl_mode_string(("high_performance", "default")) == "high_performance,optional"
    assert codegen.impl_mode_string(("high_precision",)) == "high_precision"
    assert codegen.impl_mode_string(("default",)) == ""
    assert codegen.impl_mode_string(("high_precision", "high_performance", "default")) == \
        "high_precision,high_performance,optional"


def test_op_kernel_config(sample):
    j = json.loads(codegen.render_op_kernel_config(sample, SOC, ".so"))
    assert list(j) == ["binList"] and len(j["binList"]) == len(sample.binaries)
    for binary, entry in zip(sample.binaries, j["binList"]):
        assert set(entry) == BIN_LIST_KEYS | conditional_keys(sample, binary)
        assert entry["binInfo"] == {"jsonFilePath": f"{SOC}/{sample.snake}/{binary.name}.json"}
        si = kernel_json(sample, binary)[1]["supportInfo"]
        for k in ("staticKey", "simplifiedKey", "implMode", "inputs", "outputs", "attrs", "deterministic",
                  "optionalInputMode", "dynamicParamMode"):
            assert entry.get(k) == si.get(k), k


def test_static_key_differs_per_binary(sample):
    keys = [kernel_json(sample, b)[1]["supportInfo"]["staticKey"] for b in sample.binaries]
    assert len(set(keys)) == len(keys)


def test_binary_info_config(samples):
    specs = list(samples.values())
    j = json.loads(codegen.render_binary_info_config(specs, SOC, ".so"))
    assert set(j) == {s.op for s in specs}
    for spec in specs:
        entry = j[spec.op]
        optional = any(p.param_type == "optional" for p in spec.inputs)
        assert set(entry) == {"dynamicRankSupport", "simplifiedKeyMode", "params", "binaryList"} | \
            ({"optionalInputMode"} if optional else set())
        assert entry["dynamicRankSupport"] is True
        assert entry["simplifiedKeyMode"] == (2 if spec.key_rule.mode == "customized" else 0)
        params = entry["params"]
        assert set(params) == {"inputs", "outputs"} | ({"attrs"} if spec.attrs else set())
        for p, e in zip(spec.tensors, params["inputs"] + params["outputs"]):
            if p.param_type == "dynamic":
                assert isinstance(e, list) and len(e) == 1
                e = e[0]
            # no dtypeMode (asc_opc writes "bit" only for DtypeByte), FormatAgnostic -> static_nd_agnostic
            assert e == {"name": p.name, "index": e["index"], "paramType": p.param_type,
                         "formatMode": "static_nd_agnostic"}
        assert params.get("attrs", []) == [{"name": a.name} for a in spec.attrs]
        assert len(entry["binaryList"]) == len(spec.binaries)
        for b, item in zip(spec.binaries, entry["binaryList"]):
            assert set(item) == {"coreType", "simplifiedKey", "binPath", "jsonPath"}
            assert item["coreType"] == 2 and type(item["coreType"]) is int
            assert item["simplifiedKey"] == binary_full_keys(spec, b)
            assert item["binPath"] == f"{SOC}/{spec.snake}/{b.name}.so"
            assert item["jsonPath"] == f"{SOC}/{spec.snake}/{b.name}.json"
    t1 = j["AddCustomTemplate"]["binaryList"]
    assert "AddCustomTemplate/d=0,p=1/custom_fp16" in t1[0]["simplifiedKey"]
    assert "AddCustomTemplate/d=0,p=1/custom_fp32" in t1[1]["simplifiedKey"]
    mixed = next(i for i in j["MulCustom"]["binaryList"] if i["binPath"].endswith("MulCustom_FP16_FP32.so"))
    assert "MulCustom/d=0,p=1/1,2/0,2/0,2" in mixed["simplifiedKey"]
    det = next(i for i in j["ReduceSumCustom"]["binaryList"] if "FP32_Det" in i["binPath"])
    assert det["simplifiedKey"] and all("/d=1," in k for k in det["simplifiedKey"])


def test_binary_info_config_core_types_and_soc_filter():
    specs = [make_spec("A", core_type="AiCore", binaries=[Binary("A1", when(x="float16", y="float16", z="float16"))]),
             make_spec("M", core_type="MIX", binaries=[Binary("M1", when(x="float16", y="float16", z="float16"))])]
    j = json.loads(codegen.render_binary_info_config(specs, SOC, ".o"))
    assert j["A"]["binaryList"][0]["coreType"] == 1 and j["M"]["binaryList"][0]["coreType"] == 0
    assert j["A"]["binaryList"][0]["binPath"] == f"{SOC}/a/A1.o"
    assert json.loads(codegen.render_binary_info_config(specs, "ascend310p", ".o")) == {}


def test_ops_info(samples):
    j = json.loads(codegen.render_ops_info(list(samples.values()), SOC))
    mul = j["MulCustom"]
    assert mul["opFile"] == {"value": "mul_custom"} and mul["opInterface"] == {"value": "mul_custom"}
    assert mul["input0"] == {"name": "x", "dtype": "float16,float32,float16,int32", "format": "ND,ND,ND,ND",
                             "paramType": "required", "shape": "all"}
    assert mul["input1"]["dtype"] == "float16,float32,float32,int32"
    assert mul["output0"]["name"] == "z"
    # OpAICoreConfig's default flags (metadef), and the CANN ops' prebuildPattern / coreType
    for name, flag in [("dynamicCompileStatic", "true"), ("dynamicFormat", "true"), ("dynamicRankSupport", "true"),
                       ("dynamicShapeSupport", "true"), ("needCheckSupport", "false"), ("precision_reduce", "true")]:
        assert mul[name] == {"flag": flag}, name
    assert mul["prebuildPattern"] == {"value": "Opaque"} and mul["coreType"] == {"value": "VectorCore"}
    assert "attr" not in mul
    leaky = j["LeakyReluCustom"]
    assert leaky["attr"] == {"list": "negative_slope"}
    assert leaky["attr_negative_slope"] == {"type": "float", "value": "all", "paramType": "optional",
                                            "defaultValue": "0.01"}
    assert leaky["input0"]["dtype"] == "float16,float32,bfloat16"
    assert j["AddNCustom"]["input0"]["paramType"] == "dynamic"
    rs = j["ReduceSumCustom"]
    assert rs["attr_axes"]["type"] == "listInt" and rs["attr_axes"]["defaultValue"] == "[]"
    assert rs["attr_keep_dims"]["defaultValue"] == "false"
    req = json.loads(codegen.render_ops_info([make_spec("R", attrs=[("k", "int", None)])], SOC))["R"]
    assert req["attr_k"] == {"type": "int", "value": "all", "paramType": "required"}


def test_text_files():
    assert codegen.render_version_info("7.0.0") == "custom_opp_compiler_version=7.0.0\n"
    assert codegen.render_vendors_config(["customize"]) == "load_priority=customize\n"
    assert codegen.render_vendors_config(["mine", "customize"]) == "load_priority=mine,customize\n"
    for bad in ([], ["a,b"], ["a b"], [""]):
        with pytest.raises(ValueError):
            codegen.render_vendors_config(bad)
    with pytest.raises(ValueError):
        codegen.render_version_info("1\n2")


def test_deterministic_sorted_and_relative(samples):
    specs = list(samples.values())
    for spec in specs:
        first, second = all_artefacts(spec), all_artefacts(spec)
        assert first == second
        for text in first:
            assert str(REPO) not in text and "/tmp" not in text and "/work" not in text
            assert text.endswith("\n") or text.startswith("{")
    for text in (codegen.render_binary_info_config(specs, SOC, ".so"), codegen.render_ops_info(specs, SOC)):
        def check_sorted(obj):
            if isinstance(obj, dict):
                assert list(obj) == sorted(obj)
                for v in obj.values():
                    check_sorted(v)
            elif isinstance(obj, list):
                for v in obj:
                    check_sorted(v)
        check_sorted(json.loads(text))
        assert text.endswith("}\n")


