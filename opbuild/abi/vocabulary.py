"""The vocabulary of opbuild: dtypes, formats, impl modes, core types, SoCs, tiling-field and
attribute types, and the key limit.

What: one record per dtype (spec name, ge::DataType and aclDataType enumerators, numpy/ml_dtypes
dtype, kernel C type and OPBUILD_DT_* macro, byte size, and the spelling each output format
uses), per format, per impl mode, per core type, per SoC, per tiling-field type and per
attribute type (its tiling ABI code, aclnn C type, ops-info spelling, cache-key tag, torch schema
type, AI CPU code, GE AttrDef field, and the runtime's check and conversion of a value), plus the
other CANN data types the acl C ABI and op_fallback know, and the 256-byte simplified-key limit, the aclnn status codes, and the
op-parameter cache key's tags, environment variables and re-check interval.

Why: each of these facts used to be written in several tables (ge_types, op_fallback, the C ABI
module, the spec checker and model, the .om builder, codegen); one of them drifted (the model
schema said `double` for float64; attribute types had nine tables). Every Python table is now
derived from the records here; the C header opbuild/vocabulary_gen.h and the enums of the public
acl/acl_base.h and aclnn/acl_meta.h are generated from them (`python -m opbuild.abi.generate_c`,
`--check`ed by a test and pre-commit); the C sources' switches and the JSON schemas are hand-written
and tests (tests/abi/test_vocabulary.py) assert they equal these records.

Enum numbers are part of the package format (default-mode simplified keys are made of GE
numbers, `Op/d=0,p=1/1,2/1,2`) and never change. Spellings are CANN's (`float32` for float32 in
the kernel and ops-info JSONs, as asc_opc and op_build write it; `double` for float64).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable, Final

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "ACLNN_STATUS", "ACLNN_STATUSES", "ACL_ERROR", "ACL_ERRORS", "AclError", "ACL_DATA_TYPES", "ACL_FORMATS", "AclnnStatus", "CACHE_KEY_ENV_VARS",
    "CACHE_KEY_SLOT_TAGS", "CACHE_KEY_VERSION", "KeyTag", "STAMP_INTERVAL_NS", "ATTR_TYPE", "ATTR_TYPES", "ATTR_TYPE_NAMES", "AttrType",
    "CANN_DATA_TYPES", "CORE_TYPE", "CORE_TYPES", "CORE_TYPE_NAMES",
    "CannDataType", "CoreType", "DEFAULT_BINARY_IMPL_MODES", "DEFAULT_CORE_TYPE", "DEFAULT_FORMAT",
    "DEFAULT_IMPL_MODE", "DEFAULT_SOC", "DTYPE", "DTYPES", "DTYPES_BY_GE_ORDER", "DTYPE_BY_ACL", "DTYPE_BY_GE",
    "DTYPE_BY_NUMPY", "DTYPE_NAMES", "DType", "FORMAT", "FORMATS", "FORMAT_BY_ACL", "FORMAT_BY_GE",
    "FORMAT_NAMES", "Format", "IMPL_MODE", "IMPL_MODES", "IMPL_MODE_BY_INDEX", "IMPL_MODE_INDEX",
    "IMPL_MODE_NAMES", "ImplMode", "MAX_SIMPLIFIED_KEY_LEN", "SOC", "SOCS", "SOC_NAMES", "Soc",
    "TILING_FIELD_TYPE", "TILING_FIELD_TYPES", "TILING_FIELD_TYPE_NAMES", "TilingFieldType", "impl_mode_string",
    "soc_for_chip", "support_impl_mode",
]


# ---- the CANN data-type enumerators -------------------------------------------------------------

@dataclass(frozen=True)
class CannDataType:
    """One CANN data type as the acl C ABI and op_fallback see it.

    ge_name: the ge::DataType enumerator (`DT_FLOAT16`); acl: the aclDataType value, None when
    aclDataType has none; numpy: the numpy / ml_dtypes dtype name, None when there is none;
    size: what aclDataTypeSize returns (bytes of one element; 1 for the sub-byte types, 0 for
    strings); sub_byte: narrower than a byte (an aclScalar cannot hold one).
    The aclDataType enumerator is `ACL_` + the name after `DT_` (`acl_name`).
    """

    ge_name: str
    acl: int | None
    numpy: str | None
    size: int
    sub_byte: bool = False

    @property
    def acl_name(self) -> str:
        return "ACL_" + self.ge_name.removeprefix("DT_")


CANN_DATA_TYPES: Final[tuple[CannDataType, ...]] = (
    CannDataType("DT_FLOAT", 0, "float32", 4),
    CannDataType("DT_FLOAT16", 1, "float16", 2),
    CannDataType("DT_INT8", 2, "int8", 1),
    CannDataType("DT_INT32", 3, "int32", 4),
    CannDataType("DT_UINT8", 4, "uint8", 1),
    CannDataType("DT_INT16", 6, "int16", 2),
    CannDataType("DT_UINT16", 7, "uint16", 2),
    CannDataType("DT_UINT32", 8, "uint32", 4),
    CannDataType("DT_INT64", 9, "int64", 8),
    CannDataType("DT_UINT64", 10, "uint64", 8),
    CannDataType("DT_DOUBLE", 11, "float64", 8),
    CannDataType("DT_BOOL", 12, "bool", 1),
    CannDataType("DT_STRING", 13, None, 0),
    CannDataType("DT_COMPLEX64", 16, "complex64", 8),
    CannDataType("DT_COMPLEX128", 17, "complex128", 16),
    CannDataType("DT_BF16", 27, "bfloat16", 2),
    CannDataType("DT_INT4", 29, "int4", 1, sub_byte=True),
    CannDataType("DT_UINT1", 30, "uint1", 1, sub_byte=True),
    CannDataType("DT_INT2", None, "int2", 1, sub_byte=True),
    CannDataType("DT_UINT2", None, "uint2", 1, sub_byte=True),
    CannDataType("DT_UINT4", None, "uint4", 1, sub_byte=True),
    CannDataType("DT_COMPLEX32", 33, "complex32", 4),
    CannDataType("DT_HIFLOAT8", 34, None, 1),
    CannDataType("DT_FLOAT8_E5M2", 35, "float8_e5m2", 1),
    CannDataType("DT_FLOAT8_E4M3FN", 36, "float8_e4m3fn", 1),
    CannDataType("DT_FLOAT8_E8M0", 37, "float8_e8m0fnu", 1),
    CannDataType("DT_FLOAT6_E3M2", 38, "float6_e3m2fn", 1, sub_byte=True),
    CannDataType("DT_FLOAT6_E2M3", 39, "float6_e2m3fn", 1, sub_byte=True),
    CannDataType("DT_FLOAT4_E2M1", 40, "float4_e2m1fn", 1, sub_byte=True),
    CannDataType("DT_FLOAT4_E1M2", 41, None, 1, sub_byte=True),
)
"""Every data type the conversions know, in aclDataType order (numpy names: ml_dtypes' for the
narrow floats and ints). opbuild's ops take only the DTYPES below."""

ACL_DATA_TYPES: Final[dict[str, int]] = {
    "ACL_DT_UNDEFINED": -1,
    **{t.acl_name: t.acl for t in CANN_DATA_TYPES if t.acl is not None},
}
"""aclDataType: enumerator -> value (CANN acl_base.h)."""

_CANN_BY_GE_NAME: Final[dict[str, CannDataType]] = {t.ge_name: t for t in CANN_DATA_TYPES}


# ---- dtypes ops take --------------------------------------------------------------------------------

@dataclass(frozen=True)
class DType:
    """A dtype an op can take, and each way it is written.

    name: the spec/runtime name (`float16`), also the numpy / ml_dtypes dtype name;
    ge: the ge::DataType value (simplified keys, TilingContext, ORIG_DTYPE_* macros);
    cann: its CANN enumerators (ge_name `DT_FLOAT16`, acl value and acl_name `ACL_FLOAT16`);
    c_type: the element type in kernel C (opbuild/types.h defines `half` and `bfloat16_t`);
    c_enum: its macro in opbuild/types.h; itemsize: bytes per element;
    kernel_json: the `dtype` of a kernel JSON's supportInfo inputs/outputs;
    ops_info: the spelling in aic-<soc>-ops-info.json. binary_info_config.json writes a dtype
    only inside default-mode simplified keys, as `key_token` (the GE number).
    """

    name: str
    ge: int
    ge_name: str
    c_type: str
    c_enum: str
    itemsize: int
    kernel_json: str
    ops_info: str

    @property
    def cann(self) -> CannDataType:
        return _CANN_BY_GE_NAME[self.ge_name]

    @property
    def acl(self) -> int:
        acl = self.cann.acl
        assert acl is not None
        return acl

    @property
    def acl_name(self) -> str:
        return self.cann.acl_name

    @property
    def key_token(self) -> str:
        """How binary_info_config.json (a default-mode simplified key) writes this dtype."""
        return str(self.ge)

    @cached_property
    def numpy(self) -> np.dtype:
        """The numpy dtype (bfloat16 from ml_dtypes; numpy is imported only when asked for, so the
        CLI and the spec checker load this module cheaply)."""
        import numpy as np

        if self.name == "bfloat16":
            import ml_dtypes

            return np.dtype(ml_dtypes.bfloat16)
        return np.dtype(self.name)


DTYPES: Final[tuple[DType, ...]] = (
    #     name       ge  ge_name       c_type        c_enum                size kernel_json ops_info
    DType("float16", 1, "DT_FLOAT16", "half", "OPBUILD_DT_FLOAT16", 2, "float16", "float16"),
    DType("float32", 0, "DT_FLOAT", "float", "OPBUILD_DT_FLOAT", 4, "float32", "float32"),
    DType("bfloat16", 27, "DT_BF16", "bfloat16_t", "OPBUILD_DT_BF16", 2, "bfloat16", "bfloat16"),
    DType("float64", 11, "DT_DOUBLE", "double", "OPBUILD_DT_DOUBLE", 8, "double", "double"),
    DType("int8", 2, "DT_INT8", "int8_t", "OPBUILD_DT_INT8", 1, "int8", "int8"),
    DType("int16", 6, "DT_INT16", "int16_t", "OPBUILD_DT_INT16", 2, "int16", "int16"),
    DType("int32", 3, "DT_INT32", "int32_t", "OPBUILD_DT_INT32", 4, "int32", "int32"),
    DType("int64", 9, "DT_INT64", "int64_t", "OPBUILD_DT_INT64", 8, "int64", "int64"),
    DType("uint8", 4, "DT_UINT8", "uint8_t", "OPBUILD_DT_UINT8", 1, "uint8", "uint8"),
    DType("uint16", 7, "DT_UINT16", "uint16_t", "OPBUILD_DT_UINT16", 2, "uint16", "uint16"),
    DType("uint32", 8, "DT_UINT32", "uint32_t", "OPBUILD_DT_UINT32", 4, "uint32", "uint32"),
    DType("uint64", 10, "DT_UINT64", "uint64_t", "OPBUILD_DT_UINT64", 8, "uint64", "uint64"),
    DType("bool", 12, "DT_BOOL", "uint8_t", "OPBUILD_DT_BOOL", 1, "bool", "bool"),
)
"""The dtypes ops take, in the order the spec docs and schema list them (floats, signed,
unsigned, bool); DTYPES_BY_GE_ORDER holds the same records in enum order."""

DTYPES_BY_GE_ORDER: Final[tuple[DType, ...]] = tuple(sorted(DTYPES, key=lambda d: d.ge))
DTYPE: Final[dict[str, DType]] = {d.name: d for d in DTYPES}
DTYPE_NAMES: Final[tuple[str, ...]] = tuple(DTYPE)
DTYPE_BY_GE: Final[dict[int, DType]] = {d.ge: d for d in DTYPES_BY_GE_ORDER}
DTYPE_BY_ACL: Final[dict[int, DType]] = {d.acl: d for d in DTYPES_BY_GE_ORDER}
DTYPE_BY_NUMPY: Final[dict[str, DType]] = {d.name: d for d in DTYPES}
"""numpy dtype name (`np.dtype(x).name`; ml_dtypes' bfloat16 is `bfloat16`) -> DType."""

DTYPE_SPELLINGS: Final[dict[str, str]] = {
    **{d.name: d.name for d in DTYPES},
    **{d.ge_name.lower(): d.name for d in DTYPES},
    "fp16": "float16", "half": "float16", "float": "float32", "fp32": "float32", "bf16": "bfloat16",
    "double": "float64", "fp64": "float64",
}
"""Lowercase spellings of a dtype in use elsewhere (msopgen's `type`, GE's DT_ names, torch's and C's
short names) -> the dtype name: msopgen IR JSON reads them, "did you mean" suggests from them."""


# ---- formats -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Format:
    """A storage format an op can take: spec name (also the kernel/ops-info JSON spelling),
    ge::Format value (simplified keys, TilingContext), aclFormat value and opbuild/types.h macro."""

    name: str
    ge: int
    acl: int

    @property
    def c_enum(self) -> str:
        return f"OPBUILD_FORMAT_{self.name}"

    @property
    def acl_name(self) -> str:
        return f"ACL_FORMAT_{self.name}"

    @property
    def key_token(self) -> str:
        return str(self.ge)


FORMATS: Final[tuple[Format, ...]] = (Format("NCHW", 0, 0), Format("NHWC", 1, 1), Format("ND", 2, 2))
FORMAT: Final[dict[str, Format]] = {f.name: f for f in FORMATS}
FORMAT_NAMES: Final[tuple[str, ...]] = tuple(FORMAT)
FORMAT_BY_GE: Final[dict[int, Format]] = {f.ge: f for f in FORMATS}
FORMAT_BY_ACL: Final[dict[int, Format]] = {f.acl: f for f in FORMATS}
DEFAULT_FORMAT: Final[str] = "ND"
"""The format of a tensor that names none (a numpy array, a spec tensor without `formats`)."""

ACL_FORMATS: Final[dict[str, int]] = {
    "ACL_FORMAT_UNDEFINED": -1,
    **{f.acl_name: f.acl for f in FORMATS},
    "ACL_FORMAT_NC1HWC0": 3, "ACL_FORMAT_FRACTAL_Z": 4, "ACL_FORMAT_NC1HWC0_C04": 12, "ACL_FORMAT_HWCN": 16,
    "ACL_FORMAT_NDHWC": 27, "ACL_FORMAT_FRACTAL_NZ": 29, "ACL_FORMAT_NCDHW": 30, "ACL_FORMAT_NDC1HWC0": 32,
    "ACL_FRACTAL_Z_3D": 33, "ACL_FORMAT_NC": 35, "ACL_FORMAT_NCL": 47,
}
"""aclFormat: every enumerator the acl C ABI accepts (acl_base.h); ops run only FORMATS."""


# ---- impl modes --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ImplMode:
    """An impl (precision) mode: spec/runtime name, the `p=` of simplified keys (also
    TilingContext.impl_mode and the .om model's impl_mode), and how asc_opc's `--impl_mode` and
    the kernel JSON's `supportInfo.implMode` write it (default: `optional`, next to a named mode)."""

    name: str
    index: int
    cann: str


IMPL_MODES: Final[tuple[ImplMode, ...]] = (
    ImplMode("default", 0, "optional"),
    ImplMode("high_performance", 1, "high_performance"),
    ImplMode("high_precision", 2, "high_precision"),
)
IMPL_MODE: Final[dict[str, ImplMode]] = {m.name: m for m in IMPL_MODES}
IMPL_MODE_NAMES: Final[tuple[str, ...]] = tuple(IMPL_MODE)
IMPL_MODE_INDEX: Final[dict[str, int]] = {m.name: m.index for m in IMPL_MODES}
IMPL_MODE_BY_INDEX: Final[dict[int, ImplMode]] = {m.index: m for m in IMPL_MODES}
DEFAULT_IMPL_MODE: Final[str] = "high_performance"
"""The impl mode of a call (runtime, .om model) that names none."""
DEFAULT_BINARY_IMPL_MODES: Final[tuple[str, ...]] = ("high_performance", "default")
"""A binary without `impl_mode` gets p=1 and p=0 keys, as `--impl_mode=high_performance,optional`."""


def support_impl_mode(impl_modes: tuple[str, ...]) -> str | None:
    """The kernel JSON's `supportInfo.implMode` (and the per-op config's `implMode`) of a binary:
    its named modes, without `optional` (a kernel built with `--impl_mode=high_performance,optional`
    says "high_performance" and has p=1 and p=0 keys: opbase's QuantBatchMatmulV3 mock; the
    composite engine maps "high_performance,optional" to RESERVED). None (the field is left out,
    as in opbase's Mul mock) when the binary serves only the default mode."""
    named = [IMPL_MODE[m].cann for m in impl_modes if m != "default"]
    return ",".join(named) or None


def impl_mode_string(impl_modes: tuple[str, ...]) -> str:
    """asc_opc's `--impl_mode` option value for a binary's modes.

    The named modes in declaration order, plus `optional` when the binary also serves
    default-mode calls: (high_performance, default) -> "high_performance,optional";
    (high_precision,) -> "high_precision"; (default,) alone -> "".
    """
    named = [IMPL_MODE[m].cann for m in impl_modes if m != "default"]
    if "default" in impl_modes and named:
        named.append(IMPL_MODE["default"].cann)
    return ",".join(named)


# ---- core types --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CoreType:
    """A spec `core_type` and how each output writes it: kernel JSON `core_type` (short),
    binary_info_config.json `coreType` (nnopbase kMix=0, kAicore, kVectorcore), the kernel JSON
    `magic` (the runtime's device-binary magic of the core the kernel runs on: AICUBE for a
    cube-only kernel, AIVEC for a vector-only one, plain ELF for a MIX kernel, as opbase's
    QuantBatchMatmulV3 mock), and the cube:vector `taskRation` (MIX: 1 AIC with 2 AIV on 910B)."""

    name: str
    kernel_json: str
    binary_info_config: int
    magic: str
    task_ration: str


CORE_TYPES: Final[tuple[CoreType, ...]] = (
    CoreType("AiCore", "AIC", 1, "RT_DEV_BINARY_MAGIC_ELF_AICUBE", "1:0"),
    CoreType("VectorCore", "AIV", 2, "RT_DEV_BINARY_MAGIC_ELF_AIVEC", "0:1"),
    CoreType("MIX", "MIX", 0, "RT_DEV_BINARY_MAGIC_ELF", "1:2"),
)
CORE_TYPE: Final[dict[str, CoreType]] = {c.name: c for c in CORE_TYPES}
CORE_TYPE_NAMES: Final[tuple[str, ...]] = tuple(CORE_TYPE)
DEFAULT_CORE_TYPE: Final = "VectorCore"  # (Final without a type: its Literal type, as OpSpec.core_type)


# ---- SoCs --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Soc:
    """A SoC: the short lowercase name (directories, `socs:`, OPBUILD_SOC), asc_opc's
    `--soc_version` (the first chip of the family) and what a tiling function sees of it.

    core_num is the core count a vector kernel tiles for (the AIV cores on 910B-class SoCs, which
    have two vector cores per cube core); cube_core_num is given for completeness.

    The bounds a tiling result is checked against before any launch
    (opbuild/runtime/call/tiling_bounds.py): max_block_dim, the most blocks of one launch (CANN's
    launch limit, 65535: blocks beyond core_num run in waves), and device_memory, the device's
    HBM bytes (no workspace can be larger)."""

    name: str
    soc_version: str
    core_num: int
    ub_size: int
    cube_core_num: int
    vector_core_num: int
    device_memory: int = 64 << 30
    max_block_dim: int = 65535


SOCS: Final[tuple[Soc, ...]] = (
    Soc("ascend910b", "Ascend910B1", core_num=40, ub_size=196608, cube_core_num=20, vector_core_num=40),
    Soc("ascend910_93", "Ascend910_9391", core_num=40, ub_size=196608, cube_core_num=20, vector_core_num=40),
    Soc("ascend310p", "Ascend310P3", core_num=8, ub_size=262144, cube_core_num=8, vector_core_num=8,
        device_memory=24 << 30),
)
SOC: Final[dict[str, Soc]] = {s.name: s for s in SOCS}
SOC_NAMES: Final[tuple[str, ...]] = tuple(SOC)
DEFAULT_SOC: Final[str] = "ascend910b"
"""The SoC of a spec without `socs`, of the runtime without OPBUILD_SOC, and of an .om model."""


def soc_for_chip(chip: str) -> Soc | None:
    """The SoC of a CANN chip name (`--soc_version`, msopgen's `-c ai_core-<chip>`): Ascend910B1,
    Ascend910B3 -> ascend910b; Ascend310P3 -> ascend310p; also the short name itself (ascend910b).
    A chip belongs to the SoC whose name its lowercase spelling starts with (the longest such name)."""
    folded = chip.strip().lower()
    hits = [s for s in SOCS if folded.startswith(s.name)]
    return max(hits, key=lambda s: len(s.name)) if hits else None


# ---- tiling-data field types -----------------------------------------------------------------------

@dataclass(frozen=True)
class TilingFieldType:
    """A `tiling_data` field type of a spec: its C type in `<op>_tiling.h` and its size (= its
    natural alignment on x86_64 / aarch64 LP64). Not a dtype: `float` here is the C float."""

    name: str
    c_type: str
    size: int


TILING_FIELD_TYPES: Final[tuple[TilingFieldType, ...]] = (
    *(TilingFieldType(f"{sign}int{bits}", f"{sign}int{bits}_t", bits // 8)
      for bits in (8, 16, 32, 64) for sign in ("", "u")),
    TilingFieldType("float", "float", 4),
    TilingFieldType("double", "double", 8),
)
TILING_FIELD_TYPE: Final[dict[str, TilingFieldType]] = {t.name: t for t in TILING_FIELD_TYPES}
TILING_FIELD_TYPE_NAMES: Final[tuple[str, ...]] = tuple(TILING_FIELD_TYPE)


# ---- attribute types ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class AttrType:
    """A spec attribute type (`attrs[].type` of op.yaml) and each way it is written or handled.

    element: the type of the value (a scalar type) or of its items (a list type): int, float,
    bool or str; is_list: whether values are lists. tiling: its OPBUILD_ATTR_* value (tiling.h,
    OpbuildAttrValue.type); aclnn_c: the C type of the parameter in an aclnn signature (CANN's
    rules); ops_info: the `type` spelling of aic-<soc>-ops-info.json; key_tag: its tag in the
    op-parameter cache key (OPKEY_* of opbuild/vocabulary_gen.h: the C fast path builds the same words,
    so a tag never changes); torch: the type in a torch.library schema; aicpu: its AICPU_ATTR_*
    value (aicpu.h), None when AI CPU compute functions do not get it (lists); ge_attr: the field
    of GE's AttrDef (a scalar) or AttrDef.ListValue (a list) holding the value in an .om model.

    `check` and `convert` are what a runtime call does with an attribute argument: whether a
    value is one of this type (bool is not a number; numpy scalars are accepted; a float takes an
    int; a list is a list or tuple of such items) and the value as stored (Python scalars; lists
    become tuples).
    """

    name: str
    element: str
    is_list: bool
    tiling: int
    aclnn_c: str
    ops_info: str
    key_tag: int
    torch: str
    aicpu: int | None
    ge_attr: str

    @property
    def c_enum(self) -> str:
        """Its enumerator in opbuild/vocabulary_gen.h (included by opbuild/tiling.h)."""
        return f"OPBUILD_ATTR_{self.name.upper()}"

    @property
    def aicpu_c_enum(self) -> str | None:
        """Its macro in opbuild/vocabulary_gen.h (included by opbuild/aicpu.h) (None when AI CPU ops do not take it)."""
        return None if self.aicpu is None else f"AICPU_ATTR_{self.name.upper()}"

    @property
    def key_tag_c_enum(self) -> str:
        """Its cache-key tag's enumerator in opbuild/vocabulary_gen.h (`OPKEY_INT`, `OPKEY_INTS`)."""
        return f"OPKEY_{self.element.upper()}{'S' if self.is_list else ''}"

    @property
    def aclnn_by_address(self) -> bool:
        """Whether the generated aclnn wrapper passes the argument's address (a C value, not a
        pointer) in the attrs array of opbuild_aclnn_get_workspace_size (aclnn/opbuild_acl.h)."""
        return not self.aclnn_c.endswith("*")

    @cached_property
    def check(self) -> Callable[[Any], bool]:
        """Whether a runtime argument is a value of this type (numpy is imported when first asked)."""
        import numpy as np

        not_bool = (bool, np.bool_)
        item: Callable[[Any], bool] = {
            "int": lambda v: isinstance(v, (int, np.integer)) and not isinstance(v, not_bool),
            "float": lambda v: isinstance(v, (int, float, np.floating, np.integer)) and not isinstance(v, not_bool),
            "bool": lambda v: isinstance(v, not_bool),
            "str": lambda v: isinstance(v, str),
        }[self.element]
        if not self.is_list:
            return item
        return lambda v: isinstance(v, (list, tuple)) and all(item(x) for x in v)

    @cached_property
    def convert(self) -> Callable[[Any], Any]:
        """A checked runtime argument as stored: the Python scalar, or a tuple of them."""
        item: Callable[[Any], Any] = {"int": int, "float": float, "bool": bool, "str": str}[self.element]
        if not self.is_list:
            return item
        return lambda v: tuple(item(x) for x in v)


ATTR_TYPES: Final[tuple[AttrType, ...]] = (
    # name, element, is_list, tiling, aclnn_c, ops_info, key_tag, torch, aicpu, ge_attr
    AttrType("int",        "int",   False, 0, "int64_t",               "int",       16, "int",     0,    "i"),
    AttrType("float",      "float", False, 1, "double",                "float",     17, "float",   1,    "f"),
    AttrType("bool",       "bool",  False, 2, "bool",                  "bool",      18, "bool",    2,    "b"),
    AttrType("str",        "str",   False, 3, "char *",                "str",       19, "str",     3,    "s"),
    AttrType("list_int",   "int",   True,  4, "const aclIntArray *",   "listInt",   20, "int[]",   None, "i"),
    AttrType("list_float", "float", True,  5, "const aclFloatArray *", "listFloat", 21, "float[]", None, "f"),
    AttrType("list_bool",  "bool",  True,  6, "const aclBoolArray *",  "listBool",  22, "bool[]",  None, "b"),
)
"""The spec's attribute types, in the order the spec docs and schema list them (scalars, lists)."""

ATTR_TYPE: Final[dict[str, AttrType]] = {t.name: t for t in ATTR_TYPES}
ATTR_TYPE_NAMES: Final[tuple[str, ...]] = tuple(ATTR_TYPE)


# ---- limits ------------------------------------------------------------------------------------------

MAX_SIMPLIFIED_KEY_LEN: Final[int] = 256
"""Bytes (UTF-8) a GenSimplifiedKey fragment may have: the buffer the runtime gives the callback
(OPBUILD_MAX_SIMPLIFIED_KEY_LEN in opbuild/vocabulary_gen.h; MAX_LEN_SIMPLIFIED_KEY in CANN)."""


# ---- aclnn status codes ------------------------------------------------------------------------------

@dataclass(frozen=True)
class AclnnStatus:
    """An aclnnStatus value: its CANN macro name (aclnn/acl_meta.h), number, and when it is returned."""

    name: str
    code: int
    doc: str


ACLNN_STATUSES: Final[tuple[AclnnStatus, ...]] = (
    AclnnStatus("ACLNN_SUCCESS", 0, "the call succeeded"),
    AclnnStatus("ACLNN_ERR_PARAM_NULLPTR", 161001, "a required pointer argument is NULL"),
    AclnnStatus("ACLNN_ERR_PARAM_INVALID", 161002, "an argument is invalid (dtype, shape, attribute, executor)"),
    AclnnStatus("ACLNN_ERR_RUNTIME_ERROR", 361001, "the device failed (a kernel fault, a launch error)"),
    AclnnStatus("ACLNN_ERR_INNER", 561000, "an internal error (no binary, a tiling failure, out of memory)"),
    AclnnStatus("ACLNN_ERR_INNER_NULLPTR", 561103, "a NULL executor or tensor given to an executor API"),
)
"""The aclnn status codes (CANN's numbers): the C ABI returns them, AclnnError carries them."""

ACLNN_STATUS: Final[dict[str, int]] = {s.name: s.code for s in ACLNN_STATUSES}


# ---- aclError codes -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class AclError:
    """An aclError value: its CANN macro name (acl/acl_base.h, rt_error_codes.h) and number."""

    name: str
    code: int


ACL_ERRORS: Final[tuple[AclError, ...]] = (
    AclError("ACL_SUCCESS", 0),
    AclError("ACL_ERROR_NONE", 0),
    AclError("ACL_ERROR_INVALID_PARAM", 100000),
    AclError("ACL_ERROR_UNINITIALIZE", 100001),
    AclError("ACL_ERROR_REPEAT_INITIALIZE", 100002),
    AclError("ACL_ERROR_INVALID_FILE", 100003),
    AclError("ACL_ERROR_WRITE_FILE", 100004),
    AclError("ACL_ERROR_INVALID_FILE_SIZE", 100005),
    AclError("ACL_ERROR_PARSE_FILE", 100006),
    AclError("ACL_ERROR_FILE_MISSING_ATTR", 100007),
    AclError("ACL_ERROR_FILE_ATTR_INVALID", 100008),
    AclError("ACL_ERROR_INVALID_DUMP_CONFIG", 100009),
    AclError("ACL_ERROR_INVALID_PROFILING_CONFIG", 100010),
    AclError("ACL_ERROR_INVALID_MODEL_ID", 100011),
    AclError("ACL_ERROR_DESERIALIZE_MODEL", 100012),
    AclError("ACL_ERROR_PARSE_MODEL", 100013),
    AclError("ACL_ERROR_READ_MODEL_FAILURE", 100014),
    AclError("ACL_ERROR_MODEL_SIZE_INVALID", 100015),
    AclError("ACL_ERROR_MODEL_MISSING_ATTR", 100016),
    AclError("ACL_ERROR_MODEL_INPUT_NOT_MATCH", 100017),
    AclError("ACL_ERROR_MODEL_OUTPUT_NOT_MATCH", 100018),
    AclError("ACL_ERROR_MODEL_NOT_DYNAMIC", 100019),
    AclError("ACL_ERROR_OP_TYPE_NOT_MATCH", 100020),
    AclError("ACL_ERROR_OP_INPUT_NOT_MATCH", 100021),
    AclError("ACL_ERROR_OP_OUTPUT_NOT_MATCH", 100022),
    AclError("ACL_ERROR_OP_ATTR_NOT_MATCH", 100023),
    AclError("ACL_ERROR_OP_NOT_FOUND", 100024),
    AclError("ACL_ERROR_OP_LOAD_FAILED", 100025),
    AclError("ACL_ERROR_UNSUPPORTED_DATA_TYPE", 100026),
    AclError("ACL_ERROR_FORMAT_NOT_MATCH", 100027),
    AclError("ACL_ERROR_REPEAT_FINALIZE", 100037),
    AclError("ACL_ERROR_BAD_ALLOC", 200000),
    AclError("ACL_ERROR_API_NOT_SUPPORT", 200001),
    AclError("ACL_ERROR_INVALID_DEVICE", 200002),
    AclError("ACL_ERROR_MEMORY_ADDRESS_UNALIGNED", 200003),
    AclError("ACL_ERROR_RESOURCE_NOT_MATCH", 200004),
    AclError("ACL_ERROR_INVALID_RESOURCE_HANDLE", 200005),
    AclError("ACL_ERROR_FEATURE_UNSUPPORTED", 200006),
    AclError("ACL_ERROR_INTERNAL_ERROR", 500000),
    AclError("ACL_ERROR_FAILURE", 500001),
    AclError("ACL_ERROR_RT_FAILURE", 500003),
    AclError("ACL_ERROR_RT_PARAM_INVALID", 107000),
    AclError("ACL_ERROR_RT_INVALID_DEVICEID", 107001),
    AclError("ACL_ERROR_RT_CONTEXT_NULL", 107002),
    AclError("ACL_ERROR_RT_MEMORY_ALLOCATION", 207001),
    AclError("ACL_ERROR_RT_INTERNAL_ERROR", 507000),
    AclError("ACL_ERROR_RT_AICORE_EXCEPTION", 507015),
    AclError("ACL_ERROR_RT_STREAM_SYNC_TIMEOUT", 507046),
    AclError("ACL_ERROR_RT_EVENT_SYNC_TIMEOUT", 507047),
)
"""The aclError codes of the acl C API (CANN's numbers), in the order acl/acl_base.h lists them:
its region is generated from this table, runtime/acl_errors.py reads the ones Python returns."""

ACL_ERROR: Final[dict[str, int]] = {e.name: e.code for e in ACL_ERRORS}


# ---- the op-parameter cache key ----------------------------------------------------------------------

CACHE_KEY_VERSION: Final[int] = 0x4F504B3100000001
"""The first word of every cache key ("OPK1", version 1): native/src/opkey.c and
runtime/call/cache_key.py build the same words."""


@dataclass(frozen=True)
class KeyTag:
    """A tag word of the cache key that is not an attribute's (AttrType.key_tag are those)."""

    name: str
    value: int
    doc: str

    @property
    def c_enum(self) -> str:
        return f"OPKEY_{self.name}"


CACHE_KEY_SLOT_TAGS: Final[tuple[KeyTag, ...]] = (
    KeyTag("ABSENT", 1, "an optional input not given"),
    KeyTag("TENSOR", 2, "a tensor: dtype, format, ndim, dims, strides, storage offset"),
    KeyTag("LIST", 3, "a tensor list: count, then each tensor"),
)
"""The tags of a key's tensor slots; attribute tags (AttrType.key_tag) start at 16."""

CACHE_KEY_ENV_VARS: Final[tuple[str, ...]] = ("OPBUILD_SOC", "ASCEND_CUSTOM_OPP_PATH", "ASCEND_OPP_PATH",
                                               "ASCEND_HOME_PATH")
"""What package resolution and binary selection depend on besides the call: the environment
variables hashed into every cache key's env token (in this order)."""

STAMP_INTERVAL_NS: Final[int] = 1_000_000
"""How often (at most) a cached plan or package lookup re-checks its files' stamp (one stat), per
plan and thread, in Python and in C. File times have a resolution of a few ms (the kernel's coarse
clock), so checking more often could not see more rebuilds; a stat per hit would cost more than
the rest of the hit."""
