"""`validate_op`: every check `scons ops` makes of an op that needs no kernel compile.

One function, used by both `opbuild validate` (and so the pre-commit hook) and the build, which
runs it on every spec it has not checked before, before it declares or writes anything:

1. the spec itself (`opbuild.spec.read_spec`: YAML, schema, semantics, sources inside the op
   directory, a Python key rule inside it too); an Ascend C op's sources compiled and read back,
   op.yaml checked against its OpDef, and the spec lowered (opbuild/ascendc/check.py), before
   the checks below (2 and 4 are then part of that);
2. `kernel.entry` defined in the kernel source; `tiling.function`, a C infer-shape function and
   a C key callback defined in the tiling source and exported (`OPBUILD_API`): a declaration that
   does not say OPBUILD_API is confirmed by compiling the tiling source (cached, builder/tiling_lib.py);
   an AI CPU compute function not `static`, and the attributes its source reads by name
   declared by the op with the type the accessor reads (`check_compute_source`);
3. the aclnn C and Python parameter names the op's names derive to (reserved, colliding);
4. the kernel's `TILING_KEY_IS` branches and `tiling.keys` agree (tiling_keys.py);
5. the key/binary consistency check for the default, table, Python and C key rules (a C rule
   runs from the compiled tiling source; a Python rule in a child process limited in time and
   memory, never in this one: key_rule_process.py), each problem located in the author's file
   (key_problems.py).

Every problem is a `Problem` naming op.yaml, the key rule file or the C source at a line and
column, each distinct problem once.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Sequence

from opbuild.abi.package_layout import AICPU_KERNELS_LIB
from opbuild.abi.vocabulary import ATTR_TYPE
from opbuild.spec import csource
from opbuild.spec.errors import JsonPath, Problem
from opbuild.spec.loader import load_specs, read_spec
from opbuild.spec.model import Attr, OpSpec, Param
from opbuild.spec.yaml_marks import Marks
from opbuild.suggest import did_you_mean

AICPU_ATTR_FIELD = {"int": "i", "bool": "i", "float": "f", "str": "s"}
"""The AicpuAttr field (opbuild/aicpu.h) that holds an attribute of each scalar type."""


def validate_op(path: str | os.PathLike[str]) -> tuple[OpSpec | None, list[Problem]]:
    """Check one op.yaml as the build would: (the OpSpec, []) or (None, every problem)."""
    spec, problems, marks = read_spec(path)
    if spec is None or marks is None:
        return None, problems
    if spec.is_ascendc:  # read back and checked against its sources, then lowered (opbuild/ascendc)
        from opbuild.ascendc.check import check_ascendc_op

        spec, problems = check_ascendc_op(spec, marks)
        if spec is None:
            return None, list(dict.fromkeys(problems))
    problems = list(dict.fromkeys(_OpChecks(spec, marks).run()))
    return (None if problems else spec), problems


def validate_ops(paths: Iterable[str | os.PathLike[str]]) -> list[OpSpec]:
    """`load_specs` with `validate_op`: every spec named by `paths`, or SpecError with every
    problem of every file and those between the ops (`spec.project_checks`, as the build)."""
    return load_specs(paths, check=validate_op)


class _OpChecks:
    """The build's checks of one loaded, schema- and semantics-valid spec."""

    def __init__(self, spec: OpSpec, marks: Marks) -> None:
        self.spec = spec
        self.marks = marks
        self.shown_dir = Path(marks.file).parent
        self.problems: list[Problem] = []
        self._compiled = None

    def err(self, path: JsonPath, message: str) -> None:
        self.problems.append(self.marks.problem(path, message))

    def shown(self, source: str) -> str:
        return str(self.shown_dir / source)

    def run(self) -> list[Problem]:
        self.check_names()
        if not self.problems:
            self.check_generated()
        if self.spec.is_aicpu:  # its compute entry was checked with the spec; no key, no tiling
            self.check_compute_source()
            return self.problems
        if self.spec.is_ascendc:  # entry, tiling function and keys: checked against its sources
            if self.spec.key_rule.callback == "c" and self.spec.key_rule.mode == "customized":
                self.err(("simplified_key", "callback"), "a C key callback is not supported for Ascend C ops yet "
                                                         "(use table or python:<module>:<function>)")
            else:
                self.check_keys()
            return self.problems
        self.check_tiling_keys()
        sources_ok = self.check_symbols()
        if sources_ok:
            self.check_keys()
        return self.problems

    # ---- the compiled tiling source (only when needed) --------------------------------------

    def compiled(self):
        if self._compiled is None:
            from opbuild.builder.tiling_lib import Compiled, compile_tiling_source
            from opbuild.builder.toolchain import ToolchainError

            try:
                self._compiled = compile_tiling_source(self.spec, self.shown(self.spec.tiling_ref.source))
            except ToolchainError as exc:  # no C compiler: the build could not check this either
                self._compiled = Compiled(None, (self.marks.problem(
                    ("tiling", "source"), f"cannot compile the tiling source to check it: {exc}"),))
            self.problems.extend(self._compiled.problems)
        return self._compiled

    def exported_symbols(self, names: list[str]) -> set[str] | None:
        """Which of `names` the compiled tiling source exports (None: it does not compile)."""
        import ctypes

        compiled = self.compiled()
        if compiled.library is None:
            return None
        lib = ctypes.CDLL(str(compiled.library), mode=ctypes.RTLD_LOCAL)
        return {n for n in names if hasattr(lib, n)}

    # ---- names -------------------------------------------------------------------------------

    def name_path(self, role: str, name: str) -> JsonPath:
        kinds: dict[str, tuple[str, Sequence[Param | Attr]]] = {
            "input": ("inputs", self.spec.inputs), "output": ("outputs", self.spec.outputs),
            "attr": ("attrs", self.spec.attrs)}
        kind, items = kinds[role]
        index = next(i for i, item in enumerate(items) if item.name == name)
        return (kind, index, "name")

    def check_names(self) -> None:
        from opbuild.codegen.aclnn_c import aclnn_name_problems
        from opbuild.codegen.python_api import python_name_problems

        for param, message in aclnn_name_problems(self.spec):
            self.err(self.name_path(param.role, param.spec_name), message)
        for role, name, message in python_name_problems(self.spec):
            self.err(self.name_path(role, name), message)

    def check_generated(self) -> None:
        """Render (not write) the package's Python aclnn module for this op and compile it: the
        build's generator must not fail mid-build, nor write a module that does not import (a
        SyntaxError there takes down every op of the package). The checks above should catch
        every such spec; this is the net under them. (The C sources are not rendered: their
        Jinja templates cost 50 ms to compile, and the aclnn names they use are checked above.)"""
        from opbuild.codegen.python_api import render_python_api

        try:
            compile(render_python_api([self.spec]), "aclnn_ops.py", "exec")
        except Exception as exc:  # noqa: BLE001 - whatever the generator or the compiler says
            self.err(("op",), f"generating the Python aclnn API of op {self.spec.op} fails: "
                              f"{type(exc).__name__}: {exc}")

    # ---- sources and symbols -----------------------------------------------------------------

    def read(self, source: str) -> str | None:
        try:
            return (self.spec.op_dir / source).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None  # SpecChecker reported it

    def check_symbols(self) -> bool:
        """kernel.entry, tiling.function, a C infer-shape function and a C key callback defined in
        their sources, and the tiling ones exported; False when one is missing (the key check
        then does not run: it would only repeat the problem)."""
        spec = self.spec
        good = True
        kernel_text = self.read(spec.kernel_ref.source)
        if kernel_text is not None:
            functions = csource.c_functions(kernel_text)
            if csource.definition(functions, spec.kernel_ref.symbol) is None:
                good = False
                self.err(("kernel", "entry"),
                         f"kernel.entry {spec.kernel_ref.symbol!r} is not defined in the kernel source "
                         f"{self.shown(spec.kernel_ref.source)} (expected `KERNEL_ENTRY void {spec.kernel_ref.symbol}"
                         f"(GM_ADDR ..., GM_ADDR workspace, GM_ADDR tiling) {{ ... }}`)"
                         f"{did_you_mean(spec.kernel_ref.symbol, csource.defined_names(functions))}")
        tiling_text = self.read(spec.tiling_ref.source)
        if tiling_text is None:
            return False
        functions = csource.c_functions(tiling_text)
        wanted: list[tuple[str, JsonPath, str]] = [("tiling.function", ("tiling", "function"), spec.tiling_ref.symbol)]
        if spec.key_rule.callback == "c" and spec.key_rule.c_symbol:
            wanted.append(("the C key callback", ("simplified_key", "callback"), spec.key_rule.c_symbol))
        unexported = []
        for what, path, symbol in wanted:
            found = csource.definition(functions, symbol)
            if found is None:
                good = False
                if what == "tiling.function":  # (a missing callback or shape function: SpecChecker says so)
                    self.err(path, f"tiling.function {symbol!r} is not defined in the tiling source "
                                   f"{self.shown(spec.tiling_ref.source)} (expected `OPBUILD_API uint32_t {symbol}"
                                   f"(TilingContext *ctx) {{ ... }}`)"
                                   f"{did_you_mean(symbol, csource.defined_names(functions))}")
            elif not csource.declared_exported(functions, symbol):
                unexported.append((what, found))
        if spec.infer_shape:
            found = csource.definition(functions, spec.infer_shape)
            if found is not None and not csource.declared_exported(functions, spec.infer_shape):
                unexported.append(("the infer-shape function", found))
        if unexported:
            exported = self.exported_symbols([f.name for _, f in unexported])
            if exported is None:
                return False  # the compile errors are reported
            for what, f in unexported:
                if f.name in exported:
                    continue  # exported some other way (a macro of the author's, a pragma)
                good = False
                how = "is static" if f.static else "is not declared OPBUILD_API"
                self.problems.append(Problem(
                    self.shown(spec.tiling_ref.source), f.line, f.col,
                    f"{what} {f.name!r} {how}, so the tiling library (built with -fvisibility=hidden) does not "
                    f"export it and the op fails at run time; declare it `OPBUILD_API ... {f.name}(...)`", ""))
        return good

    def check_compute_source(self) -> None:
        """An AI CPU op's compute source: the compute function not `static` (the package's registry
        must call it), and each attribute it reads by name (`aicpu_attr_bool(ctx, "sorted")`) one
        of the op's, of a type that accessor reads: a misspelt name would read 0 at run time."""
        spec = self.spec
        text = self.read(spec.compute_ref.source)
        if text is None:
            return
        shown = self.shown(spec.compute_ref.source)
        found = csource.definition(csource.c_functions(text), spec.compute_ref.symbol)
        if found is not None and found.static:
            self.problems.append(Problem(
                shown, found.line, found.col,
                f"{spec.op}: compute function {spec.compute_ref.symbol!r} is static: {AICPU_KERNELS_LIB}'s registry cannot "
                f"call it (the library would fail to load, for every AI CPU op of the package); remove `static`", ""))
        attrs = {a.name: a for a in spec.attrs}
        for read in csource.aicpu_attr_reads(text):
            attr = attrs.get(read.name)
            if attr is None:
                message = (f"{spec.op}: {read.accessor}() reads attribute {read.name!r}, which the op does not "
                           f"declare (its attrs: {', '.join(attrs) or 'none'}){did_you_mean(read.name, attrs)}")
            elif ATTR_TYPE[attr.type].aicpu is None:
                message = (f"{spec.op}: {read.accessor}() reads attribute {read.name!r}, a {attr.type}: "
                           f"compute functions get scalar and str attributes only")
            elif (want := csource.AICPU_ATTR_FIELDS[read.accessor]) and want != AICPU_ATTR_FIELD.get(attr.type):
                accessor = next((f for f, field in csource.AICPU_ATTR_FIELDS.items()
                                 if field == AICPU_ATTR_FIELD.get(attr.type) and f.endswith(attr.type)), "aicpu_attr")
                message = (f"{spec.op}: {read.accessor}() reads attribute {read.name!r}, a {attr.type} "
                           f"(it would read 0); use {accessor}()")
            else:
                continue
            self.problems.append(Problem(shown, read.line, read.col, message, ""))

    def check_tiling_keys(self) -> None:
        """The kernel's TILING_KEY_IS branches and the spec's tiling.keys agree (tiling_keys.py)."""
        from opbuild.validate.tiling_keys import tiling_key_problems

        text = self.read(self.spec.kernel_ref.source)
        if text is not None:
            self.problems += tiling_key_problems(self.spec, self.marks, text, self.shown(self.spec.kernel_ref.source))

    # ---- keys --------------------------------------------------------------------------------

    def check_keys(self) -> None:
        from opbuild.keys import callback_path, make_fragment_fn
        from opbuild.validate.key_problems import cause_text, key_problems

        spec, rule = self.spec, self.spec.key_rule
        rule_file = c_definition = None
        c_callback = None
        if rule.callback == "python" and rule.mode == "customized" and rule.py_module is not None:
            path = callback_path(spec)
            rule_file = (path.resolve(), self.shown(f"{rule.py_module.replace('.', '/')}.py"))
        elif rule.callback == "c" and rule.mode == "customized":
            from opbuild.runtime.host.c_callbacks import CKeyCallback, TilingLibrary

            compiled = self.compiled()
            if compiled.library is None:
                return
            text = self.read(spec.tiling_ref.source) or ""
            found = csource.definition(csource.c_functions(text), rule.c_symbol or "")
            if found is not None:
                c_definition = (self.shown(spec.tiling_ref.source), found.line, found.col)
            try:
                c_callback = CKeyCallback(TilingLibrary(compiled.library), rule.c_symbol, spec)
            except Exception as exc:  # noqa: BLE001 - e.g. not exported: reported above
                self.err(("simplified_key", "callback"), f"cannot call the C key callback: {exc}")
                return
        if rule_file is not None:  # the author's code: run in a process of its own (key_rule_process.py)
            from opbuild.validate.key_rule_process import isolated_rule_problems

            self.problems += isolated_rule_problems(spec, self.marks, rule_file)
            return
        # a callback itself (not make_fragment_fn's checked wrapper): its own exceptions and
        # fragments reach key_findings, which checks the fragments (and locates them)
        try:
            fragment_fn = c_callback or make_fragment_fn(spec)
        except Exception as exc:  # noqa: BLE001 - the user's callback module: one problem, not a traceback
            self.err(("simplified_key", "callback"), f"cannot load the simplified-key callback: {cause_text(exc)}")
            return
        self.problems += key_problems(spec, self.marks, fragment_fn, rule_file, c_definition)


__all__ = ["validate_op", "validate_ops"]
