"""The package's Python aclnn module (`op_api/python/aclnn_ops.py`) and its key-rule modules.

Parameter names follow the real aclnn rules: camelCase, an `Optional` suffix for optional
inputs, a single output named `out` (else `<name>Out`), attributes after inputs.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from opbuild import nonfinite
from opbuild.codegen.env import template
from opbuild.spec.model import OpSpec
from opbuild.spec.serialize import spec_to_dict

PYTHON_MODULE = "aclnn_ops.py"
KEYRULES_DIR = "keyrules"


def camel_case(name: str) -> str:
    """`negative_slope` -> `negativeSlope` (aclnn parameter naming)."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _input_name(spec: OpSpec, index: int) -> str:
    p = spec.inputs[index]
    return camel_case(p.name) + ("Optional" if p.param_type == "optional" else "")


def output_names(spec: OpSpec) -> list[str]:
    if len(spec.outputs) == 1:
        return ["out"]
    return [camel_case(p.name) + "Out" for p in spec.outputs]


ONESHOT_KEYWORDS = ("deterministic", "impl_mode", "stream")
"""Keyword parameters every one-shot wrapper `<op_snake>(...)` has after the op's own."""


def python_name_problems(spec: OpSpec) -> list[tuple[str, str, str]]:
    """(role, spec name, message) for every input or attribute whose Python wrapper parameter
    would repeat another parameter of the one-shot wrapper (a SyntaxError when the package's
    aclnn_ops.py is imported); [] when all names are usable."""
    problems: list[tuple[str, str, str]] = []
    seen: dict[str, str] = {k: f"the wrapper's own keyword {k!r}" for k in ONESHOT_KEYWORDS}
    named = [("input", p.name, _input_name(spec, i)) for i, p in enumerate(spec.inputs)]
    named += [("attr", a.name, a.name) for a in spec.attrs]
    for role, name, param in named:
        if param in seen:
            problems.append((role, name, f"{role} '{name}' gives the Python wrapper {spec.snake}() the parameter "
                                         f"{param!r}, which is {seen[param]}; rename it"))
        else:
            seen[param] = f"also the parameter of {role} '{name}'"
    return problems


def _tuple(items: list[str]) -> str:
    return ", ".join(items) + ("," if len(items) == 1 else "")


def keyrule_path(spec: OpSpec) -> PurePosixPath | None:
    """Where a python key-rule module of `spec` is shipped, relative to op_api/python/."""
    if spec.key_rule.callback != "python":
        return None
    return PurePosixPath(KEYRULES_DIR) / spec.snake / f"{spec.key_rule.py_module}.py"


def render_python_api(specs: list[OpSpec]) -> str:
    ops = []
    for spec in specs:
        inputs = [_input_name(spec, i) for i in range(len(spec.inputs))]
        attrs = [camel_case(a.name) for a in spec.attrs]
        outputs = output_names(spec)
        # Attributes with defaults must follow required ones in Python: keyword-only after `*`.
        # One-shot wrappers are Pythonic: snake_case attribute keywords, defaults from the spec.
        required_attrs = [a.name for a in spec.attrs if a.required]
        optional_attrs = [f"{a.name}={nonfinite.python_literal(a.default)}" for a in spec.attrs if not a.required]
        oneshot = inputs + required_attrs + ["*", *optional_attrs, "deterministic=None", "impl_mode=None", "stream=None",
                                             "**unknown_keywords"]
        keywords = [*inputs, *(a.name for a in spec.attrs), "deterministic", "impl_mode", "stream"]
        ops.append({
            "op": spec.op,
            "snake": spec.snake,
            "description": spec.description.replace("\\", "\\\\").replace('"', "'"),
            "phase1_params": inputs + attrs + outputs,
            "oneshot_params": oneshot,
            "oneshot_keywords": _names(keywords),
            "input_args": _tuple(inputs),
            "attr_args": _tuple(attrs),
            "oneshot_attr_args": _tuple([a.name for a in spec.attrs]),
            "output_args": _tuple(outputs),
            "input_names": _names(inputs),
            "attr_names": _names(attrs),
            "output_names": _names(outputs),
            "multi_output": len(outputs) > 1,
            "oneshot": "call_aicpu" if spec.is_aicpu else "call",
        })
    definitions = {spec.op: spec_to_dict(spec) for spec in specs}
    text = nonfinite.dumps(definitions, sort_keys=True, separators=(",", ":"))
    return template("python_aclnn.py.j2").render(ops=ops, definitions_json=repr(text))


def _names(names: list[str]) -> str:
    """A Python tuple literal of parameter names."""
    return "(" + ", ".join(f'"{n}"' for n in names) + ("," if len(names) == 1 else "") + ")"

