"""Semantic validation of an op spec, and the construction of its `OpSpec`.

The JSON Schema checks structure; `SpecChecker` checks what the schema can't say: one namespace
for tensors and attributes, the combination-column rule, shape rules, attribute defaults, source
files and callbacks, every binary's `when`, and keys. It reports every problem it finds (with
the line and column of the offending value) and builds the `OpSpec` only when there are none.

A check runs only when every top-level section it reads passed the schema, so structurally
broken data never crashes a check: its schema errors are reported instead.
"""

from __future__ import annotations

import ast
import keyword
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterable

from opbuild.abi.ascendc_bridge import bridge_symbol
from opbuild.abi.vocabulary import (
    ATTR_TYPE,
    DEFAULT_CORE_TYPE,
    DEFAULT_FORMAT,
    DEFAULT_SOC,
    DTYPE_NAMES,
    FORMAT_NAMES,
    MAX_SIMPLIFIED_KEY_LEN,
)
from opbuild.suggest import closest, did_you_mean

from . import csource
from .errors import JsonPath, Problem
from .fields import AICORE_ONLY, AICORE_REQUIRED, ASCENDC_REPLACES
from .model import (
    DEFAULT_IMPL_MODES,
    DEFAULT_TILING_KEYS,
    Attr,
    Binary,
    Framework,
    KeyRule,
    Mark,
    OnnxOrigin,
    OpSpec,
    Param,
    ShapeRule,
    SourceRef,
    TensorChoice,
    TilingField,
    parse_bound,
)
from .naming import snake_case
from .schema import schema  # its sections are declared in opbuild/spec/fields.py
from .yaml_marks import Marks

MAX_KEY_FRAGMENT_BYTES = MAX_SIMPLIFIED_KEY_LEN
"""GenSimplifiedKey gets a 256-byte buffer (OPBUILD_MAX_SIMPLIFIED_KEY_LEN)."""

DTYPES = DTYPE_NAMES
FORMATS = FORMAT_NAMES

RESERVED_NAMES = frozenset({"workspace", "tiling", "workspace_size", "executor", "stream"})
"""Names the generated kernel and aclnn signatures use themselves."""

C_KEYWORDS = frozenset("""
    auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch typedef
    union unsigned void volatile while bool true false alignas alignof static_assert
    thread_local nullptr typeof
""".split())

def defines_c_function(source_text: str, symbol: str) -> bool:
    """Whether C source text holds a definition (not just a call or prototype) of `symbol`."""
    return csource.definition(csource.c_functions(source_text), symbol) is not None


def _defined(source_text: str) -> list[str]:
    return csource.defined_names(csource.c_functions(source_text))


def coerce_attr_value(attr_type: str, value: Any) -> tuple[bool, Any]:
    """(ok, value as stored): a float accepts an int (stored as float); bool is not a number;
    lists are stored as tuples."""
    kind = ATTR_TYPE.get(attr_type)
    if kind is None:
        return False, value
    if kind.is_list:
        if not isinstance(value, list):
            return False, value
        items = [coerce_attr_value(kind.element, v) for v in value]
        return all(ok for ok, _ in items), tuple(v for _, v in items)
    if isinstance(value, bool):
        return attr_type == "bool", value
    if attr_type == "int":
        return isinstance(value, int), value
    if attr_type == "float":
        return (True, float(value)) if isinstance(value, (int, float)) else (False, value)
    if attr_type == "str":
        return isinstance(value, str), value
    return False, value


def _names(values: Iterable[str]) -> str:
    return ", ".join(values) or "none"


class SpecChecker:
    """Checks one loaded spec; `run()` returns (OpSpec or None, problems)."""

    def __init__(self, data: dict[str, Any], marks: Marks, spec_path: Path, broken: set[str]):
        self.d = data
        self.marks = marks
        self.file = marks.file
        self.spec_path = spec_path
        self.op_dir = spec_path.parent
        self.shown_dir = Path(marks.file).parent  # the op directory as the user named it
        self.broken = broken
        self.problems: list[Problem] = []
        # Filled as the checks go (None: unknown because the section is broken).
        self.params: dict[str, list[Param]] = {}
        self.attrs: list[Attr] | None = None
        self.columns: list[tuple[TensorChoice, ...]] | None = None
        self.tiling_text: str | None = None
        self.key_rule: KeyRule | None = None
        self.sources: dict[str, SourceRef] = {}
        self.binaries: list[Binary] = []
        self.duplicate_names = False
        self.framework = Framework()

    # ---- helpers ---------------------------------------------------------------------------

    def ok(self, *sections: str) -> bool:
        return not (self.broken & set(sections))

    def err(self, path: JsonPath, message: str, *, at_key: bool = False) -> None:
        self.problems.append(self.marks.problem(path, message, at_key=at_key))

    def mark(self, path: JsonPath) -> Mark:
        line, col = self.marks.at(path)
        return Mark(self.file, line, col)

    def line(self, path: JsonPath) -> int:
        return self.marks.at(path)[0]

    @property
    def tensors(self) -> list[Param]:
        return self.params.get("inputs", []) + self.params.get("outputs", [])

    # ---- the checks ------------------------------------------------------------------------

    def run(self) -> tuple[OpSpec | None, list[Problem]]:
        steps: list[tuple[tuple[str, ...], Callable[[], None]]] = [
            (("op",), self.check_location),
            (("package", "domain"), self.check_package),
            (("engine",), self.check_engine),
            (("inputs", "outputs"), self.build_params),
            ((), self.check_names),
            (("attrs",), self.build_attrs),
            (("inputs", "outputs"), self.check_columns),
            (("tiling_data",), self.check_tiling_data),
            (("kernel", "tiling", "host", "compute"), self.check_sources),
            (("tiling",), self.check_tiling_keys),
            (("inputs", "outputs", "attrs", "engine"), self.build_shapes),
            (("simplified_key",), self.build_key_rule),
            (("binaries", "inputs", "outputs", "attrs", "simplified_key"), self.build_binaries),
            (("framework", "inputs", "outputs", "attrs"), self.build_framework),
        ]
        aicore_only = {self.build_key_rule, self.build_binaries}
        for sections, step in steps:
            if step in aicore_only and (self.aicpu or not self.ok("engine") or "binaries" not in self.d):
                continue  # (check_engine reports AI Core sections of an AI CPU op, and missing ones)
            if self.ok(*sections):
                step()
            if step == self.check_names and self.duplicate_names:
                self.broken.add("binaries")  # `when` can't be checked against ambiguous names
        if self.problems or self.broken:
            return None, self.problems
        return self.assemble(), []

    @property
    def aicpu(self) -> bool:
        return self.d.get("engine") == "aicpu"

    @property
    def ascendc(self) -> bool:
        kernel = self.d.get("kernel")
        return isinstance(kernel, dict) and kernel.get("api") == "ascendc"

    def check_engine(self) -> None:
        """An AI CPU op has `compute` and none of the AI Core sections; an AI Core op the reverse."""
        if self.aicpu:
            for section in AICORE_ONLY:
                if section in self.d:
                    self.err((section,), f"{section} is for AI Core ops: an engine: aicpu op runs its compute "
                                         f"function (remove {section})", at_key=True)
            if "compute" not in self.d:
                self.err((), "engine: aicpu needs a compute section: {source: <file.c>, entry: <function>}")
            return
        if "compute" in self.d:
            self.err(("compute",), "compute is for engine: aicpu ops (set engine: aicpu, or remove compute)",
                     at_key=True)
        if self.ascendc:
            for section in ASCENDC_REPLACES:
                if section in self.d:
                    self.err((section,), f"{section} is for C-API ops: an Ascend C op (kernel.api: ascendc) has its "
                                         f"tiling function and tiling data in its host source (remove {section})",
                             at_key=True)
            required = tuple("host" if s == "tiling" else s for s in AICORE_REQUIRED)
        else:
            if "host" in self.d:
                self.err(("host",), "host is for Ascend C ops (set kernel.api: ascendc, or remove host)", at_key=True)
            required = AICORE_REQUIRED
        missing = [s for s in required if s not in self.d]
        for section in missing:
            self.err((), f"missing required field {section!r} (an AI Core op needs {_names(required)}; "
                         f"an engine: aicpu op a compute function instead)")
        self.broken.update(missing)

    def check_location(self) -> None:
        op = self.d["op"]
        want = snake_case(op)
        if self.op_dir.name != want:
            self.err(("op",), f"op {op} must live in a directory named {want} (snake_case of the op), "
                              f"not {self.op_dir.name!r}")

    def check_package(self) -> None:
        if "domain" in self.d and "built-in" not in _packages(self.d):
            self.err(("domain",), "domain is only for package: built-in ops (custom ops live in "
                                  "libcust_opapi.so)", at_key=True)

    def build_params(self) -> None:
        for kind in ("inputs", "outputs"):
            params = []
            for i, item in enumerate(self.d[kind]):
                params.append(Param(
                    name=item["name"],
                    index=i,
                    dtypes=tuple(item["dtypes"]),
                    formats=tuple(item.get("formats", (DEFAULT_FORMAT,))),
                    param_type=item.get("param_type", "required"),
                    is_output=kind == "outputs",
                    mark=self.mark((kind, i)),
                ))
            self.params[kind] = params

    def check_names(self) -> None:
        seen: dict[str, tuple[str, str, JsonPath]] = {}  # upper-cased name -> (kind, name, path)
        for kind in ("inputs", "outputs", "attrs"):
            if not self.ok(kind):
                continue
            for i, item in enumerate(self.d.get(kind, [])):
                name, path = item["name"], (kind, i, "name")
                what = {"inputs": "input", "outputs": "output", "attrs": "attr"}[kind]
                if name.upper() in seen:  # (DTYPE_<NAME> and the other macros upper-case names)
                    self.duplicate_names = True
                    other_kind, other, other_path = seen[name.upper()]
                    same = "" if other == name else f" (as {name.upper()}, the case of generated macros)"
                    self.err(path, f"duplicate name {name!r}: {other_kind} {other!r} at line "
                                   f"{self.line(other_path)} has it already{same} (inputs, outputs and attrs "
                                   f"share one namespace)")
                    continue
                seen[name.upper()] = (what, name, path)
                if name in RESERVED_NAMES:
                    self.err(path, f"{what} name {name!r} is reserved (generated signatures use it); "
                                   f"reserved: {_names(sorted(RESERVED_NAMES))}")
                elif name in C_KEYWORDS or keyword.iskeyword(name):
                    self.err(path, f"{what} name {name!r} is a C or Python keyword")

    def build_attrs(self) -> None:
        attrs = []
        for i, item in enumerate(self.d.get("attrs", [])):
            default = None
            if "default" in item:
                ok, default = coerce_attr_value(item["type"], item["default"])
                if item["default"] is None:
                    self.err(("attrs", i, "default"), f"attr {item['name']!r}: default is null; leave "
                                                       f"`default` out to make the attribute required")
                elif not ok:
                    self.err(("attrs", i, "default"), f"attr {item['name']!r}: default {item['default']!r} "
                                                       f"is not a {item['type']}")
            attrs.append(Attr(name=item["name"], index=i, type=item["type"], default=default,
                              mark=self.mark(("attrs", i))))
        self.attrs = attrs

    def check_columns(self) -> None:
        """The combination-column rule: every dtypes/formats list has 1 entry or N entries."""
        count = max(max(len(p.dtypes), len(p.formats)) for p in self.tensors)
        good = True
        for kind in ("inputs", "outputs"):
            for p in self.params[kind]:
                for field in ("dtypes", "formats"):
                    n = len(getattr(p, field))
                    if n not in (1, count):
                        good = False
                        self.err((kind, p.index, field),
                                 f"{kind[:-1]} {p.name!r} lists {n} {field}, but the op has {count} "
                                 f"dtype/format combinations (the longest list): give 1 entry (used in every "
                                 f"combination) or exactly {count} (one per combination)")
        if not good:
            return
        tensors = self.tensors
        columns = [tuple(TensorChoice(p.dtype_at(c), p.format_at(c)) for p in tensors) for c in range(count)]
        first: dict[tuple[TensorChoice, ...], int] = {}
        for c, column in enumerate(columns):
            if column in first:
                where = next(((("inputs" if not p.is_output else "outputs"), p.index, f)
                              for p in tensors for f in ("dtypes", "formats") if len(getattr(p, f)) == count))
                self.err(where + (c,), f"combination {c} ({self.describe(column)}) repeats combination "
                                       f"{first[column]}")
            else:
                first[column] = c
        self.columns = columns

    def describe(self, choices: Iterable[TensorChoice], names: Iterable[str] | None = None) -> str:
        names = [p.name for p in self.tensors] if names is None else names
        return ", ".join(f"{n}={c.dtype}" + (f"/{c.format}" if c.format else "") for n, c in zip(names, choices, strict=True))

    def check_tiling_data(self) -> None:
        seen: dict[str, int] = {}
        for i, item in enumerate(self.d.get("tiling_data", [])):
            name, path = item["name"], ("tiling_data", i, "name")
            if name in seen:
                self.err(path, f"duplicate tiling_data field {name!r} (first at line {self.line(('tiling_data', seen[name], 'name'))})")
            elif name in C_KEYWORDS:
                self.err(path, f"tiling_data field name {name!r} is a C keyword")
            seen.setdefault(name, i)

    def check_tiling_keys(self) -> None:
        """Declared tiling keys are distinct (their range is the schema's)."""
        if not isinstance(self.d.get("tiling"), dict):
            return
        seen: dict[int, int] = {}
        for i, key in enumerate(self.d["tiling"].get("keys", [])):
            if key in seen:
                first = self.line(("tiling", "keys", seen[key]))
                self.err(("tiling", "keys", i), f"duplicate tiling key {key} (first at line {first})")
            seen.setdefault(key, i)

    def check_sources(self) -> None:
        root = self.op_dir.resolve()
        for section, symbol_field in (("kernel", "entry"), ("tiling", "function"), ("host", None),
                                      ("compute", "entry")):
            if section not in self.d or (section == "compute") != self.aicpu or (section == "host" and not self.ascendc):
                continue  # (check_engine reports a missing or misplaced section)
            source = self.d[section]["source"]
            path = (section, "source")
            if section == "host":  # the model's tiling: the host source and its bridge's tiling function
                self.sources["tiling"] = SourceRef(source, bridge_symbol(snake_case(self.d["op"]), "tiling"))
            else:
                self.sources[section] = SourceRef(source, self.d[section][symbol_field])
            if Path(source).is_absolute():
                self.err(path, f"{section} source {source!r} must be a path relative to the op directory")
                continue
            full = (root / source).resolve()
            if not full.is_relative_to(root):
                link = f" (it resolves to {full})" if (root / source).is_symlink() else ""
                self.err(path, f"{section} source {source!r} leaves the op directory {self.shown_dir}{link}")
            elif not full.is_file():
                self.err(path, f"{section} source {source!r} not found (looked for {self.shown_dir / source})")
            elif section == "tiling":
                try:
                    self.tiling_text = full.read_text(encoding="utf-8", errors="replace")
                except OSError as exc:
                    self.err(path, f"tiling source {source!r} can't be read: {exc.strerror}")
            elif section == "compute":
                self.check_compute_entry(full, source)

    def check_compute_entry(self, full: Path, source: str) -> None:
        """The compute function must be defined (not only declared) in the compute source."""
        try:
            text = full.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            self.err(("compute", "source"), f"compute source {source!r} can't be read: {exc.strerror}")
            return
        entry = self.d["compute"]["entry"]
        if not defines_c_function(text, entry):
            self.err(("compute", "entry"), f"compute function {entry!r} is not defined in compute source {source!r} "
                                           f"(expected `uint32_t {entry}(AicpuContext *ctx) {{ ... }}`)"
                                           f"{did_you_mean(entry, _defined(text))}")

    def build_shapes(self) -> None:
        inputs = {p.name for p in self.params["inputs"]}
        attr_types = {a.name: a.type for a in self.attrs or ()}
        outputs = self.params["outputs"]
        for j, out in enumerate(outputs):
            rule = self.d["outputs"][j].get("shape")
            if rule is None:
                continue
            base = ("outputs", j, "shape")

            def need_input(name: str, path: JsonPath, out: Param = out) -> None:
                if name not in inputs:
                    self.err(path, f"output {out.name!r} shape: {name!r} is not an input of the op "
                                   f"(inputs: {_names(sorted(inputs))}){did_you_mean(name, sorted(inputs))}")

            if "same_as" in rule:
                need_input(rule["same_as"], base + ("same_as",))
                shape = ShapeRule("same_as", (rule["same_as"],))
            elif "broadcast" in rule:
                for k, name in enumerate(rule["broadcast"]):
                    need_input(name, base + ("broadcast", k))
                shape = ShapeRule("broadcast", tuple(rule["broadcast"]))
            elif "reduce" in rule:
                need_input(rule["reduce"], base + ("reduce",))
                for field, want in (("axes", "list_int"), ("keep_dims", "bool")):
                    name = rule[field]
                    if name not in attr_types:
                        self.err(base + (field,), f"output {out.name!r} shape: reduce {field} {name!r} is not "
                                                  f"an attr of the op (attrs: {_names(sorted(attr_types))})"
                                                  f"{did_you_mean(name, sorted(attr_types))}")
                    elif attr_types[name] != want:
                        self.err(base + (field,), f"output {out.name!r} shape: reduce {field} attr {name!r} "
                                                  f"must be of type {want}, not {attr_types[name]}")
                shape = ShapeRule("reduce", (rule["reduce"],), axes_attr=rule["axes"], keep_dims_attr=rule["keep_dims"])
            elif "data_dependent" in rule:
                shape = self.data_dependent_shape(out, base, rule, inputs)
            else:
                symbol = rule["function"]
                if self.aicpu:
                    self.err(base + ("function",), f"output {out.name!r} shape: an engine: aicpu op has no tiling "
                                                   f"library for an infer-shape function; use same_as, broadcast, "
                                                   f"reduce or data_dependent", at_key=True)
                elif self.tiling_text is not None and not defines_c_function(self.tiling_text, symbol):
                    self.err(base + ("function",), f"output {out.name!r} shape function {symbol!r} is not defined "
                                                   f"in tiling source {self.d['tiling']['source']!r}"
                                                   f"{did_you_mean(symbol, _defined(self.tiling_text))}")
                shape = ShapeRule("function", (symbol,))
            outputs[j] = replace(out, shape=shape)

    def data_dependent_shape(self, out: Param, base: JsonPath, rule: dict[str, Any], inputs: set[str]) -> ShapeRule:
        """`{data_dependent: true, max: [...]}`: AI CPU ops only; every bound names an input."""
        if rule["data_dependent"] is not True:
            self.err(base + ("data_dependent",), f"output {out.name!r} shape: data_dependent must be true "
                                                 f"(leave the rule out otherwise)")
        if not self.aicpu:
            self.err(base + ("data_dependent",), f"output {out.name!r} shape: data_dependent shapes need "
                                                 f"engine: aicpu (an AI Core launch has a fixed output size)",
                     at_key=True)
        for k, bound in enumerate(rule["max"]):
            _, name, _ = parse_bound(bound)
            if name is not None and name not in inputs:
                self.err(base + ("max", k), f"output {out.name!r} shape: max {bound!r} names {name!r}, which is not "
                                            f"an input of the op (inputs: {_names(sorted(inputs))})"
                                            f"{did_you_mean(name, sorted(inputs))}")
        return ShapeRule("data_dependent", tuple(" ".join(b.split()) for b in rule["max"]))

    def build_key_rule(self) -> None:
        spec = self.d.get("simplified_key", {})
        mode = spec.get("mode", "default")
        callback = spec.get("callback")
        path = ("simplified_key", "callback")
        if mode == "default":
            if callback is not None:
                self.err(path, f"callback {callback!r} needs mode: customized (the default mode builds "
                               f"the key from every tensor's dtype and format)")
            self.key_rule = KeyRule("default")
            return
        callback = callback or "table"
        if callback == "table":
            self.key_rule = KeyRule("customized", "table")
        elif callback.startswith("c:"):
            symbol = callback[2:]
            self.key_rule = KeyRule("customized", "c", c_symbol=symbol)
            if self.tiling_text is not None and not defines_c_function(self.tiling_text, symbol):
                self.err(path, f"C callback {symbol!r} is not defined in tiling source "
                               f"{self.d['tiling']['source']!r} (expected a function definition "
                               f"`uint32_t {symbol}(TilingContext *ctx, char *key) {{ ... }}`)"
                               f"{did_you_mean(symbol, _defined(self.tiling_text))}")
        else:
            _, module, function = callback.split(":")
            self.key_rule = KeyRule("customized", "python", py_module=module, py_function=function)
            self.check_python_callback(path, module, function)

    def check_python_callback(self, path: JsonPath, module: str, function: str) -> None:
        module_file = self.op_dir / f"{module}.py"
        resolved = module_file.resolve()
        if module_file.exists() and not resolved.is_relative_to(self.op_dir.resolve()):
            # it would be imported at build time and shipped in the package, like a C source outside
            self.err(path, f"Python callback module {module}.py leaves the op directory {self.shown_dir} "
                           f"(it resolves to {resolved}); key rules must live in the op directory")
            return
        if not module_file.is_file():
            self.err(path, f"Python callback module {module}.py not found in the op directory {self.shown_dir}")
            return
        try:
            tree = ast.parse(module_file.read_bytes(), filename=str(module_file))
        except SyntaxError as exc:
            self.err(path, f"Python callback module {module_file}:{exc.lineno}:{exc.offset}: syntax error: {exc.msg}")
            return
        defined = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]
        if function not in defined:
            self.err(path, f"Python callback module {module}.py defines no top-level function {function!r}"
                           f"{did_you_mean(function, defined)}")

    # ---- binaries --------------------------------------------------------------------------

    def build_binaries(self) -> None:
        key_rule = self.key_rule or KeyRule("default")
        tensors = {p.name: p for p in self.tensors}
        attrs = {a.name: a for a in self.attrs or ()}
        names: dict[str, int] = {}
        matched: list[set[int] | None] = []
        for i, item in enumerate(self.d["binaries"]):
            base = ("binaries", i)
            name = item["name"]
            if name in names:
                self.err(base + ("name",), f"duplicate binary name {name!r} (first at line "
                                           f"{self.line(('binaries', names[name], 'name'))})")
            names.setdefault(name, i)
            when, attr_when, good = self.check_when(i, item, tensors, attrs)
            columns = self.matching_columns(i, when) if good else None
            matched.append(columns)
            key = item.get("key")
            if key_rule.mode == "customized":
                if key is None:
                    self.err(base, f"binary {name!r} needs a key: simplified_key mode is customized")
                else:
                    self.check_fragment(base + ("key",), key)
            else:
                if key is not None:
                    self.err(base + ("key",), f"binary {name!r} has a key, but simplified_key mode is default "
                                              f"(keys come from dtypes and formats): remove it or set "
                                              f"simplified_key: {{mode: customized}}", at_key=True)
                if attr_when:
                    attr_path = base + ("when", attr_when[0][0])
                    self.err(attr_path, f"binary {name!r}: attribute conditions in when need simplified_key "
                                        f"mode customized (a default-mode key has no attributes)", at_key=True)
            deterministic = item.get("deterministic", "ignore")
            self.binaries.append(Binary(
                name=name,
                when=when,
                attr_when=attr_when,
                key=key,
                deterministic={True: "true", False: "false"}.get(deterministic, deterministic),
                impl_modes=tuple(item.get("impl_mode", DEFAULT_IMPL_MODES)),
                block_dim=int(item.get("block_dim", -1)),
                mark=self.mark(base),
            ))
        self.check_collisions(key_rule, matched)

    def check_when(self, i: int, item: dict[str, Any], tensors: dict[str, Param], attrs: dict[str, Attr]
                   ) -> tuple[tuple[tuple[str, TensorChoice], ...], tuple[tuple[str, Any], ...], bool]:
        base = ("binaries", i, "when")
        name = item["name"]
        choices: dict[str, TensorChoice] = {}
        attr_values: dict[str, Any] = {}
        suggested: set[str] = set()  # names a misspelt `when` key probably meant
        good = True
        for key, value in item["when"].items():
            path = base + (key,)
            if key in tensors:
                p = tensors[key]
                what = f"{'output' if p.is_output else 'input'} {key!r}"
                if isinstance(value, dict):
                    choice = TensorChoice(value["dtype"], value.get("format"))
                elif isinstance(value, str):
                    choice = TensorChoice(value)
                else:
                    self.err(path, f"binary {name!r}: when {key}: give {what}'s dtype (a string) or "
                                   f"{{dtype, format}}, not {value!r}")
                    good = False
                    continue
                if choice.dtype not in p.dtypes:
                    good = False
                    at = path + ("dtype",) if isinstance(value, dict) else path
                    known = "unknown dtype" if choice.dtype not in DTYPES else "dtype"
                    self.err(at, f"binary {name!r}: {known} {choice.dtype!r} is not declared for {what} "
                                 f"(declared: {_names(dict.fromkeys(p.dtypes))})"
                                 f"{did_you_mean(choice.dtype, p.dtypes if known == 'dtype' else DTYPES)}")
                if choice.format is not None and choice.format not in p.formats:
                    good = False
                    self.err(path + ("format",), f"binary {name!r}: format {choice.format!r} is not declared "
                                                 f"for {what} (declared: {_names(dict.fromkeys(p.formats))})")
                choices[key] = choice
            elif key in attrs:
                a = attrs[key]
                ok, coerced = coerce_attr_value(a.type, value)
                if not ok:
                    self.err(path, f"binary {name!r}: when {key}: {value!r} is not a {a.type} "
                                   f"(attr {key!r} has type {a.type})")
                attr_values[key] = coerced
            else:
                good = False  # (its other binaries' overlaps would only repeat this problem)
                meant = closest(str(key), [*tensors, *attrs])
                if meant is not None:
                    suggested.add(meant)
                self.err(path, f"binary {name!r}: when names {key!r}, which is not an input, output or "
                               f"attr of the op{did_you_mean(str(key), [*tensors, *attrs])}", at_key=True)
        missing = [p.name for p in tensors.values() if p.name not in choices and p.name not in item["when"]]
        if missing:
            good = False
        missing = [m for m in missing if m not in suggested]  # (already said: "did you mean")
        if missing:
            good = False
            self.err(base, f"binary {name!r}: when must give the dtype of every input and output; missing: "
                           f"{_names(missing)}", at_key=True)
        when = tuple((p.name, choices[p.name]) for p in tensors.values() if p.name in choices)
        attr_when = tuple((a.name, attr_values[a.name]) for a in attrs.values() if a.name in attr_values)
        return when, attr_when, good

    def matching_columns(self, i: int, when: tuple[tuple[str, TensorChoice], ...]) -> set[int] | None:
        """The declared combination columns a binary's `when` matches (error when there is none)."""
        if self.columns is None:
            return None
        choices = dict(when)
        names = [p.name for p in self.tensors]
        hits = set()
        for c, column in enumerate(self.columns):
            if all(choices[n].dtype == col.dtype and choices[n].format in (None, col.format)
                   for n, col in zip(names, column, strict=True)):
                hits.add(c)
        if not hits:
            declared = "; ".join(f"({self.describe(col)})" for col in self.columns)
            self.err(("binaries", i, "when"),
                     f"binary {self.d['binaries'][i]['name']!r}: dtype combination "
                     f"({self.describe(choices[n] for n in names)}) is not declared; declared combinations: "
                     f"{declared}", at_key=True)
            return None
        return hits

    def check_fragment(self, path: JsonPath, key: str) -> None:
        size = len(key.encode("utf-8"))
        if not key:
            self.err(path, "key is empty (a customized key fragment needs at least one character)")
        elif size > MAX_KEY_FRAGMENT_BYTES:
            self.err(path, f"key is {size} bytes long; GenSimplifiedKey fragments are at most "
                           f"{MAX_KEY_FRAGMENT_BYTES} bytes")
        elif any(ch.isspace() for ch in key):
            self.err(path, f"key {key!r} contains whitespace")

    def check_collisions(self, key_rule: KeyRule, matched: list[set[int] | None]) -> None:
        """Two binaries must never answer the same full key `Op/d=D,p=P/...`."""
        op = self.d.get("op", "?") if self.ok("op") else "?"
        for j, b in enumerate(self.binaries):
            for i in range(j):
                a = self.binaries[i]
                d = sorted(set(a.d_values) & set(b.d_values))
                p = sorted(set(a.p_values) & set(b.p_values))
                if not d or not p:
                    continue
                dp = f"d={d[0]},p={p[0]}"
                where = f"binary {a.name!r} (line {self.line(('binaries', i))})"
                if key_rule.mode == "customized":
                    if a.key is not None and a.key == b.key:
                        self.err(("binaries", j, "key"), f"duplicate key {b.key!r}: binary {b.name!r} and {where} "
                                                         f"both have the full key {op}/{dp}/{b.key}")
                        continue
                    if key_rule.callback != "table" or a.attr_when != b.attr_when:
                        continue
                overlap = (matched[i] or set()) & (matched[j] or set())
                if overlap:
                    column = self.describe(self.columns[min(overlap)]) if self.columns else ""
                    how = "the key table" if key_rule.mode == "customized" else "the default simplified key"
                    self.err(("binaries", j), f"binary {b.name!r} is ambiguous with {where}: both serve "
                                              f"({column}) with {dp}, and {how} can't tell them apart "
                                              f"(set deterministic or impl_mode to separate them)")

    # ---- framework adapter plugins -----------------------------------------------------------

    def build_framework(self) -> None:
        """The `framework.onnx` entries: names that exist, defaults of the attrs' types, every
        input and output mapped once, and no two entries for one ONNX op with overlapping opsets."""
        inputs = {p.name: p for p in self.params["inputs"]}
        outputs = [p.name for p in self.params["outputs"]]
        attrs = {a.name: a for a in self.attrs or ()}
        origins: list[OnnxOrigin] = []
        for i, item in enumerate(self.d.get("framework", {}).get("onnx", [])):
            base = ("framework", "onnx", i)
            what = f"framework.onnx[{i}] ({item['domain'] if 'domain' in item else 'ai.onnx'}::{item['op_type']})"
            lo, hi = item.get("min_opset", 1), item.get("max_opset")
            if hi is not None and hi < lo:
                self.err(base + ("max_opset",), f"{what}: max_opset {hi} is below min_opset {lo}")
            renamed: dict[str, str] = {}
            for onnx_name, attr in item.get("attrs", {}).items():
                if attr not in attrs:
                    self.err(base + ("attrs", onnx_name), f"{what}: attrs maps ONNX attribute {onnx_name!r} to "
                                                         f"{attr!r}, which is not an attr of the op (attrs: "
                                                         f"{_names(attrs)}){did_you_mean(attr, list(attrs))}")
                elif attr in renamed:
                    self.err(base + ("attrs", onnx_name), f"{what}: ONNX attributes {renamed[attr]!r} and "
                                                         f"{onnx_name!r} both map to attr {attr!r}", at_key=True)
                renamed.setdefault(attr, onnx_name)
            defaults = []
            for attr, value in item.get("defaults", {}).items():
                path = base + ("defaults", attr)
                if attr not in attrs:
                    self.err(path, f"{what}: defaults names {attr!r}, which is not an attr of the op (attrs: "
                                   f"{_names(attrs)}){did_you_mean(attr, list(attrs))}", at_key=True)
                    continue
                ok, coerced = coerce_attr_value(attrs[attr].type, value)
                if not ok:
                    self.err(path, f"{what}: default {value!r} of attr {attr!r} is not a {attrs[attr].type}")
                defaults.append((attr, coerced))
            in_names = list(item.get("inputs", list(inputs)))
            for k, name in enumerate(in_names):
                if name not in inputs and name not in attrs:
                    self.err(base + ("inputs", k), f"{what}: inputs names {name!r}, which is neither an input nor "
                                                   f"an attr of the op{did_you_mean(name, [*inputs, *attrs])}")
                elif name in attrs and name in renamed:
                    self.err(base + ("inputs", k), f"{what}: attr {name!r} comes from ONNX input {k} and from "
                                                   f"ONNX attribute {renamed[name]!r}")
            missing = [n for n, p in inputs.items() if n not in in_names and p.param_type != "optional"]
            if missing:
                self.err(base + (("inputs",) if "inputs" in item else ()),
                         f"{what}: inputs must map every required input of the op; missing: {_names(missing)}",
                         at_key=True)
            dynamic = [n for n in in_names if n in inputs and inputs[n].param_type == "dynamic"]
            if len(dynamic) > 1:
                self.err(base + ("inputs",), f"{what}: more than one dynamic input ({_names(dynamic)}): the ONNX "
                                             f"inputs can't be divided between them", at_key=True)
            out_names = list(item.get("outputs", outputs))
            unknown = False
            for k, name in enumerate(out_names):
                if name not in outputs:
                    unknown = True
                    self.err(base + ("outputs", k), f"{what}: outputs names {name!r}, which is not an output of the "
                                                    f"op (outputs: {_names(outputs)}){did_you_mean(name, outputs)}")
            if not unknown:
                missing_out = [n for n in outputs if n not in out_names]
                if missing_out:
                    self.err(base + ("outputs",), f"{what}: outputs must map every output of the op; missing: "
                                                  f"{_names(missing_out)}", at_key=True)
            origin = OnnxOrigin(op_type=item["op_type"], inputs=tuple(in_names), outputs=tuple(out_names),
                                domain=item.get("domain", "ai.onnx"), min_opset=lo, max_opset=hi,
                                attrs=tuple(item.get("attrs", {}).items()), defaults=tuple(defaults),
                                mark=self.mark(base))
            for j, other in enumerate(origins):
                if other.overlaps(origin):
                    self.err(base, f"{what}: opsets {origin.opset_range()} overlap those of framework.onnx[{j}] "
                                   f"{other.opset_range()} (line {self.line(('framework', 'onnx', j))}) for the "
                                   f"same ONNX op: which one maps a node would be ambiguous")
            origins.append(origin)
        self.framework = Framework(onnx=tuple(origins))

    # ---- the model -------------------------------------------------------------------------

    def assemble(self) -> OpSpec:
        d = self.d
        outputs = tuple(self.params["outputs"])
        functions = [p.shape.operands[0] for p in outputs if p.shape is not None and p.shape.kind == "function"]
        return OpSpec(
            op=d["op"],
            snake=snake_case(d["op"]),
            description=d.get("description", ""),
            inputs=tuple(self.params["inputs"]),
            outputs=outputs,
            attrs=tuple(self.attrs or ()),
            tiling_data=tuple(TilingField(t["name"], t["type"], int(t.get("count", 1)))
                              for t in d.get("tiling_data", [])),
            kernel=self.sources.get("kernel"),
            tiling=self.sources.get("tiling"),
            key_rule=self.key_rule or KeyRule("default"),
            binaries=tuple(self.binaries),
            socs=tuple(d.get("socs", (DEFAULT_SOC,))),
            spec_path=self.spec_path,
            packages=_packages(d),
            domain=d.get("domain"),
            core_type=d.get("core_type", DEFAULT_CORE_TYPE),
            infer_shape=functions[0] if functions else None,
            intercore_sync=bool(d.get("kernel", {}).get("intercore_sync", False)),
            tiling_keys=tuple(d.get("tiling", {}).get("keys", DEFAULT_TILING_KEYS)),
            engine=d.get("engine", "aicore"),
            compute=self.sources.get("compute"),
            framework=self.framework,
            kernel_api=d.get("kernel", {}).get("api", "c"),
        )


def broken_sections(paths: Iterable[JsonPath]) -> set[str]:
    """The top-level sections a list of schema-error paths touches (`*` when the root is broken)."""
    broken: set[str] = set()
    for path in paths:
        broken.add(str(path[0]) if path else "*")
    if "*" in broken:
        broken |= set(schema()["properties"])  # every top-level section
    return broken


__all__ = ["SpecChecker", "broken_sections", "coerce_attr_value", "defines_c_function",
           "DTYPES", "FORMATS", "MAX_KEY_FRAGMENT_BYTES"]


def _packages(d: dict) -> tuple[str, ...]:
    """The `package` field as a tuple (`custom`, `built-in`, or both, in the order written)."""
    value = d.get("package", "custom")
    return (value,) if isinstance(value, str) else tuple(value)
