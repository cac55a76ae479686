"""The aclnn C API of an op: `op_api/include/aclnn_<op_snake>.h` and its C wrapper source.

Naming follows CANN's op_build (docs/capi.md): file `aclnn_<op_snake>.h`, guard
`ACLNN_<OP_SNAKE_UPPER>_H_`, functions `aclnn<Op>GetWorkspaceSize(<inputs>, <attrs>, <outputs>,
uint64_t *workspaceSize, aclOpExecutor **executor)` and `aclnn<Op>(void *workspace, uint64_t
workspaceSize, aclOpExecutor *executor, aclrtStream stream)`, each declared with default
visibility. Parameters are camelCase; inputs are `const aclTensor *` (dynamic: `const
aclTensorList *`; optional: `<name>Optional`); attrs are int64_t / double / bool / char * /
`const acl{Int,Float,Bool}Array *`; a single output is `out`, several are `<name>Out`.

The wrapper source checks its pointers (161001, ACLNN_ERR_PARAM_NULLPTR) and calls the acl
library's bridge (aclnn/opbuild_acl.h). Every op's wrapper is compiled into the package's
`op_api/lib/libcust_opapi.so` with `opbuild.abi.native_libs.opapi_command`.
"""

from __future__ import annotations

from dataclasses import dataclass

from opbuild import nonfinite
from opbuild.abi.vocabulary import ATTR_TYPES
from opbuild.codegen.env import template
from opbuild.codegen.naming import c_string, spec_display_path
from opbuild.codegen.python_api import camel_case, output_names
from opbuild.spec.model import OpSpec

DEFAULT_ROOT_HINT = "../.."
"""The package root relative to op_api/lib/ (where libcust_opapi.so is)."""

ATTR_C_TYPE: dict[str, str] = {t.name: t.aclnn_c for t in ATTR_TYPES}
"""C type of each attribute type in an aclnn signature (CANN's rules; vocabulary.AttrType.aclnn_c)."""

_SCALAR_ATTRS = tuple(t.name for t in ATTR_TYPES if t.aclnn_by_address)
"""The attribute types passed by address in the attrs array (a C value, not a pointer)."""
_RESERVED = {"workspaceSize", "executor", "workspace", "stream", "api", "root", "inputs", "attrs", "outputs"}
_C_KEYWORDS = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
    "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
    "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "bool",
    "class", "delete", "new", "operator", "private", "protected", "public", "template", "this", "throw", "try",
    "catch", "namespace", "using", "virtual", "friend", "mutable", "explicit", "export", "typename", "true", "false",
}


class AclnnNameError(ValueError):
    """An op whose aclnn parameter names collide or are not valid C/C++ identifiers."""


@dataclass(frozen=True)
class CParam:
    """One parameter of aclnn<Op>GetWorkspaceSize."""

    name: str          # the aclnn (camelCase) name
    c_type: str        # e.g. "const aclTensor *", "double"
    role: str          # "input" | "attr" | "output"
    spec_name: str     # the name in op.yaml
    null_check: bool   # the wrapper rejects NULL (161001)
    arg: str           # how the wrapper passes it to the bridge
    doc: str

    @property
    def decl(self) -> str:
        sep = "" if self.c_type.endswith("*") else " "
        return f"{self.c_type}{sep}{self.name}"


def header_name(spec: OpSpec) -> str:
    return f"aclnn_{spec.snake}.h"


def source_name(spec: OpSpec) -> str:
    return f"aclnn_{spec.snake}.c"


def header_guard(spec: OpSpec) -> str:
    return f"ACLNN_{spec.snake.upper()}_H_"


def aclnn_params(spec: OpSpec, check: bool = True) -> list[CParam]:
    """The phase-1 parameters in order: inputs, attrs, outputs (without workspaceSize/executor).
    With `check`, AclnnNameError on the first unusable name (see aclnn_name_problems)."""
    params: list[CParam] = []
    for p in spec.inputs:
        if p.param_type == "dynamic":
            params.append(CParam(camel_case(p.name), "const aclTensorList *", "input", p.name, True, camel_case(p.name),
                                 f"input '{p.name}', a tensor list ({', '.join(sorted(set(p.dtypes)))})"))
        elif p.param_type == "optional":
            name = camel_case(p.name) + "Optional"
            params.append(CParam(name, "const aclTensor *", "input", p.name, False, name,
                                 f"optional input '{p.name}' ({', '.join(sorted(set(p.dtypes)))}; NULL: absent)"))
        else:
            params.append(CParam(camel_case(p.name), "const aclTensor *", "input", p.name, True, camel_case(p.name),
                                 f"input '{p.name}' ({', '.join(sorted(set(p.dtypes)))})"))
    for a in spec.attrs:
        name = camel_case(a.name)
        scalar = a.type in _SCALAR_ATTRS
        default = "" if a.required else (" (NULL: the default)" if not scalar else "")
        params.append(CParam(name, ATTR_C_TYPE[a.type], "attr", a.name, not scalar and a.required,
                             f"&{name}" if scalar else name,
                             f"attribute '{a.name}', {a.type}{'' if a.required else f', default {_value(a.default)}'}{default}"))
    for p, name in zip(spec.outputs, output_names(spec), strict=True):
        params.append(CParam(name, "const aclTensor *", "output", p.name, True, name,
                             f"output '{p.name}' ({', '.join(sorted(set(p.dtypes)))})"))
    if check:
        _check_names(spec, params)
    return params


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, str):
        return '"' + value.replace("*/", "* /") + '"'
    return nonfinite.text(value) if isinstance(value, float) else repr(value)


def aclnn_name_problems(spec: OpSpec, params: list[CParam] | None = None) -> list[tuple[CParam, str]]:
    """(parameter, message) for every aclnn parameter name that is not a C identifier, is reserved
    in the aclnn C API, or collides with another one; [] when all are usable. `opbuild validate`
    reports each at the spec's name; codegen raises on the first."""
    if params is None:
        params = aclnn_params(spec, check=False)
    problems: list[tuple[CParam, str]] = []
    seen: dict[str, str] = {}
    for p in params:
        what = f"{p.role} '{p.spec_name}' gives the aclnn parameter name {p.name!r}"
        if not p.name.isidentifier() or not p.name.isascii():
            problems.append((p, f"{what}, which is not a C identifier"))
        elif p.name in _C_KEYWORDS or p.name in _RESERVED:
            problems.append((p, f"{what}, which is reserved in the aclnn C API "
                                f"(reserved: {', '.join(sorted(_RESERVED))}, and C/C++ keywords); rename it"))
        elif p.name in seen:
            problems.append((p, f"{p.role} '{p.spec_name}' and {seen[p.name]} both give the aclnn parameter name "
                                f"{p.name!r}; rename one"))
        seen.setdefault(p.name, f"{p.role} '{p.spec_name}'")
    return problems


def _check_names(spec: OpSpec, params: list[CParam]) -> None:
    for _param, message in aclnn_name_problems(spec, params)[:1]:
        raise AclnnNameError(f"{spec.op} ({spec_display_path(spec)}): {message}")


def _context(spec: OpSpec) -> dict:
    params = aclnn_params(spec)
    return {
        "op": spec.op,
        "snake": spec.snake,
        "description": spec.description.replace("*/", "* /"),
        "spec_path": spec_display_path(spec),
        "header_name": header_name(spec),
        "source_name": source_name(spec),
        "guard": header_guard(spec),
        "params": params,
        "inputs": [p for p in params if p.role == "input"],
        "attrs": [p for p in params if p.role == "attr"],
        "outputs": [p for p in params if p.role == "output"],
    }


def render_aclnn_header(spec: OpSpec) -> str:
    """`aclnn_<op_snake>.h`: the two phase functions of the op."""
    return template("aclnn_header.h.j2").render(**_context(spec))


def render_aclnn_source(spec: OpSpec, package_root_relative_hint: str = DEFAULT_ROOT_HINT) -> str:
    """`aclnn_<op_snake>.c`: the wrappers; `package_root_relative_hint` is the package root relative
    to the directory of the shared object they are compiled into (op_api/lib/ -> "../..")."""
    if "*/" in package_root_relative_hint or "\n" in package_root_relative_hint:
        raise ValueError(f"invalid package root hint {package_root_relative_hint!r}")
    return template("aclnn_source.c.j2").render(
        **_context(spec), root_hint=c_string(package_root_relative_hint),
        root_hint_comment=package_root_relative_hint)
