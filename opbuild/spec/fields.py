"""Every section and field of `op.yaml`, declared once.

Each `Field` says its name, type, whether it is required, its default, its allowed values (in
its type), a one-line doc, the model attribute it becomes and the `SpecChecker` method that
checks it beyond its structure. Everything else is derived from these declarations:

* `schemas/op_spec.schema.json` and the field tables of `docs/spec-format.md` are generated
  (`python -m opbuild.spec.generate`; `--check` fails when a committed copy is stale);
* the serializer (opbuild/spec/serialize.py) walks `model_attributes(...)`;
* the checks' list of top-level sections is the schema's (opbuild/spec/checks.py);
* tests assert that the model dataclasses (opbuild/spec/model.py) have exactly the declared
  attributes with the declared types, and that the committed artefacts are up to date.

Vocabularies that other modules own are imported, never re-listed here: dtypes, formats, impl
modes, core types, SoCs, tiling-field and attribute types (opbuild/abi/vocabulary.py), domains
(`DOMAINS`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from opbuild.abi.kernel_launch import TILING_KEY_MAX
from opbuild.abi.package_layout import DOMAINS
from opbuild.abi.vocabulary import ATTR_TYPE_NAMES as ATTR_TYPES
from opbuild.abi.vocabulary import CORE_TYPE_NAMES as CORE_TYPES
from opbuild.abi.vocabulary import DEFAULT_CORE_TYPE, DEFAULT_FORMAT, DEFAULT_SOC
from opbuild.abi.vocabulary import DTYPE_NAMES as DTYPES
from opbuild.abi.vocabulary import FORMAT_NAMES as FORMATS
from opbuild.abi.vocabulary import TILING_FIELD_TYPE_NAMES as TILING_FIELD_TYPES

from .field_types import AnyValue, Bool, Enum, Field, Int, List, Map, OneOf, Record, Ref, SpecType, Str, WhenMap
from .model import (
    DEFAULT_IMPL_MODES,
    DEFAULT_TILING_KEYS,
    IMPL_MODE_INDEX,
    Attr,
    Binary,
    Framework,
    KeyRule,
    OnnxOrigin,
    OpSpec,
    Param,
    ShapeRule,
    SourceRef,
    TensorChoice,
    TilingField,
)

PACKAGES = ("custom", "built-in")
"""Where an op is built: out/opp/vendors/<vendor> (custom) or out/opp/built-in."""
DEFAULT_SOCS = (DEFAULT_SOC,)
INPUT_PARAM_TYPES = ("required", "optional", "dynamic")
OUTPUT_PARAM_TYPES = ("required", "dynamic")
KEY_MODES = ("default", "customized")
ENGINES = ("aicore", "aicpu")
"""Where an op runs: AI Core kernels (kernel, tiling, binaries) or the AI CPU (a `compute` function)."""
AICORE_ONLY = ("kernel", "tiling", "host", "simplified_key", "binaries", "tiling_data", "core_type")
"""Sections only an AI Core op has (an AI CPU op's `compute` function replaces them)."""
AICORE_REQUIRED = ("kernel", "tiling", "binaries")
"""Sections every AI Core op must have (not required by the schema: an AI CPU op has none). An
Ascend C op (`kernel.api: ascendc`) has `host` instead of `tiling` (ASCENDC_REPLACES)."""
KERNEL_APIS = ("c", "ascendc")
"""`kernel.api`: opbuild's C kernel API (opbuild/kernel.h, a C tiling source) or Ascend C
(kernel_operator.h and an op_host C++ source with the OpDef and tiling class; opbuild/ascendc)."""
ASCENDC_REPLACES = ("tiling", "tiling_data")
"""Sections an Ascend C op does not have: its `host` source defines the tiling function and the
tiling-data class, read back at validation (opbuild/ascendc/lower.py)."""
DEFAULT_FORMATS = (DEFAULT_FORMAT,)

_ID = r"[A-Za-z_][A-Za-z0-9_]*"
LOWER_NAME = r"^[a-z][a-z0-9_]*$"
C_SYMBOL = rf"^{_ID}$"
MAX_DIM = rf"^([0-9]+|(rank|size)\(\s*{_ID}\s*\)|dim\(\s*{_ID}\s*,\s*-?[0-9]+\s*\))$"
"""One dimension of a data-dependent output's upper bound: N, rank(x), size(x) or dim(x, i)."""

# ---- named types (the schema's $defs) ---------------------------------------------------------

DEFS: dict[str, SpecType] = {}


def _define(name: str, value: SpecType) -> Ref:
    DEFS[name] = value
    return Ref(name)


PARAM_NAME = r"^[a-z][A-Za-z0-9_]*$"
"""A tensor or attr name: an identifier starting with a lowercase letter (CANN's names, e.g. an
Ascend C OpDef's `srcList`, keep their case; DTYPE_<NAME> macros upper-case it)."""
NAME = _define("name", Str(PARAM_NAME, "name {instance} must be an identifier starting with a lowercase letter "
                                       "(a-z, then letters, digits, _)",
                           doc=f"identifier starting with a lowercase letter `{PARAM_NAME}`"))
SYMBOL = _define("c_symbol", Str(C_SYMBOL, "{instance} is not a C identifier", doc="C identifier"))
SOURCE = _define("source", Str(min_length=1, doc="path relative to the op directory"))
DTYPE = _define("dtype", Enum(DTYPES))
FORMAT = _define("format", Enum(FORMATS))

TENSOR_CHOICE = _define("tensor_choice", Record(
    "tensor_choice", "A binary's condition on one tensor: its dtype, and optionally its format.",
    (
        Field("dtype", DTYPE, "the tensor's dtype in calls this binary serves", required=True, model="dtype"),
        Field("format", FORMAT, "its format (default: every declared format of that dtype column)", model="format"),
    ),
    model=TensorChoice,
))

SHAPE = _define("shape", Record(
    "shape", "How the output shape follows from the inputs: exactly one rule.",
    (
        Field("same_as", NAME, "the shape of this input", becomes="ShapeRule.kind/operands",
              check="build_shapes"),
        Field("broadcast", List(NAME, min_items=1, unique=True), "numpy broadcasting of these inputs (every tensor of a dynamic one)",
              becomes="ShapeRule.kind/operands", check="build_shapes"),
        Field("reduce", NAME, "this input reduced over `axes` (with `axes` and `keep_dims`)",
              becomes="ShapeRule.kind/operands", check="build_shapes"),
        Field("axes", NAME, "the `list_int` attr holding the reduced axes (with `reduce`)", model="axes_attr",
              check="build_shapes"),
        Field("keep_dims", NAME, "the `bool` attr saying whether reduced axes stay (with `reduce`)",
              model="keep_dims_attr", check="build_shapes"),
        Field("function", SYMBOL, "a C infer-shape function defined in the tiling source",
              becomes="ShapeRule.kind/operands", check="build_shapes"),
        Field("data_dependent", Bool(), "AI CPU ops: the compute function reports the real shape (with `max`)",
              becomes="ShapeRule.kind/operands", check="build_shapes"),
        Field("max", List(Str(MAX_DIM, "{instance} is not a dimension bound: N, rank(<input>), size(<input>) or "
                                       "dim(<input>, <axis>); quote a dim bound inside [...], as in "
                                       "max: ['dim(x, 0)'] (YAML splits [dim(x, 0)] at its comma)",
                              doc="N | rank(x) | size(x) | 'dim(x, i)'"), min_items=1),
              "the upper bound of each dimension of a data-dependent shape (with `data_dependent`)",
              becomes="ShapeRule.kind/operands", check="build_shapes"),
    ),
    model=ShapeRule,
    derived=("kind", "operands"),
    one_of_required=("same_as", "broadcast", "reduce", "function", "data_dependent"),
    one_of_message="a shape rule needs exactly one of: same_as, broadcast, reduce (with axes, keep_dims), function, "
                   "data_dependent (with max)",
    dependent_required=(("reduce", ("axes", "keep_dims")), ("axes", ("reduce",)), ("keep_dims", ("reduce",)),
                        ("data_dependent", ("max",)), ("max", ("data_dependent",))),
))


def _tensor(name: str, doc: str, param_types: tuple[str, ...], *extra: Field, derived: tuple[str, ...]) -> Ref:
    return _define(name, Record(name, doc, (
        Field("name", NAME, "the tensor's name (inputs, outputs and attrs share one namespace)", required=True,
              model="name", check="check_names"),
        Field("dtypes", List(DTYPE, min_items=1),
              "one dtype (used in every combination) or one per combination", required=True, model="dtypes",
              check="check_columns"),
        Field("formats", List(FORMAT, min_items=1),
              "one format (used in every combination) or one per combination", default=list(DEFAULT_FORMATS),
              model="formats", check="check_columns"),
        Field("param_type", Enum(param_types), "`dynamic` is a tensor list", default="required",
              model="param_type"),
        *extra,
    ), model=Param, derived=derived))


INPUT = _tensor("input", "One IR input of the op.", INPUT_PARAM_TYPES, derived=("index", "is_output", "shape"))
OUTPUT = _tensor("output", "One IR output of the op.", OUTPUT_PARAM_TYPES,
                 Field("shape", SHAPE, "how the output shape follows from the inputs", model="shape",
                       check="build_shapes"),
                 derived=("index", "is_output"))

ATTR = _define("attr", Record("attr", "One attribute of the op.", (
    Field("name", NAME, "the attribute's name (shared namespace with the tensors)", required=True, model="name",
          check="check_names"),
    Field("type", Enum(ATTR_TYPES), "the attribute's type", required=True, model="type"),
    Field("default", AnyValue("a value of `type`"),
          "must match `type`; without a default the attribute is required", model="default", check="build_attrs"),
), model=Attr, derived=("index",)))

TILING_FIELD = _define("tiling_field", Record("tiling_field", "One member of the tiling-data C struct `<Op>TilingData`.", (
    Field("name", SYMBOL, "the member's name: unique, not a C keyword", required=True, model="name",
          check="check_tiling_data"),
    Field("type", Enum(TILING_FIELD_TYPES), "the member's C type", required=True, model="type"),
    Field("count", Int(minimum=1), "more than 1 makes the member an array", default=1, model="count"),
), model=TilingField))

BINARY = _define("binary", Record("binary", "One precompiled kernel binary and the calls it serves.", (
    Field("name", Str(r"^[A-Za-z][A-Za-z0-9_]*$", "binary name {instance} must be letters, digits and _ (it names files)",
                      doc="letters, digits, `_`"),
          "unique in the op (it names the binary's files)", required=True, model="name", check="build_binaries"),
    Field("when", WhenMap(TENSOR_CHOICE, "map: tensor name → dtype or [`tensor_choice`](#tensor_choice-fields); "
                                         "attr name → value"),
          "tensor name: dtype | {dtype, format}; attr name: value", required=True, model="when",
          model_type=tuple[tuple[str, TensorChoice], ...], check="check_when"),
    Field("key", Str(), "the customized-mode key fragment (required in customized mode, forbidden in default mode)",
          model="key", check="check_fragment"),
    Field("deterministic", Enum(("ignore", True, False), "deterministic must be ignore, true or false, not {instance}"),
          "`ignore` serves d=0 and d=1, `true` d=1, `false` d=0 (YAML booleans, not strings)", default="ignore",
          model="deterministic"),
    Field("impl_mode", List(Enum(tuple(IMPL_MODE_INDEX)), min_items=1, unique=True),
          "the impl modes (p=0, 1, 2) this binary serves", default=list(DEFAULT_IMPL_MODES), model="impl_modes"),
    Field("block_dim", Int(minimum=1), "the number of blocks the kernel runs on", model="block_dim",
          model_type=int),
), model=Binary, derived=("attr_when",)))

ONNX_DOMAIN = r"^(ai\.onnx|[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*)$"
"""`ai.onnx` (the standard ops; ONNX writes it "") or a custom domain such as `com.example.custom`."""
DEFAULT_ONNX_DOMAIN = "ai.onnx"

ONNX_ORIGIN = _define("onnx_origin", Record(
    "onnx_origin", "One ONNX op this op is converted from (an adapter plugin of `opbuild om build model.onnx`).", (
        Field("op_type", Str(r"^[A-Za-z_][A-Za-z0-9_]*$", "ONNX op type {instance} is not an identifier",
                             doc="ONNX op type, e.g. `Mul`"),
              "the ONNX node's op_type", required=True, model="op_type", check="build_framework"),
        Field("domain", Str(ONNX_DOMAIN, "ONNX domain {instance} is not ai.onnx or a dotted name",
                            doc="`ai.onnx` or a dotted custom domain"),
              "the node's domain (`ai.onnx` also matches ONNX's empty domain)", default=DEFAULT_ONNX_DOMAIN,
              model="domain", check="build_framework"),
        Field("min_opset", Int(minimum=1), "the lowest opset version of `domain` the mapping holds for", default=1,
              model="min_opset", check="build_framework"),
        Field("max_opset", Int(minimum=1), "the highest one (left out: no upper bound)", model="max_opset",
              check="build_framework"),
        Field("attrs", Map(Str(), Ref("name"), "map: ONNX attribute name → attr name"),
              "ONNX attributes renamed to the op's attrs (one named like an attr maps to it as is)", default={},
              model="attrs", model_type=tuple[tuple[str, str], ...], check="build_framework"),
        Field("defaults", Map(Ref("name"), AnyValue("a value of the attr's type"), "map: attr name → value"),
              "an attr's value when the ONNX node leaves its attribute out (ONNX's default)", default={},
              model="defaults", model_type=tuple[tuple[str, Any], ...], check="build_framework"),
        Field("inputs", List(Ref("name"), unique=True),
              "the op's input (or attr, from a constant input) each ONNX input is, in ONNX order "
              "(default: the op's inputs in order)", model="inputs", model_type=tuple[str, ...],
              check="build_framework"),
        Field("outputs", List(Ref("name"), unique=True),
              "the op's output each ONNX output is, in ONNX order (default: the op's outputs in order)",
              model="outputs", model_type=tuple[str, ...], check="build_framework"),
    ),
    model=OnnxOrigin,
))

FRAMEWORK = Record("framework", "The framework ops this op is converted from (CANN's adapter plugins).", (
    Field("onnx", List(ONNX_ORIGIN, min_items=1), "ONNX ops mapped to this op (checked in order)", default=[],
          model="onnx", check="build_framework"),
), model=Framework)

# ---- the sections of op.yaml ------------------------------------------------------------------

KERNEL = Record("kernel", "The kernel source and its entry function.", (
    Field("source", SOURCE, "the kernel C source, inside the op directory", required=True, model="source",
          check="check_sources"),
    Field("entry", SYMBOL, "the kernel entry function (compiled once per binary)", required=True, model="symbol"),
    Field("intercore_sync", Bool(), "the kernel uses SyncAll(): the simulator runs all blocks concurrently",
          default=False, becomes="OpSpec.intercore_sync"),
    Field("api", Enum(KERNEL_APIS), "`c`: opbuild's C kernel API (kernel.h; with `tiling`); `ascendc`: an Ascend C "
          "source (kernel_operator.h, compiled as C++17; with `host`, docs/ascendc.md)", default=KERNEL_APIS[0],
          becomes="OpSpec.kernel_api", check="check_engine"),
), model=SourceRef)

HOST = Record("host", "Ascend C ops (`kernel.api: ascendc`): the op_host C++ source (OpDef, tiling class, tiling "
              "function, InferShape/InferDataType); replaces `tiling` and `tiling_data`.", (
    Field("source", SOURCE, "the op_host C++ source, inside the op directory (its OpDef is checked against this "
          "spec)", required=True, becomes="OpSpec.tiling", check="check_sources"),
))

TILING = Record("tiling", "The tiling source and its tiling function.", (
    Field("source", SOURCE, "the tiling C source, inside the op directory", required=True, model="source",
          check="check_sources"),
    Field("function", SYMBOL, "the tiling function", required=True, model="symbol"),
    Field("keys", List(Int(0, TILING_KEY_MAX, "tiling key {instance} is not a uint64 (0 to 2^64-1)",
                           doc="uint64 (0 to 2^64-1)"), min_items=1),
          "the tiling keys the tiling function may set, distinct (each one a `kernelList` entry of every binary's "
          "kernel JSON; the runtime rejects any other)", default=list(DEFAULT_TILING_KEYS),
          becomes="OpSpec.tiling_keys", check="check_tiling_keys"),
), model=SourceRef)

COMPUTE = Record("compute", "The AI CPU compute source and its compute function (engine: aicpu).", (
    Field("source", SOURCE, "the compute C source, inside the op directory", required=True, model="source",
          check="check_sources"),
    Field("entry", SYMBOL, "the compute function `uint32_t entry(AicpuContext *ctx)` defined in the source",
          required=True, model="symbol", check="check_sources"),
), model=SourceRef)

SIMPLIFIED_KEY = Record("simplified_key", "How GenSimplifiedKey chooses a binary.", (
    Field("mode", Enum(KEY_MODES), "`default`: the key is every tensor's dtype and format; `customized`: a callback's "
          "fragment", default="default", model="mode"),
    Field("callback", Str(rf"^(table|c:{_ID}|python:{_ID}:{_ID})$",
                          "callback {instance} is not one of: table, c:<symbol>, python:<module>:<function>",
                          doc="`table`, `c:<symbol>` or `python:<module>:<function>`"),
          "customized mode only: table | c:<symbol> | python:<module>:<function> (default table)",
          becomes="KeyRule.callback/c_symbol/py_module/py_function", check="build_key_rule"),
), model=KeyRule, derived=("callback", "c_symbol", "py_module", "py_function"))

OP_SPEC = Record(
    "op_spec",
    "The top level of op.yaml.",
    (
        Field("op", Str(r"^[A-Z][A-Za-z0-9]*$", "op {instance} is not CamelCase (an uppercase letter, then letters "
                                                 "and digits)", doc="CamelCase `^[A-Z][A-Za-z0-9]*$`"),
              "The OpType, CamelCase. The spec must live in ops/<snake_case(op)>/op.yaml.", required=True, model="op",
              check="check_location"),
        Field("description", Str(), "one line of documentation", default="", model="description"),
        Field("package", OneOf((Enum(PACKAGES), List(Enum(PACKAGES), min_items=1, unique=True))),
              "Which package the op is built into: custom (out/opp/vendors/<vendor>), built-in (out/opp/built-in), or "
              "both (a list); a custom version wins over the built-in one at run time.", default=PACKAGES[0],
              model="packages", check="check_package"),
        Field("domain", Enum(DOMAINS), "The opapi domain library of a built-in op (libopapi_<domain>.so). Only with "
                                       "package: built-in.", model="domain", check="check_package"),
        Field("inputs", List(INPUT, min_items=1), "the op's IR inputs, in order", required=True, model="inputs",
              check="build_params"),
        Field("outputs", List(OUTPUT, min_items=1), "the op's IR outputs, in order", required=True, model="outputs",
              check="build_params"),
        Field("attrs", List(ATTR), "the op's attributes, in order", default=[], model="attrs", check="build_attrs"),
        Field("tiling_data", List(TILING_FIELD), "members of the tiling-data C struct shared by tiling and kernel",
              default=[], model="tiling_data", check="check_tiling_data"),
        Field("engine", Enum(ENGINES), "`aicore`: AI Core kernels (kernel, tiling, binaries); `aicpu`: a `compute` "
              "function run by the AI CPU", default=ENGINES[0], model="engine", check="check_engine"),
        Field("compute", COMPUTE, "engine aicpu: the compute source and function", model="compute",
              check="check_engine"),
        Field("kernel", KERNEL, "engine aicore (required): the kernel source and entry", model="kernel",
              check="check_sources"),
        Field("tiling", TILING, "engine aicore (required unless `kernel.api: ascendc`): the tiling source and "
              "function", model="tiling", check="check_sources"),
        Field("host", HOST, "`kernel.api: ascendc` (required): the op_host C++ source", becomes="OpSpec.tiling",
              check="check_engine"),
        Field("simplified_key", SIMPLIFIED_KEY, "how GenSimplifiedKey chooses a binary (left out: default mode)", default={},
              model="key_rule", check="build_key_rule"),
        Field("binaries", List(BINARY, min_items=1), "engine aicore (required): the precompiled kernel binaries",
              default=[], model="binaries", check="build_binaries"),
        Field("socs", List(Str(LOWER_NAME, "SoC name {instance} must be lowercase letters, digits and _ (e.g. "
                                           f"{DEFAULT_SOC})", doc="lowercase SoC name"), min_items=1, unique=True),
              "the SoCs the op is built for", default=list(DEFAULT_SOCS), model="socs"),
        Field("core_type", Enum(CORE_TYPES), "the cores the kernel runs on", default=DEFAULT_CORE_TYPE, model="core_type"),
        Field("framework", FRAMEWORK, "adapter plugins: the ONNX ops `opbuild om build model.onnx` converts to this op",
              default={}, model="framework", check="build_framework"),
    ),
    model=OpSpec,
    derived=("snake", "spec_path", "infer_shape", "intercore_sync", "tiling_keys", "kernel_api", "tiling_class",
             "tiling_header"),
)

SCHEMA_DESCRIPTION = (
    "The structure of an op spec. Rules that relate fields to each other (names, combination columns, binaries' "
    "`when`, keys, source files, callbacks) are checked by opbuild.spec after this schema; see docs/spec-format.md.")

SECTIONS: tuple[str, ...] = tuple(f.name for f in OP_SPEC.fields)
"""The top-level sections of op.yaml, in order."""

RECORDS: tuple[Record, ...] = (OP_SPEC, COMPUTE, KERNEL, TILING, HOST, SIMPLIFIED_KEY, FRAMEWORK,
                               *(t for t in DEFS.values() if isinstance(t, Record)))
"""Every record of the format: the top level, its inline sections, then the named ones."""


def model_records(model: type) -> list[Record]:
    """The records whose values become `model` instances (Param has two: input and output)."""
    return [r for r in RECORDS if r.model is model]


def model_attributes(model: type) -> tuple[str, ...]:
    """The data attributes of a model class as declared: each field's `model` plus `derived`,
    in declaration order (the serializer's field list)."""
    names: dict[str, None] = {}
    for record in model_records(model):
        for f in record.fields:
            if f.model:
                names[f.model] = None
        names.update(dict.fromkeys(record.derived))
    return tuple(names)


def schema_document() -> dict[str, Any]:
    """The JSON Schema of op.yaml (what `schemas/op_spec.schema.json` holds)."""
    top = OP_SPEC.schema() | {"description": SCHEMA_DESCRIPTION}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:opbuild:schema:op-spec:1",
        "title": "opbuild op spec (ops/<op_snake>/op.yaml)",
        **top,
        "$defs": {name: t.schema() for name, t in DEFS.items()},
    }


REPO_SCHEMA = Path("schemas") / "op_spec.schema.json"
"""Where the generated schema is committed, relative to the repository root."""
