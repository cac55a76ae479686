"""An ONNX model as the in-memory `Model` that `opbuild om build` compiles (like CANN's ATC).

What: `onnx_model(path, opp)` parses the file with the `onnx` package and maps every node through
the adapter plugins of the packages installed in the OPP tree (`framework/onnx/
opbuild_onnx_plugins.json`, written by the build from the specs' `framework` sections):
custom packages first, in `vendors/config.ini` load_priority order, then built-in — the order in
which op selection finds ops (`build._Packages`, the runtime's own package discovery).
Initializers and `Constant` nodes become weights; `--input-shape` fixes dynamic dims (ATC's
`--input_shape`).
Why no inference here: the result is a `Model` like a model YAML's, and `build_om` infers every
tensor's dtype and shape with the ops' own rules, selects binaries and packs the .om — one path
for both. Each node carries its origin (ONNX type, opset, plugin package, packages searched),
so every error about it, here or in `build_om`, names them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from opbuild.abi import package_layout as layout
from opbuild.abi.ge_types import dtype_name
from opbuild.abi.vocabulary import DEFAULT_IMPL_MODE, DEFAULT_SOC
from opbuild.codegen.framework_json import PluginFileError, read_onnx_plugins
from opbuild.nonfinite import from_json
from opbuild.om.build import _Packages
from opbuild.om.errors import OmError, one_line
from opbuild.om.model import Model, Node
from opbuild.spec.checks import coerce_attr_value
from opbuild.spec.model import OnnxOrigin, OpSpec

STANDARD_DOMAIN = "ai.onnx"
MAX_FOLDED_ELEMENTS = 1 << 24
"""The largest tensor constant folding makes (elements): a folded node must not blow a model up."""
MAX_ONNX_BYTES = 2 << 30
"""protobuf's own limit on one message (a model with external data is refused, see `_load`)."""


def parse_input_shapes(text: str | None) -> dict[str, tuple[int, ...]]:
    """ATC's `--input_shape` syntax: `x:1,3;y:2,3` (a name may contain ':'; the last one splits)."""
    shapes: dict[str, tuple[int, ...]] = {}
    for part in (text or "").split(";"):
        if not part.strip():
            continue
        name, sep, dims = part.rpartition(":")
        try:
            shape = tuple(int(d) for d in dims.split(",")) if dims.strip() else ()
        except ValueError:
            shape = None
        if not sep or not name or shape is None or any(d < 0 for d in shape):
            raise OmError(f"--input-shape {part!r}: expected NAME:D1,D2,... with non-negative dims")
        if name in shapes:
            raise OmError(f"--input-shape names input {name!r} twice")
        shapes[name] = shape
    return shapes


def _domain(domain: str) -> str:
    return STANDARD_DOMAIN if domain in ("", STANDARD_DOMAIN) else domain


def _onnx():
    try:
        import onnx
    except ImportError:
        raise OmError("converting an ONNX model needs the onnx package: pip install onnx") from None
    return onnx


def _load(path: Path):
    onnx = _onnx()
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise OmError(f"cannot read model {path}: {exc.strerror}") from None
    if size > MAX_ONNX_BYTES:
        raise OmError(f"model {path} is {size} bytes, more than an ONNX protobuf can be ({MAX_ONNX_BYTES})")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError and friends
        raise OmError(f"model {path} is not a valid ONNX model: {exc}") from None
    for init in model.graph.initializer:
        if init.data_location == onnx.TensorProto.EXTERNAL:
            raise OmError(f"model {path}: initializer {init.name!r} keeps its data in an external file; "
                          f"only self-contained models are converted (onnx.save without save_as_external_data)")
    try:
        onnx.checker.check_model(model)
    except Exception as exc:  # noqa: BLE001 - onnx.checker.ValidationError
        raise OmError(f"model {path} fails the ONNX checker: {str(exc).strip()}") from None
    return model


def _dtype(elem_type: int, what: str) -> str:
    onnx = _onnx()
    try:
        return dtype_name(np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type)))
    except (KeyError, ValueError, TypeError):
        name = onnx.TensorProto.DataType.Name(elem_type) if elem_type in onnx.TensorProto.DataType.values() else elem_type
        raise OmError(f"{what}: ONNX dtype {name} is not supported (no dtype of the runtime is it)") from None


def _array(tensor, what: str) -> np.ndarray:
    onnx = _onnx()
    _dtype(tensor.data_type, what)
    try:
        return np.asarray(onnx.numpy_helper.to_array(tensor), order="C")  # (ascontiguousarray would make a scalar 1-d)
    except Exception as exc:  # noqa: BLE001 - numpy_helper's errors on a malformed tensor: one line for the user
        raise OmError(f"{what}: cannot read its data: {exc}") from None


@dataclass
class _Plugin:
    vendor: str
    op: str
    origin: OnnxOrigin


class _Plugins:
    """Every package's ONNX plugins, in op-selection order."""

    def __init__(self, packages: _Packages) -> None:
        self.packages = packages
        self.by_vendor: list[tuple[str, dict[str, Any]]] = []
        for vendor in packages.order:
            path = packages.root(vendor) / layout.onnx_plugins()
            try:
                self.by_vendor.append((vendor, read_onnx_plugins(path)))
            except PluginFileError as exc:
                raise OmError(f"{vendor}: bad ONNX plugin file: {exc}") from None

    def searched(self) -> str:
        if not self.by_vendor:
            return f"none (no packages under {self.packages.opp})"
        return ", ".join(f"{v} ({len(ops)} op(s) with ONNX plugins)" for v, ops in self.by_vendor)

    def find(self, domain: str, op_type: str, opset: int) -> tuple[_Plugin | None, list[_Plugin]]:
        """The first plugin for domain::op_type covering `opset`, and those that map the op type
        for other opsets (for the error)."""
        outside: list[_Plugin] = []
        for vendor, ops in self.by_vendor:
            for op, framework in ops.items():
                for origin in framework.onnx:
                    if (origin.domain, origin.op_type) == (domain, op_type):
                        if origin.covers(opset):
                            return _Plugin(vendor, op, origin), outside
                        outside.append(_Plugin(vendor, op, origin))
        return None, outside


def _attr_value(attr: Any) -> Any:
    onnx = _onnx()
    value = onnx.helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, (list, tuple)):
        return [v.decode("utf-8", errors="replace") if isinstance(v, bytes) else v for v in value]
    return value


def _schema_default(node, opset: int | None, name: str) -> tuple[bool, Any]:
    """(True, value) when ONNX's schema of `node` at `opset` gives attribute `name` a default."""
    onnx = _onnx()
    if opset is None:
        return False, None
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, "" if _domain(node.domain) == STANDARD_DOMAIN else node.domain)
    except onnx.defs.SchemaError:
        return False, None
    attr = schema.attributes.get(name)
    if attr is None or attr.required or not attr.default_value.name:
        return False, None
    return True, _attr_value(attr.default_value)


def _at_schema_default(node, opset: int | None, attr: Any) -> bool:
    """Whether the node's attribute `attr` holds the value ONNX's schema gives it by default: such an
    attribute needs no counterpart in the op (a non-default value still does)."""
    known, default = _schema_default(node, opset, attr.name)
    if not known:
        return False
    value = _attr_value(attr)
    if isinstance(default, float) or isinstance(value, float):
        return bool(np.float32(default) == np.float32(value))
    return value == default


def _as_attr(spec: OpSpec, name: str, value: Any, what: str) -> Any:
    """An ONNX value as the op's attr `name` (an int fills a bool attr: ONNX has no booleans)."""
    attr_type = spec.attr(name).type
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if attr_type == "bool" and isinstance(value, int) and value in (0, 1):
        value = bool(value)
    if attr_type == "list_bool" and isinstance(value, list):
        value = [bool(v) if isinstance(v, int) and v in (0, 1) else v for v in value]
    ok, coerced = coerce_attr_value(attr_type, from_json(attr_type, value))
    if not ok:
        raise OmError(f"{what}: {value!r} is not a {attr_type} (attr {name!r} of {spec.op})")
    return list(coerced) if isinstance(coerced, tuple) else coerced


class _Converter:
    def __init__(self, path: Path, opp: Path, input_shapes: dict[str, tuple[int, ...]], soc: str,
                 custom_roots: Sequence[Path] = (), frozen: dict[str, np.ndarray] | None = None) -> None:
        self.path = path
        self.frozen = dict(frozen or {})
        self.model = _load(path)
        self.packages = _Packages(opp, soc, custom_roots)
        self.plugins = _Plugins(self.packages)
        self.soc = soc
        self.input_shapes = dict(input_shapes)
        self.opsets = {_domain(o.domain): o.version for o in self.model.opset_import}
        self.weights: dict[str, np.ndarray] = {}
        self.defined: set[str] = set()
        self.node_names: set[str] = set()
        self.graph_inputs: set[str] = set()

    def convert(self) -> Model:
        graph = self.model.graph
        for init in graph.initializer:
            self.weights[init.name] = _array(init, f"initializer {init.name!r}")
            self.defined.add(init.name)
        self.freeze(graph)
        inputs = [self.graph_input(v) for v in graph.input if v.name not in self.weights]
        unknown = sorted(set(self.input_shapes) - {name for name, _, _ in inputs})
        if unknown:
            raise OmError(f"--input-shape names {', '.join(unknown)}, not an input of the model "
                          f"(inputs: {', '.join(n for n, _, _ in inputs) or 'none'})")
        nodes = []
        for index, node in enumerate(graph.node):
            converted = self.node(node, index)
            if converted is not None:
                nodes.append(converted)
        outputs = [o.name for o in graph.output]
        for name in outputs:
            if name not in self.defined:
                raise OmError(f"model {self.path}: output {name!r} is no tensor of the graph")
        used = {t for n in nodes for x in n.inputs for t in (x if isinstance(x, list) else [x])} | set(outputs)
        weights = {k: v for k, v in self.weights.items() if k in used}  # constants that became attrs drop out
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", graph.name or self.path.stem)[:31]  # the header's name field
        return Model(name, self.soc, False, DEFAULT_IMPL_MODE, inputs, weights, nodes,
                     outputs, source=self.path)

    def freeze(self, graph) -> None:
        """Make each `--freeze-input` graph input a weight of its given value (checked against the
        input's declared dtype and dims): a constant that may feed attributes and be folded."""
        declared = {v.name: v for v in graph.input if v.name not in self.weights}
        for name, value in self.frozen.items():
            if name not in declared:
                raise OmError(f"--freeze-input {name}: not an input of the model (inputs: "
                              f"{', '.join(declared) or 'none'})")
            if name in self.input_shapes:
                raise OmError(f"--freeze-input {name}: the input also has an --input-shape; give one of them")
            what = f"--freeze-input {name}"
            t = declared[name].type
            if not t.HasField("tensor_type"):
                raise OmError(f"{what}: only tensor inputs can be frozen")
            want = _dtype(t.tensor_type.elem_type, what)
            try:
                got = dtype_name(value.dtype)
            except ValueError:
                got = str(value.dtype)
            if got != want:
                raise OmError(f"{what}: the value is {got}, the model declares {want}")
            dims = [d.dim_value if d.HasField("dim_value") else -1 for d in t.tensor_type.shape.dim]
            if len(dims) != value.ndim or any(d not in (-1, n) for d, n in zip(dims, value.shape, strict=True)):
                raise OmError(f"{what}: the value's shape {list(value.shape)} does not fit the model's "
                              f"{['?' if d == -1 else d for d in dims]}")
            self.weights[name] = np.asarray(value, order="C")
            self.defined.add(name)

    def graph_input(self, value) -> tuple[str, str, tuple[int, ...]]:
        what = f"input {value.name!r}"
        t = value.type
        if not t.HasField("tensor_type"):
            raise OmError(f"{what}: only tensor inputs are supported")
        dtype = _dtype(t.tensor_type.elem_type, what)
        dims = [d.dim_value if d.HasField("dim_value") else -1 for d in t.tensor_type.shape.dim]
        given = self.input_shapes.get(value.name)
        if given is not None:
            if len(given) != len(dims) or any(d not in (-1, g) for d, g in zip(dims, given, strict=True)):
                raise OmError(f"--input-shape {value.name}:{','.join(map(str, given))} does not fit the model's "
                              f"shape {['?' if d == -1 else d for d in dims]} of that input")
            dims = list(given)
        self.defined.add(value.name)
        self.graph_inputs.add(value.name)
        return value.name, dtype, tuple(dims)

    def node_name(self, node, index: int) -> str:
        name = node.name or f"{node.op_type}_{index}"
        while name in self.node_names:
            name = f"{name}_{index}"
        self.node_names.add(name)
        return name

    def node(self, node, index: int) -> Node | None:
        name = self.node_name(node, index)
        domain = _domain(node.domain)
        onnx_op = f"{domain}::{node.op_type}"
        if domain == STANDARD_DOMAIN and node.op_type == "Constant":
            self.constant(node, name)
            return None
        for t in node.input:
            if t and t not in self.defined:
                raise OmError(f"node {name} ({onnx_op}): input {t!r} is not defined before it")
        opset = self.opsets.get(domain)
        if opset is None:
            raise OmError(f"node {name} ({onnx_op}): the model imports no opset of domain {domain}")
        plugin, outside = self.plugins.find(domain, node.op_type, opset)
        if plugin is None and node.input and all(not t or t in self.weights for t in node.input):
            self.fold(node, name, opset)
            return None
        if plugin is None:
            if outside:
                ranges = "; ".join(f"{p.op} of {p.vendor} for opsets {p.origin.opset_range()}" for p in outside)
                raise OmError(f"node {name} ({onnx_op}, opset {opset}): opset {opset} is outside the range of every "
                              f"plugin mapping {onnx_op} ({ranges}); packages searched: {self.plugins.searched()}")
            raise OmError(f"node {name} ({onnx_op}, opset {opset}): no plugin maps {onnx_op}; packages searched: "
                          f"{self.plugins.searched()}")
        origin = plugin.origin
        label = (f"{onnx_op}, opset {opset} -> {plugin.op} of {plugin.vendor}; packages searched: "
                 f"{', '.join(v for v, _ in self.plugins.by_vendor)}")
        where = f"node {name} ({label})"
        try:
            spec = self.packages.op_runtime(plugin.vendor, plugin.op).spec
        except KeyError:
            raise OmError(f"{where}: the package's plugin names {plugin.op}, which its Python module lacks") from None
        attrs = self.attrs(node, spec, origin, where)
        inputs = self.inputs(node, spec, origin, attrs, where)
        outputs = self.outputs(node, spec, origin, name, where)
        return Node(name, plugin.op, inputs, outputs, attrs, plugin.vendor, origin=label)

    def constant(self, node, name: str) -> None:
        onnx = _onnx()
        if len(node.attribute) != 1 or len(node.output) != 1:
            raise OmError(f"node {name} (ai.onnx::Constant): needs exactly one value attribute and one output")
        attr = node.attribute[0]
        what = f"node {name} (ai.onnx::Constant)"
        if attr.name == "value":
            value = _array(attr.t, what)
        elif attr.name in ("value_float", "value_floats"):
            value = np.asarray(onnx.helper.get_attribute_value(attr), np.float32)
        elif attr.name in ("value_int", "value_ints"):
            value = np.asarray(onnx.helper.get_attribute_value(attr), np.int64)
        else:
            raise OmError(f"{what}: attribute {attr.name} is not supported (value, value_float(s), value_int(s) are)")
        self.weights[node.output[0]] = value
        self.defined.add(node.output[0])
        return None

    def fold(self, node, name: str, opset: int) -> None:
        """Evaluate a node no plugin maps whose inputs are all constants (ONNX's reference evaluator)
        into weights, as ATC folds constants: the `axes` of a ReduceSum computed by Cast/Unsqueeze/...
        from an initializer. Its output shapes must be known first and within MAX_FOLDED_ELEMENTS."""
        onnx = _onnx()
        what = f"node {name} ({_domain(node.domain)}::{node.op_type}, opset {opset}, all inputs constant)"
        graph = onnx.helper.make_graph(
            [node], "fold", [], [onnx.helper.make_value_info(o, onnx.TypeProto()) for o in node.output if o],
            [onnx.numpy_helper.from_array(self.weights[t], t) for t in dict.fromkeys(t for t in node.input if t)])
        model = onnx.helper.make_model(graph, opset_imports=list(self.model.opset_import))
        model.ir_version = self.model.ir_version
        try:
            inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
        except Exception as exc:  # noqa: BLE001 - onnx.shape_inference.InferenceError
            raise OmError(f"{what}: cannot fold it: {one_line(str(exc))}") from None
        for value in inferred.graph.output:
            shape = value.type.tensor_type.shape
            if not value.type.HasField("tensor_type") or not shape.dim or not all(
                    d.HasField("dim_value") for d in shape.dim):
                if value.type.HasField("tensor_type") and value.type.tensor_type.HasField("shape") and not shape.dim:
                    continue  # a scalar
                raise OmError(f"{what}: cannot fold it: the shape of {value.name!r} is not known before "
                              f"evaluating it, and no plugin maps {node.op_type}")
            count = int(np.prod([d.dim_value for d in shape.dim], dtype=np.int64))
            if count > MAX_FOLDED_ELEMENTS:
                raise OmError(f"{what}: folding it would make {value.name!r} of {count} elements "
                              f"(more than {MAX_FOLDED_ELEMENTS}); no plugin maps {node.op_type}")
        from onnx.reference import ReferenceEvaluator

        try:
            results = ReferenceEvaluator(model).run(None, {})
        except Exception as exc:  # noqa: BLE001 - any error of the evaluated op
            raise OmError(f"{what}: folding it failed: {type(exc).__name__}: {one_line(str(exc))}") from None
        for output, value in zip((o for o in node.output if o), results, strict=False):
            array = np.asarray(value, order="C")
            _dtype(onnx.helper.np_dtype_to_tensor_dtype(array.dtype), f"{what}: output {output!r}")
            self.weights[output] = array
            self.defined.add(output)
        return None

    def attrs(self, node, spec: OpSpec, origin: OnnxOrigin, where: str) -> dict[str, Any]:
        renames = dict(origin.attrs)
        names = {a.name for a in spec.attrs}
        values: dict[str, Any] = {}
        for attr in node.attribute:
            target = renames.get(attr.name, attr.name if attr.name in names else None)
            if target is None and _at_schema_default(node, self.opsets.get(_domain(node.domain)), attr):
                continue  # (an ONNX attribute spelled out at its default changes nothing)
            if target is None:
                known, default = _schema_default(node, self.opsets.get(_domain(node.domain)), attr.name)
                at = f" = {_attr_value(attr)!r} (ONNX's default {default!r} would be accepted)" if known else ""
                raise OmError(f"{where}: ONNX attribute {attr.name!r}{at} maps to no attr of {spec.op} (its plugin maps "
                              f"{', '.join(sorted(renames)) or 'no attribute'}; attrs: {', '.join(sorted(names)) or 'none'})")
            values[target] = _as_attr(spec, target, _attr_value(attr), f"{where}: attribute {attr.name}")
        for target, value in origin.defaults:
            if target not in values and target in names:
                values[target] = _as_attr(spec, target, value, f"{where}: plugin default of {target}")
        return values

    def inputs(self, node, spec: OpSpec, origin: OnnxOrigin, attrs: dict[str, Any], where: str) -> list[Any]:
        given = list(node.input)
        params = {p.name: p for p in spec.inputs}
        mapped = list(origin.inputs)
        spread = next((i for i, n in enumerate(mapped) if n in params and params[n].param_type == "dynamic"), None)
        if spread is None and len(given) > len(mapped):
            raise OmError(f"{where}: has {len(given)} inputs, the plugin maps {len(mapped)} ({', '.join(mapped)})")
        by_param: dict[str, Any] = {}
        position = 0
        for i, target in enumerate(mapped):
            count = max(len(given) - (len(mapped) - 1), 0) if i == spread else 1
            taken = [t for t in given[position:position + count] if t]
            position += count
            if target in params:
                if params[target].param_type == "dynamic":
                    by_param[target] = taken
                elif taken:
                    by_param[target] = taken[0]
            elif taken:  # an attr from a constant input
                if taken[0] not in self.weights:
                    hint = (f"; it is a graph input: fix its value with --freeze-input {taken[0]}=FILE.npy"
                            if taken[0] in self.graph_inputs else "")
                    raise OmError(f"{where}: input {i} ({taken[0]!r}) gives attr {target!r} and must be a constant "
                                  f"(an initializer, a Constant node, or computed from constants){hint}")
                attrs[target] = _as_attr(spec, target, self.weights[taken[0]], f"{where}: input {taken[0]}")
        out: list[Any] = []
        for p in spec.inputs:
            value = by_param.get(p.name)
            if value in (None, []) and p.param_type != "optional":
                raise OmError(f"{where}: input {p.name!r} of {spec.op} is not given (the plugin maps ONNX inputs "
                              f"to {', '.join(mapped)})")
            out.append(value)
        return out

    def outputs(self, node, spec: OpSpec, origin: OnnxOrigin, name: str, where: str) -> list[str]:
        given = list(node.output)
        if len(given) > len(origin.outputs):
            raise OmError(f"{where}: has {len(given)} outputs, the plugin maps {len(origin.outputs)}")
        by_param = {target: t for target, t in zip(origin.outputs, given, strict=False) if t}
        out = []
        for p in spec.outputs:
            tensor = by_param.get(p.name) or f"{name}:{p.name}"  # an output the graph does not use
            if tensor in self.defined:
                raise OmError(f"{where}: output tensor {tensor!r} is defined twice")
            self.defined.add(tensor)
            out.append(tensor)
        return out


def onnx_model(path: str | Path, opp: str | Path, input_shapes: dict[str, tuple[int, ...]] | None = None,
               soc: str = DEFAULT_SOC, custom_roots: Sequence[Path] = (),
               frozen_inputs: dict[str, np.ndarray] | None = None) -> Model:
    """The `Model` of the ONNX file at `path`, its nodes mapped by the plugins of the vendor
    packages `custom_roots` (first) and the OPP tree `opp`; each graph input named in
    `frozen_inputs` becomes a constant of the value given."""
    return _Converter(Path(path), Path(opp), input_shapes or {}, soc, custom_roots, frozen_inputs).convert()
