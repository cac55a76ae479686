"""The checks that span several ops of a project: what no op.yaml can get wrong on its own.

`project_problems(specs)` is the one place these rules live. `opbuild validate` (through
`load_specs`) and the build (`builder/select.py`, before anything is declared or written) both
run it on every valid spec, so a project that validates does not fail `scons ops` on them:

* an op type is defined by one op.yaml, and two ops never share a snake_case name (the package
  files, the aclnn header `aclnn_<op_snake>.h` and the Python wrapper `<op_snake>()` are named
  by it);
* in each package (custom, built-in) every name that one library links is defined once:
  - the aclnn API (libcust_opapi.so / libopapi.so, aclnn_ops.py): `aclnn<Op>GetWorkspaceSize`
    and `aclnn<Op>` of every op (`FooGetWorkspaceSize`'s `aclnn<Op>` is `Foo`'s phase 1);
  - the tiling library: the AI Core ops' `tiling.function`, C infer-shape functions and C key
    callbacks, every other global function of their tiling sources, and the generated
    `<Op>InferShape` / `<Op>InferDataType` of every op of the package (op_proto);
  - the AI CPU kernel library: the AI CPU ops' `compute.entry`, every other global function of
    their compute sources, and the generated registry's `RunCpuKernel`, `opbuild_aicpu_kernels`;
* in each package, the `framework.onnx` entries of two ops never map the same ONNX op for a
  common opset (`OnnxOrigin.overlaps`): which op a node becomes would depend on the order of the
  package's plugin file. (Two entries of one op: `SpecChecker.build_framework`.)

Every problem points at the spec key (or, for a helper function, the C source line) of the op
that clashes with an earlier one, and names the earlier op with its file:line:col; all of them
are reported at once. Positions come from reading the op.yaml again (only when there is a
problem): specs from the shared build cache carry no marks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from . import csource
from .errors import JsonPath, Problem
from .model import OpSpec
from .yaml_marks import MAX_YAML_BYTES, Marks, load_yaml

PACKAGES = ("custom", "built-in")
"""The packages an op can go into (`package:`); names clash only inside one of them."""
FILE_NAMES = "the ops' file names"
ACLNN_API = "the aclnn API"
MAX_SOURCE_BYTES = 4 << 20
"""A C source larger than this is read only this far (its functions beyond are not seen)."""


def project_problems(specs: Sequence[OpSpec]) -> list[Problem]:
    """Every problem between the ops `specs` (each valid on its own); [] when they fit together."""
    files = _Files()
    problems: list[Problem] = []
    first: dict[str, OpSpec] = {}
    distinct: list[OpSpec] = []
    for spec in specs:  # an op defined twice would clash on every name below: say it once
        if spec.op in first:
            problems.append(files.problem(spec, ("op",), f"op {spec.op} is also defined in "
                                                         f"{files.at(first[spec.op], ('op',))}"))
        else:
            first[spec.op] = spec
            distinct.append(spec)
    problems += [_clash(files, claim, earlier, ()) for claim, earlier in _clashing(_snake_claims(distinct))]
    clashes: dict[tuple, tuple[_Claim, _Claim, list[str]]] = {}  # (two ops in both packages: said once)
    for package in PACKAGES:
        for claim, earlier in _clashing(_package_claims(files, [s for s in distinct if package in s.packages])):
            clashes.setdefault((claim.key, earlier.key), (claim, earlier, []))[2].append(package)
    problems += [_clash(files, claim, earlier, packages) for claim, earlier, packages in clashes.values()]
    problems += _onnx_overlaps(files, distinct)
    return list(dict.fromkeys(problems))


# ~~~ names a library defines ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~


@dataclass(frozen=True)
class _Claim:
    """`spec` (None: generated code of no op) defines `name` in `space` (a library, a file tree),
    written at `path` of its op.yaml, or at `source` (file as shown, line, col) of a C source."""

    space: str
    name: str
    spec: OpSpec | None = field(compare=False)
    what: str
    path: JsonPath = ("op",)
    source: tuple[str, int, int] | None = None
    generated: bool = False

    @property
    def op_spec(self) -> OpSpec:
        """The op whose files make the claim (generated code's claims, of no op, are listed first:
        never the later of two clashing claims, the one a problem is reported at)."""
        if self.spec is None:
            raise ValueError(f"{self.what} {self.name!r}: generated, of no op")
        return self.spec

    @property
    def key(self) -> tuple:
        return self.space, self.name, self.definer, self.path, self.source

    @property
    def definer(self) -> tuple[int, bool]:
        """Claims of one definer are one definition (an op's tiling.function may be its C key
        callback too); an op's generated code and its own source are two."""
        return id(self.spec), self.generated


def _snake_claims(specs: Iterable[OpSpec]) -> list[_Claim]:
    return [_Claim(FILE_NAMES, s.snake, s, "the snake_case name", generated=True) for s in specs]


def _package_claims(files: "_Files", specs: list[OpSpec]) -> list[_Claim]:
    """What the libraries of one package define, each name with who defines it."""
    from opbuild.abi.package_layout import AICPU_KERNELS_LIB, tiling_lib
    from opbuild.abi.symbols import AICPU_FUNCTION_NAME as FUNCTION_NAME
    from opbuild.abi.symbols import AICPU_REGISTRY_SYMBOL as REGISTRY_SYMBOL
    from opbuild.abi.symbols import infer_dtype_symbol, infer_shape_symbol

    aclnn, tiling, aicpu = ACLNN_API, Path(tiling_lib()).name, AICPU_KERNELS_LIB
    claims: list[_Claim] = []
    for spec in specs:
        claims += [_Claim(aclnn, name, spec, f"the aclnn phase-{phase} function", generated=True)
                   for phase, name in ((1, f"aclnn{spec.op}GetWorkspaceSize"), (2, f"aclnn{spec.op}"))]
    aicore = [s for s in specs if not s.is_aicpu]
    if aicore:  # (op_proto.c is linked into the tiling library, with the inference of every op)
        for spec in specs:
            claims += [_Claim(tiling, symbol(spec.op), spec, f"the generated infer-{what} function", generated=True)
                       for what, symbol in (("shape", infer_shape_symbol), ("dtype", infer_dtype_symbol))]
    for spec in aicore:
        declared: dict[str, tuple[str, JsonPath]] = {spec.tiling_ref.symbol: ("tiling.function", ("tiling", "function"))}
        for j, out in enumerate(spec.outputs):
            if out.shape is not None and out.shape.kind == "function":
                declared.setdefault(out.shape.operands[0], (f"output {out.name!r} shape function",
                                                            ("outputs", j, "shape", "function")))
        if spec.key_rule.callback == "c" and spec.key_rule.c_symbol:
            declared.setdefault(spec.key_rule.c_symbol, ("the C key callback", ("simplified_key", "callback")))
        claims += _source_claims(files, tiling, spec, spec.tiling_ref.source, declared)
    if any(s.is_aicpu for s in specs):
        claims += [_Claim(aicpu, name, None, "the generated AI CPU kernel registry", generated=True)
                   for name in (FUNCTION_NAME, REGISTRY_SYMBOL)]
    for spec in (s for s in specs if s.is_aicpu):
        entry: dict[str, tuple[str, JsonPath]] = {spec.compute_ref.symbol: ("compute.entry", ("compute", "entry"))}
        claims += _source_claims(files, aicpu, spec, spec.compute_ref.source, entry)
    return claims


def _source_claims(files: "_Files", space: str, spec: OpSpec, source: str,
                   declared: dict[str, tuple[str, JsonPath]]) -> list[_Claim]:
    """The names one op's C source gives `space`: those its spec declares (at their spec key),
    and every other function the linker takes as a global symbol (at its line in the source)."""
    claims = [_Claim(space, name, spec, what, path) for name, (what, path) in declared.items()]
    for f in files.global_functions(os.path.join(spec.op_dir, source)):
        if f.name not in declared:
            shown = os.path.join(os.path.dirname(_shown(spec)), source)
            claims.append(_Claim(space, f.name, spec, f"{source}'s global function", source=(shown, f.line, f.col)))
    return claims


def _read_global_functions(path: str) -> tuple[csource.CFunction, ...]:
    try:
        with open(path, "rb") as f:
            text = f.read(MAX_SOURCE_BYTES + 1).decode("utf-8", errors="replace")
    except OSError:
        return ()  # (read when the spec was checked; the build's compile names the problem)
    return tuple(csource.global_functions(text))


def _clashing(claims: list[_Claim]) -> Iterator[tuple[_Claim, _Claim]]:
    """(claim, the earlier one) for each claim of a name another definer claimed first in its space."""
    first: dict[tuple[str, str], _Claim] = {}
    for claim in claims:
        earlier = first.setdefault((claim.space, claim.name), claim)
        if earlier.definer != claim.definer:
            yield claim, earlier


def _clash(files: "_Files", claim: _Claim, earlier: _Claim, packages: Sequence[str]) -> Problem:
    """The problem at `claim`, naming `earlier` (`packages`: where both are; () for a space of
    the whole project)."""
    by = earlier.what if earlier.spec is None else f"{earlier.what} of op {earlier.spec.op} ({files.claim_at(earlier)})"
    scope = f" in {claim.space} of the {' and '.join(packages)} package{'s' * (len(packages) > 1)}" if packages else ""
    return files.claim_problem(claim, f"{claim.what} {claim.name!r} of op {claim.op_spec.op} clashes with {by}{scope}: "
                                      f"{_consequence(claim)}")


def _consequence(claim: _Claim) -> str:
    if claim.space == FILE_NAMES:
        return "their generated files and Python wrappers would overwrite each other (rename one op)"
    if claim.space == ACLNN_API:
        return "the aclnn library and aclnn_ops.py would define the name twice (rename one op)"
    fix = "make one static or rename it" if claim.source is not None else "rename one"
    return f"the library would get two definitions and fail to link ({fix})"


# ~~~ ONNX adapter plugins ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~


def _onnx_overlaps(files: "_Files", specs: list[OpSpec]) -> list[Problem]:
    """Two ops of one package mapping the same ONNX op for a common opset (each pair once, at
    the later op's entry)."""
    problems = []
    seen: dict[tuple[str, str], list[tuple[OpSpec, int]]] = {}  # ONNX op -> the entries so far
    for spec in specs:
        for i, origin in enumerate(spec.framework.onnx):
            earlier_entries = seen.setdefault((origin.domain, origin.op_type), [])
            for other, k in earlier_entries:
                earlier = other.framework.onnx[k]
                packages = [p for p in PACKAGES if p in spec.packages and p in other.packages]
                if other is spec or not packages or not earlier.overlaps(origin):
                    continue  # (two entries of one op: SpecChecker.build_framework)
                scope = " and ".join(packages) + (" packages" if len(packages) > 1 else " package")
                problems.append(files.problem(spec, ("framework", "onnx", i), (
                    f"framework.onnx[{i}] of op {spec.op} (opsets {origin.opset_range()}) and framework.onnx[{k}] of "
                    f"op {other.op} (opsets {earlier.opset_range()}, {files.at(other, ('framework', 'onnx', k))}) both "
                    f"map {origin.domain}::{origin.op_type} in the {scope}: which op a node of opset "
                    f"{max(origin.min_opset, earlier.min_opset)} becomes would be ambiguous (make the opset ranges "
                    f"disjoint, or put the ops in different packages)")))
            earlier_entries.append((spec, i))
    return problems


# ~~~ positions ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~


def _shown(spec: OpSpec) -> str:
    """The spec's file as its other problems name it: as the user named it where a mark of the
    model remembers that, else relative to the working directory when inside it."""
    marks = [*(p.mark for p in spec.tensors), *(a.mark for a in spec.attrs), *(b.mark for b in spec.binaries),
             *(o.mark for o in spec.framework.onnx)]
    mark = next((m for m in marks if m), None)
    if mark is not None:
        return mark.file
    try:
        return str(spec.spec_path.relative_to(Path.cwd()))
    except ValueError:
        return os.fspath(spec.spec_path)


class _Files:
    """What `project_problems` reads, each file once: the global functions of the ops' C sources
    (an op may be in both packages), and file:line:col of spec keys (each op.yaml read again,
    only on the error path)."""

    def __init__(self) -> None:
        self._marks: dict[Path, Marks] = {}
        self._functions: dict[str, tuple[csource.CFunction, ...]] = {}

    def global_functions(self, path: str) -> tuple[csource.CFunction, ...]:
        if path not in self._functions:
            self._functions[path] = _read_global_functions(path)
        return self._functions[path]

    def marks(self, spec: OpSpec) -> Marks:
        if spec.spec_path not in self._marks:
            marks = Marks(_shown(spec))
            try:
                with open(spec.spec_path, "rb") as f:
                    _, marks, _ = load_yaml(f.read(MAX_YAML_BYTES + 1).decode("utf-8", errors="replace"), marks.file)
            except OSError:
                pass  # (gone since it was checked: the problem names the file at line 1)
            self._marks[spec.spec_path] = marks
        return self._marks[spec.spec_path]

    def problem(self, spec: OpSpec, path: JsonPath, message: str) -> Problem:
        return self.marks(spec).problem(path, message)

    def at(self, spec: OpSpec, path: JsonPath) -> str:
        marks = self.marks(spec)
        line, col = marks.at(path)
        return f"{marks.file}:{line}:{col}"

    def claim_problem(self, claim: _Claim, message: str) -> Problem:
        if claim.source is not None:
            return Problem(*claim.source, message, "")
        return self.problem(claim.op_spec, claim.path, message)

    def claim_at(self, claim: _Claim) -> str:
        if claim.source is not None:
            return ":".join(map(str, claim.source))
        return self.at(claim.op_spec, claim.path)


__all__ = ["PACKAGES", "project_problems"]
