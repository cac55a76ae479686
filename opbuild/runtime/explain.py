"""`opbuild explain`: show how the runtime would select a binary for a call, step by step.

It answers "why does my op not find its kernel?" with the context the key rule saw, the
fragment it produced, the full key, and either the selected binary or the nearest keys that do
exist. For the selected binary it goes on as the runtime's cache miss does (call/plans.py): the
tiling keys its kernel JSON's kernelList declares, the tiling function run on the call, the key
it chose, and whether the runtime accepts that result (tiling_bounds.check_tiling_result).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opbuild.abi.ge_types import DTYPE_TO_GE, FORMAT_TO_GE
from opbuild.abi.vocabulary import ATTR_TYPE
from opbuild.keys import KeyContext, describe_call
from opbuild.runtime import settings
from opbuild.runtime.binaries.selection import OpRuntime, Selection, current_soc, nearest_key_lines
from opbuild.runtime.errors import ACLNN_ERR_PARAM_INVALID, AclnnError
from opbuild.runtime.infer import infer_outputs

_TENSOR_RE = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<dtype>[a-z0-9]+)\[(?P<dims>[-0-9, ]*)\](?:@(?P<fmt>[A-Z]+))?$")


@dataclass(frozen=True)
class TensorArg:
    name: str
    dtype: str
    shape: tuple[int, ...]
    format: str


def parse_tensor_arg(text: str) -> TensorArg:
    """`x=float16[2,3]` or `x=float16[2,3]@NCHW`."""
    m = _TENSOR_RE.match(text.strip())
    if not m:
        raise ValueError(f"bad tensor {text!r}: expected NAME=DTYPE[d0,d1,...] or NAME=DTYPE[...]@FORMAT")
    dtype, fmt = m["dtype"], m["fmt"] or "ND"
    if dtype not in DTYPE_TO_GE:
        raise ValueError(f"bad tensor {text!r}: unknown dtype {dtype}; known: {', '.join(DTYPE_TO_GE)}")
    if fmt not in FORMAT_TO_GE:
        raise ValueError(f"bad tensor {text!r}: unknown format {fmt}; known: {', '.join(FORMAT_TO_GE)}")
    dims = tuple(int(d) for d in m["dims"].replace(" ", "").split(",") if d)
    return TensorArg(m["name"], dtype, dims, fmt)


def parse_attr_value(attr_type: str, text: str) -> Any:
    """An attribute value from the command line, by the attribute's declared type."""
    if attr_type == "int":
        return int(text)
    if attr_type == "float":
        return float(text)
    if attr_type == "bool":
        if text.lower() not in ("true", "false", "1", "0"):
            raise ValueError(f"bad bool {text!r}: use true or false")
        return text.lower() in ("true", "1")
    if attr_type == "str":
        return text
    items = [t for t in text.strip("[]").split(",") if t.strip()]
    inner = ATTR_TYPE[attr_type].element
    return tuple(parse_attr_value(inner, t.strip()) for t in items)


def find_op(ops_module: Any, name: str) -> OpRuntime:
    ops: dict[str, OpRuntime] = ops_module._OPS
    for op in ops.values():
        if name in (op.spec.op, op.spec.snake):
            return op
    raise ValueError(f"no op {name!r} in this package; it has: {', '.join(sorted(ops))}")


def explain(package_dir: Path, op_name: str, tensor_args: list[str], attr_args: list[str],
            deterministic: bool | None, impl_mode: str | None) -> tuple[int, str]:
    """(exit status, report) for one hypothetical call."""
    from opbuild.runtime.api import import_ops

    ops = import_ops(package_dir)
    op = find_op(ops, op_name)
    spec = op.spec
    given: dict[str, list[TensorArg]] = {}
    for text in tensor_args:
        arg = parse_tensor_arg(text)
        given.setdefault(arg.name, []).append(arg)
    known = {p.name for p in spec.tensors}
    unknown = sorted(set(given) - known)
    if unknown:
        raise ValueError(f"{spec.op} has no tensor {', '.join(unknown)}; its tensors: {', '.join(p.name for p in spec.tensors)}")
    attrs: dict[str, Any] = {a.name: a.default for a in spec.attrs}
    for text in attr_args:
        name, _, value = text.partition("=")
        try:
            attr = spec.attr(name)
        except KeyError:
            raise ValueError(f"{spec.op} has no attribute {name!r}; its attributes: {', '.join(a.name for a in spec.attrs) or 'none'}") from None
        attrs[name] = parse_attr_value(attr.type, value)
    missing = [a.name for a in spec.attrs if attrs[a.name] is None]
    if missing:
        raise ValueError(f"{spec.op}: required attribute(s) {', '.join(missing)} not given (--attr NAME=VALUE)")

    inputs = []
    for p in spec.inputs:
        if p.name not in given and p.param_type != "optional":
            raise ValueError(f"{spec.op}: input {p.name} not given (--input {p.name}=DTYPE[dims])")
        inputs.append([(a.dtype, a.format, a.shape) for a in given.get(p.name, [])])
    outputs: list[list[tuple[str, str, Any]]] = []  # per output: (dtype, format, shape) instances
    lines: list[str] = []
    attr_values = [attrs[a.name] for a in spec.attrs]
    not_inferred: list[tuple[tuple[int, ...] | None, str | None]] = [(None, None)] * len(spec.outputs)
    shapes = dtypes = not_inferred
    if any(p.name not in given for p in spec.outputs):  # inferred by the package's op_proto library
        shapes = infer_outputs(op, inputs, attr_values, dtypes=False) or not_inferred
        try:
            dtypes = infer_outputs(op, inputs, attr_values, shapes=False) or not_inferred
        except AclnnError:
            pass
    for p, (shape, _), (_, dtype) in zip(spec.outputs, shapes, dtypes, strict=True):
        if p.name in given:
            outputs.append([(a.dtype, a.format, a.shape) for a in given[p.name]])
            continue
        if shape is None:
            raise ValueError(f"{spec.op}: output {p.name} has no shape rule; give it with --input {p.name}=DTYPE[dims]")
        if dtype is None:
            dtype = p.dtypes[0]
            lines.append(f"note: no declared combination has these input dtypes; assuming output {p.name}={dtype}")
        outputs.append([(dtype, p.format_at(0), shape)])

    if spec.is_aicpu:
        status, report = explain_aicpu(op, inputs, outputs, attrs)
        return status, "\n".join(lines + report)
    d, p_mode, fallback = settings.resolve(deterministic, impl_mode)
    soc = current_soc()
    ctx = KeyContext(inputs, outputs, attrs, d, p_mode, soc)
    lines += [f"op:        {spec.op} ({spec.key_rule.mode} keys, callback {spec.key_rule.callback or 'none'})",
              f"package:   {op.package}", f"soc:       {soc}", f"call:      {describe_call(spec, ctx)}"]
    package, index = op.resolve_package(soc)
    try:
        used, fragment, key, entry, tried = op.lookup(ctx, package, index, fallback)
    except AclnnError as exc:
        lines.append(f"fragment:  FAILED: {exc.message}")
        return 1, "\n".join(lines)
    if len(tried) > 1:
        lines.append(f"p=1 key:   {tried[0]} has no binary; no impl mode set, so p=0 was tried")
    lines += [f"fragment:  {fragment}", f"full key:  {key}"]
    if entry is None:
        existing = index.keys_by_op.get(spec.op, ())
        lines.append("binary:    NONE: no binary_info_config.json entry has this key")
        lines.append(f"searched:  {', '.join(str(f) for f in index.config_files)}")
        lines.append("nearest existing keys:")
        lines += [f"    {line}" for line in nearest_key_lines(spec, key, existing, index, used)]
        return 1, "\n".join(lines)
    lines += [f"binary:    {entry.name}", f"bin path:  {entry.bin_path}", f"json path: {entry.json_path}"]
    status, tiling = tiling_report(op, Selection(fragment, key, entry, package, used.impl_mode), used, inputs,
                                   outputs, attr_values, soc)
    return status, "\n".join(lines + tiling)


def explain_aicpu(op: OpRuntime, inputs: list, outputs: list, attrs: dict[str, Any]) -> tuple[int, list[str]]:
    """(exit status, lines) for a call of an AI CPU op: no simplified key and no kernel binary;
    the declared dtype combination the call is, the package's libcust_aicpu_kernels.so (loaded,
    as phase 1 does, and checked to register the op) and each output's shape (a data-dependent
    one: the bound its buffer needs; the real shape is known after the run)."""
    from opbuild.runtime.call.aicpu import library_of

    spec = op.spec
    lines = [f"op:        {spec.op} (AI CPU: compute function {spec.compute_ref.symbol} in {spec.compute_ref.source})",
             f"package:   {op.package}",
             "call:      " + ", ".join([*(f"{p.name}={g[0][0]}[{','.join(map(str, g[0][2]))}]"
                                          for p, g in zip(spec.tensors, [*inputs, *outputs], strict=True) if g),
                                        *(f"{name}={value!r}" for name, value in attrs.items())])]
    names = [g[0][0] if g else None for g in [*inputs, *outputs]]
    column = next((c for c in range(spec.combination_count)
                   if all(n is None or p.dtype_at(c) == n for p, n in zip(spec.tensors, names, strict=True))), None)
    if column is None:
        declared = "; ".join("(" + ", ".join(f"{p.name}={p.dtype_at(c)}" for p in spec.tensors) + ")"
                             for c in range(spec.combination_count))
        return 1, lines + [f"dtypes:    NONE: not a declared combination; declared: {declared}"]
    lines.append(f"dtypes:    declared combination {column + 1} of {spec.combination_count}")
    for p, group in zip(spec.outputs, outputs, strict=True):
        dims = f"[{','.join(map(str, group[0][2]))}]"
        bound = p.shape.operands if p.shape is not None and p.shape.kind == "data_dependent" else None
        lines.append(f"output:    {p.name} {group[0][0]}{dims}" +
                     (f" (data-dependent: its bound max={list(bound)}; the compute function sets the "
                      f"real shape)" if bound is not None else ""))
    try:
        library = library_of(op)
    except AclnnError as exc:
        return 1, lines + [f"library:   FAILED: {exc.message}"]
    lines += ["binary:    none (an AI CPU op: no simplified key, no kernel binary)",
              f"library:   {library.path}",
              f"entry:     RunCpuKernel -> {spec.compute_ref.symbol} (registered for {spec.op}; the library has "
              f"{', '.join(sorted(library.ops))})"]
    return 0, lines


def tiling_report(op: OpRuntime, selection: Selection, ctx: KeyContext, inputs: list, outputs: list,
                  attr_values: list[Any], soc: str) -> tuple[int, list[str]]:
    """(exit status, lines): the tiling keys the selected kernel declares, and the one its tiling
    function chooses for the call (status 1 when the call would fail there), computed by the
    runtime's cache miss (plans.SignatureTiling)."""
    from opbuild.runtime.call.plans import Prepared

    spec = op.spec
    prepared = Prepared(None, selection, None)
    try:
        kernel = prepared.kernel(spec)
    except AclnnError as exc:
        return 1, [f"kernel:    FAILED: {exc.message}"]
    lines = [f"kernel:    tiling keys {', '.join(map(str, kernel.tiling_keys))} "
             f"(the kernelList of {selection.entry.json_path.name})"]
    if not any(math.prod(shape) for group in outputs for _, _, shape in group):
        return 0, lines + ["tiling:    not run: no output has elements, so the call launches nothing"]
    in_inst, out_inst = _instances(inputs), _instances(outputs)
    try:
        tiling = prepared.tiling(op, soc, tuple(attr_values), ctx.deterministic)
        result = tiling.run_tiling(in_inst, out_inst, None, selection.full_key)
    except AclnnError as exc:
        return 1, lines + [f"tiling:    FAILED: {exc.message}"]
    lines.append(f"tiling:    {spec.tiling_ref.symbol} chose tiling key {result.tiling_key} "
                 f"(block_dim {result.block_dim}, workspace {result.workspace_size} bytes)")
    try:
        tiling.check(result)
    except AclnnError as exc:
        return 1, lines + [f"refused:   {exc.message}"]
    return 0, lines


def _instances(groups: list) -> tuple:
    """Per IR parameter, its tensors as the runtime hands them to tiling: (dtype, format, shape,
    strides), strides None (contiguous)."""
    return tuple(tuple((dtype, fmt, shape, None) for dtype, fmt, shape in group) for group in groups)


def parse_impl_mode(value: str | None) -> str | None:
    if value is None:
        return None
    settings.impl_mode_index(value)
    return value


__all__ = ["explain", "parse_tensor_arg", "parse_attr_value", "parse_impl_mode", "AclnnError", "ACLNN_ERR_PARAM_INVALID"]
