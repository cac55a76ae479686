"""The typed, immutable op-spec model that every later stage consumes.

A spec file (`ops/<op_snake>/op.yaml`) is loaded and validated by `opbuild.spec.load_spec`; what
comes out is an `OpSpec`. Nothing downstream reads YAML: codegen, the build and the runtime's
key rules only see these frozen dataclasses.

Dtype/format semantics follow CANN's OpDef: each tensor's `dtypes` list is either one entry long
(that dtype in every combination, like `DataTypeList`) or exactly N entries long, where N is the
op's number of declared combinations; column i of all tensors is combination i. `formats` works
the same way. `OpSpec.combinations()` yields the declared columns.

Which spec field each attribute comes from, and its type, are declared in opbuild/spec/fields.py;
tests/spec/test_spec_fields.py fails when a class here and the declarations disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Literal, Sequence, TypeGuard

from opbuild.abi.vocabulary import DEFAULT_BINARY_IMPL_MODES, DEFAULT_CORE_TYPE, IMPL_MODE_INDEX, TILING_FIELD_TYPE

ParamType = Literal["required", "optional", "dynamic"]
TilingFieldTypeName = Literal["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float", "double"]
"""The names of abi.vocabulary.TILING_FIELD_TYPES (tests/spec hold the two equal)."""


def is_tiling_field_type(name: str) -> TypeGuard[TilingFieldTypeName]:
    """`name` is a tiling field type of the vocabulary."""
    return name in TILING_FIELD_TYPE
AttrType = Literal["int", "float", "bool", "str", "list_int", "list_float", "list_bool"]
Deterministic = Literal["ignore", "true", "false"]
ImplMode = Literal["default", "high_performance", "high_precision"]
KeyMode = Literal["default", "customized"]
CallbackKind = Literal["table", "c", "python"]

# IMPL_MODE_INDEX (the `p=` of each impl mode) comes from opbuild.abi.vocabulary; the Literals
# above are written out for type checkers and asserted equal to the vocabulary by
# tests/abi/test_vocabulary.py (AttrType: by tests/abi/test_attr_types.py).
DEFAULT_IMPL_MODES: tuple[str, ...] = DEFAULT_BINARY_IMPL_MODES
"""A binary without `impl_mode` gets p=1 and p=0 keys, as `--impl_mode=high_performance,optional`."""
DEFAULT_TILING_KEYS: tuple[int, ...] = (0,)
"""An op that declares no tiling keys has one, 0: the kernelList of a kernel without TILING_KEY_IS."""


@dataclass(frozen=True)
class Mark:
    """Where something was written: file, 1-based line and column."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class ShapeRule:
    """How an output's shape follows from the inputs.

    kind `same_as` (operands = one input), `broadcast` (operands = inputs, numpy rules),
    `reduce` (operand = one input; axes/keep_dims attrs named by `axes_attr`/`keep_dims_attr`),
    `function` (operands = one C symbol in the tiling library), or `data_dependent` (AI CPU ops:
    operands = the upper bound of each dimension, `N`, `rank(x)`, `size(x)` or `dim(x, i)`; the
    compute function reports the real shape).
    """

    kind: Literal["same_as", "broadcast", "reduce", "function", "data_dependent"]
    operands: tuple[str, ...]
    axes_attr: str | None = None
    keep_dims_attr: str | None = None


def parse_bound(bound: str) -> tuple[str, str | None, int | None]:
    """One `max` entry of a data-dependent shape (already matched by the schema's pattern) as
    (function, input, axis): `7` -> ("", None, 7), `size(x)` -> ("size", "x", None),
    `dim(x, -1)` -> ("dim", "x", -1)."""
    text = "".join(bound.split())
    if text.isdigit():
        return "", None, int(text)
    fn, _, rest = text.partition("(")
    name, _, axis = rest.rstrip(")").partition(",")
    return fn, name, int(axis) if axis else None


@dataclass(frozen=True)
class Param:
    """One IR input or output."""

    name: str
    index: int
    dtypes: tuple[str, ...]
    formats: tuple[str, ...]
    param_type: ParamType
    is_output: bool
    shape: ShapeRule | None = None
    mark: Mark | None = field(default=None, compare=False)

    def dtype_at(self, column: int) -> str:
        return self.dtypes[0] if len(self.dtypes) == 1 else self.dtypes[column]

    def format_at(self, column: int) -> str:
        return self.formats[0] if len(self.formats) == 1 else self.formats[column]


@dataclass(frozen=True)
class Attr:
    """One op attribute; `default is None` means the attribute is required."""

    name: str
    index: int
    type: AttrType
    default: Any = None
    mark: Mark | None = field(default=None, compare=False)

    @property
    def required(self) -> bool:
        return self.default is None


@dataclass(frozen=True)
class TilingField:
    """One member of the op's tiling-data C struct; `count` > 1 makes it an array."""

    name: str
    type: TilingFieldTypeName
    count: int = 1


@dataclass(frozen=True)
class SourceRef:
    """A C source of the op (relative to the op directory) and the symbol it defines."""

    source: str
    symbol: str


@dataclass(frozen=True)
class KeyRule:
    """How GenSimplifiedKey works for this op.

    mode `default` (simplifiedKeyMode 0): dtype,format groups for every input then output.
    mode `customized` (simplifiedKeyMode 2): a fragment from a callback: `table` (generated from
    the binaries' `when` and `key`), `c` (symbol in the tiling library, `uint32_t fn(TilingContext*,
    char*)`), or `python` (module file in the op directory and a function in it).
    """

    mode: KeyMode
    callback: CallbackKind | None = None
    c_symbol: str | None = None
    py_module: str | None = None
    py_function: str | None = None

    @property
    def simplified_key_mode(self) -> int:
        return 2 if self.mode == "customized" else 0

    @property
    def reads_shapes(self) -> bool:
        """Whether the fragment may depend on shapes: a `c` or `python` callback sees the whole
        call; the default groups and the `table` read only dtypes, formats, attributes, d and p,
        so one selection serves every shape with the same ones (the runtime keeps it so)."""
        return self.mode == "customized" and self.callback in ("c", "python")


@dataclass(frozen=True)
class TensorChoice:
    """A binary's condition on one tensor: its dtype, and its format if the binary pins one."""

    dtype: str
    format: str | None = None


@dataclass(frozen=True)
class Binary:
    """One precompiled kernel binary and the calls it serves.

    `when` pins every input and output's dtype (and optionally format); `attr_when` optionally
    pins attribute values (the binary then serves only calls with exactly those values).
    `key` is the customized-mode fragment (None in default mode).
    """

    name: str
    when: tuple[tuple[str, TensorChoice], ...]
    attr_when: tuple[tuple[str, Any], ...] = ()
    key: str | None = None
    deterministic: Deterministic = "ignore"
    impl_modes: tuple[str, ...] = DEFAULT_IMPL_MODES
    block_dim: int = -1
    mark: Mark | None = field(default=None, compare=False)

    def choice(self, tensor: str) -> TensorChoice:
        return dict(self.when)[tensor]

    @property
    def d_values(self) -> tuple[int, ...]:
        return {"ignore": (0, 1), "true": (1,), "false": (0,)}[self.deterministic]

    @property
    def p_values(self) -> tuple[int, ...]:
        return tuple(IMPL_MODE_INDEX[m] for m in self.impl_modes)


@dataclass(frozen=True)
class OnnxOrigin:
    """One ONNX op this op is converted from: an adapter plugin (`framework.onnx` entry).

    A node of `domain`::`op_type` in a model whose opset import for `domain` is in
    [min_opset, max_opset] becomes this op. `attrs` renames ONNX attributes (ONNX name -> attr
    name; an ONNX attribute named like an attr maps to it unrenamed), `defaults` gives an attr
    its value when the node leaves the ONNX attribute out (ONNX's defaults can differ from the
    op's), `inputs`/`outputs` name, in ONNX order, the op's tensor each ONNX input/output is (an
    input may name an attr instead: that input must be a constant whose value is the attr)."""

    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    domain: str = "ai.onnx"
    min_opset: int = 1
    max_opset: int | None = None
    attrs: tuple[tuple[str, str], ...] = ()
    defaults: tuple[tuple[str, Any], ...] = ()
    mark: Mark | None = field(default=None, compare=False)

    def covers(self, opset: int) -> bool:
        return self.min_opset <= opset and (self.max_opset is None or opset <= self.max_opset)

    def overlaps(self, other: "OnnxOrigin") -> bool:
        """Whether both map the same ONNX op for some opset (which one maps a node is ambiguous)."""
        if (self.domain, self.op_type) != (other.domain, other.op_type):
            return False
        inf = float("inf")
        return max(self.min_opset, other.min_opset) <= min(self.max_opset or inf, other.max_opset or inf)

    def opset_range(self) -> str:
        return f"[{self.min_opset}, ∞)" if self.max_opset is None else f"[{self.min_opset}, {self.max_opset}]"


@dataclass(frozen=True)
class Framework:
    """The `framework` section: the framework ops this op is converted from."""

    onnx: tuple[OnnxOrigin, ...] = ()


def _required(ref: SourceRef | None, op: str, section: str) -> SourceRef:
    if ref is None:
        raise ValueError(f"{op}: the op has no {section} section (engine aicore has kernel and tiling, aicpu compute)")
    return ref


@dataclass(frozen=True)
class OpSpec:
    """A whole validated op: the unit every later stage works on."""

    op: str
    snake: str
    description: str
    inputs: tuple[Param, ...]
    outputs: tuple[Param, ...]
    attrs: tuple[Attr, ...]
    tiling_data: tuple[TilingField, ...]
    kernel: SourceRef | None
    tiling: SourceRef | None
    key_rule: KeyRule
    binaries: tuple[Binary, ...]
    socs: tuple[str, ...]
    spec_path: Path
    packages: tuple[str, ...] = ("custom",)
    """`custom`, `built-in`, or both: the op is built into each of these packages."""
    domain: str | None = None
    core_type: Literal["AiCore", "VectorCore", "MIX"] = DEFAULT_CORE_TYPE
    infer_shape: str | None = None
    intercore_sync: bool = False
    """`kernel.intercore_sync`: the kernel uses SyncAll, so all blocks must run concurrently."""
    tiling_keys: tuple[int, ...] = DEFAULT_TILING_KEYS
    """`tiling.keys`: the tiling keys the tiling function may set, each a kernelList entry of every
    binary's kernel JSON (the runtime reads them from there, not from here)."""
    framework: Framework = Framework()
    """Adapter plugins: the ONNX ops `opbuild om build model.onnx` maps to this op."""
    engine: Literal["aicore", "aicpu"] = "aicore"
    """`aicore`: kernel binaries selected by key; `aicpu`: `compute` run by the AI CPU."""
    compute: SourceRef | None = None
    """engine aicpu: the compute source and function (compiled into libcust_aicpu_kernels.so)."""
    kernel_api: Literal["c", "ascendc"] = "c"
    """`kernel.api`: `ascendc` for an Ascend C op, whose `tiling` is its `host` source and the
    bridge's tiling function (`<snake>_opbuild_tiling`), and whose tiling_data and tiling_keys
    are read back from the sources (opbuild/ascendc/lower.py)."""

    tiling_class: str = ""
    """Ascend C ops: the host's tiling class (REGISTER_TILING_DATA_CLASS), the name of the
    kernel-side struct; its fields, padding included, are `tiling_data` (a nested class,
    TILING_DATA_FIELD_DEF_STRUCT, is a uint8 array of its size there)."""
    tiling_header: str = ""
    """Ascend C ops: the kernel-side `<snake>_ascendc_tiling.h`, the host's tiling classes as C++
    structs (nested classes and each tiling key's own class included; opbuild/ascendc/tiling_header.py),
    made from the host description when the op is checked."""

    @property
    def is_ascendc(self) -> bool:
        return self.kernel_api == "ascendc"

    @property
    def is_aicpu(self) -> bool:
        return self.engine == "aicpu"

    @property
    def kernel_ref(self) -> SourceRef:
        """`kernel` of an AI Core op (the checks require it there); ValueError for an AI CPU op."""
        return _required(self.kernel, self.op, "kernel")

    @property
    def tiling_ref(self) -> SourceRef:
        """`tiling` of an AI Core op (the checks require it there); ValueError for an AI CPU op."""
        return _required(self.tiling, self.op, "tiling")

    @property
    def compute_ref(self) -> SourceRef:
        """`compute` of an AI CPU op (the checks require it there); ValueError for an AI Core op."""
        return _required(self.compute, self.op, "compute")

    @property
    def sources(self) -> tuple[SourceRef, ...]:
        """The C sources the op names: kernel and tiling (AI Core), or compute (AI CPU)."""
        return tuple(s for s in (self.kernel, self.tiling, self.compute) if s is not None)

    @property
    def data_dependent(self) -> bool:
        """Some output's shape is known only after the compute function ran."""
        return any(p.shape is not None and p.shape.kind == "data_dependent" for p in self.outputs)

    @property
    def op_dir(self) -> Path:
        return self.spec_path.parent

    @property
    def tensors(self) -> tuple[Param, ...]:
        """Inputs then outputs, the order of key groups and of kernel arguments."""
        return self.inputs + self.outputs

    def param(self, name: str) -> Param:
        for p in self.tensors:
            if p.name == name:
                return p
        raise KeyError(name)

    def attr(self, name: str) -> Attr:
        for a in self.attrs:
            if a.name == name:
                return a
        raise KeyError(name)

    @property
    def combination_count(self) -> int:
        return max(max(len(p.dtypes), len(p.formats)) for p in self.tensors)

    def combinations(self) -> Iterator[dict[str, TensorChoice]]:
        """Every declared dtype/format column, as tensor name -> (dtype, format)."""
        for column in range(self.combination_count):
            yield {p.name: TensorChoice(p.dtype_at(column), p.format_at(column)) for p in self.tensors}

    @property
    def declared_input_dtypes(self) -> str:
        """The declared columns' input dtypes, `x=float16, y=float16; x=float32, y=float32`: the
        "(declared: ...)" of the wrong-dtype message, in the op_proto library's C (codegen/op_proto.py)
        and in the runtime's key lookup alike."""
        return "; ".join(", ".join(f"{p.name}={p.dtype_at(c)}" for p in self.inputs)
                         for c in range(self.combination_count))

    def undeclared_dtypes_message(self, input_dtypes: Sequence[str | None]) -> str | None:
        """The wrong-dtype message when no declared column has these input dtypes (None: one has;
        an absent input, None, matches any), worded as op_proto's infer_dtypes words it."""
        for column in range(self.combination_count):
            if all(dt is None or dt == p.dtype_at(column) for p, dt in zip(self.inputs, input_dtypes, strict=True)):
                return None
        given = ", ".join(f"{p.name}={dt}" for p, dt in zip(self.inputs, input_dtypes, strict=True) if dt is not None)
        return f"{self.op}: no declared dtype combination has {given} (declared: {self.declared_input_dtypes})"

    @property
    def tiling_data_struct(self) -> str:
        return self.tiling_class or f"{self.op}TilingData"
