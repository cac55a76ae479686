"""op_proto: each op's shape and dtype inference as C (`op_proto/inc/op_proto.h` and the
`op_proto.c` linked into `op_proto/lib/linux/<arch>/libcust_opsproto_rt2.0.so`).

Every rule of the spec becomes one call of a helper of opbuild/infer.h (same_as, broadcast,
reduce, the op's own infer-shape function from its tiling source, or the upper bound of a
data-dependent output of an AI CPU op: the buffer the caller allocates); the dtype rule is the
table of declared combinations. The runtime and the `.om` builder call these functions
(opbuild/runtime/host/op_proto.py): the rules are implemented once, in C.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from opbuild.abi import symbols
from opbuild.abi.vocabulary import DTYPE, DTYPES_BY_GE_ORDER
from opbuild.codegen.env import render
from opbuild.spec.model import OpSpec, Param, parse_bound

HEADER_GUARD = "OPBUILD_OP_PROTO_H"


def infer_shape_symbol(spec: OpSpec) -> str:
    """`<Op>InferShape` of the spec's op (abi/symbols.py)."""
    return symbols.infer_shape_symbol(spec.op)


def infer_dtype_symbol(spec: OpSpec) -> str:
    """`<Op>InferDataType` of the spec's op (abi/symbols.py)."""
    return symbols.infer_dtype_symbol(spec.op)


def shape_functions(specs: list[OpSpec]) -> list[str]:
    """The ops' own C infer-shape functions the library wraps (declared extern, linked in)."""
    return sorted({p.shape.operands[0] for s in specs for p in s.outputs
                   if p.shape is not None and p.shape.kind == "function"})


@dataclass(frozen=True)
class _Output:
    index: int
    name: str
    call: str | None
    rule: str


def _shape_call(spec: OpSpec, index: int, param: Param) -> tuple[str | None, str]:
    """The helper call computing output `index` (None: no rule) and the rule as the spec says it."""
    rule = param.shape
    inputs = {p.name: i for i, p in enumerate(spec.inputs)}
    attrs = {a.name: i for i, a in enumerate(spec.attrs)}
    out = f"&outputs[{index}]"
    if rule is None:
        return None, "no rule (unknown rank)"
    if rule.kind == "same_as":
        name = rule.operands[0]
        return f"infer_same_as(ctx, {out}, {inputs[name]} /* {name} */)", f"the shape of {name}"
    if rule.kind == "broadcast":
        ids = ", ".join(str(inputs[n]) for n in rule.operands)
        names = ", ".join(f'"{n}"' for n in rule.operands)
        call = (f"infer_broadcast(ctx, {out}, (const uint32_t[]){{{ids}}}, (const char *const[]){{{names}}}, "
                f"{len(rule.operands)})")
        return call, f"the broadcast of {', '.join(rule.operands)}"
    if rule.kind == "reduce":
        axes = attrs[rule.axes_attr] if rule.axes_attr else -1
        keep = attrs[rule.keep_dims_attr] if rule.keep_dims_attr else -1
        name = rule.operands[0]
        call = (f"infer_reduce(ctx, {out}, {inputs[name]} /* {name} */, {axes} /* {rule.axes_attr or 'none'} */, "
                f"{keep} /* {rule.keep_dims_attr or 'none'} */)")
        return call, f"{name} reduced over the axes of {rule.axes_attr or '(all)'}" + (
            f", keep_dims from {rule.keep_dims_attr}" if rule.keep_dims_attr else "")
    if rule.kind == "data_dependent":
        kinds = {"": "OPBUILD_BOUND_CONST", "rank": "OPBUILD_BOUND_RANK", "size": "OPBUILD_BOUND_SIZE",
                 "dim": "OPBUILD_BOUND_DIM"}
        triples: list[str] = []
        bound_names: list[str] = []
        for bound in rule.operands:
            if not _BOUND.match(bound) or parse_bound(bound)[1] not in (None, *inputs):
                raise ValueError(f"{spec.op!r}: output {param.name!r}: not a bound: {bound!r}")
            fn, operand, value = parse_bound(bound)
            triples.append(f"{kinds[fn]}, {inputs[operand] if operand else 0}, {value or 0}")
            bound_names.append(operand or "")
        texts = ", ".join(f'"{"".join(b.split())}"' for b in rule.operands)
        call = (f"infer_bound(ctx, {out}, (const int64_t[]){{{', '.join(triples)}}}, {len(rule.operands)}, "
                f"(const char *const[]){{{texts}}}, (const char *const[]){{{', '.join(chr(34) + n + chr(34) for n in bound_names)}}})")
        return call, f"data-dependent, at most [{', '.join(rule.operands)}]"
    symbol = rule.operands[0]
    return f'infer_function(ctx, {out}, {index}, {symbol}, "{symbol}")', f"{symbol}() of the tiling source"


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_BOUND = re.compile(r"\s*(\d+|(rank|size)\(\s*[A-Za-z_]\w*\s*\)|dim\(\s*[A-Za-z_]\w*\s*,\s*-?\d+\s*\))\s*\Z")


def _op_context(spec: OpSpec) -> dict:
    # Names go into C code and comments: a spec checked by the loader has identifiers only; a
    # definition read from an .om (opbuild/om/legacy.py) is checked here.
    names = [spec.op, *(p.name for p in spec.tensors), *(a.name for a in spec.attrs),
             *(p.shape.operands[0] for p in spec.outputs if p.shape is not None and p.shape.kind == "function")]
    bad = [n for n in names if not _IDENTIFIER.match(n)]
    if bad:
        raise ValueError(f"{spec.op!r}: not C identifiers: {bad}")
    outputs = []
    for i, p in enumerate(spec.outputs):
        call, rule = _shape_call(spec, i, p)
        outputs.append(_Output(i, p.name, call, rule))
    rows = [[DTYPE[p.dtype_at(c)].c_enum for p in (*spec.inputs, *spec.outputs)] for c in range(spec.combination_count)]
    return {
        "op": spec.op, "description": spec.description.replace("*/", "* /"), "shape_symbol": infer_shape_symbol(spec),
        "dtype_symbol": infer_dtype_symbol(spec), "outputs": outputs, "rows": rows,
        "inputs": [p.name for p in spec.inputs], "n_inputs": len(spec.inputs), "n_outputs": len(spec.outputs),
        "declared": spec.declared_input_dtypes,
        "params": [(p.name, p.param_type, ", ".join(p.dtypes)) for p in spec.inputs],
        "out_params": [(o.name, ", ".join(p.dtypes), o.rule) for o, p in zip(outputs, spec.outputs, strict=True)],
        "attrs": [(a.name, a.type) for a in spec.attrs],
    }


def render_op_proto_header(specs: list[OpSpec], where: str) -> str:
    """`op_proto/inc/op_proto.h` of a package (`where`: vendors/<name> or built-in)."""
    return render("op_proto.h.j2", where=where, guard=HEADER_GUARD, ops=[_op_context(s) for s in specs])


def render_op_proto_source(specs: list[OpSpec], where: str) -> str:
    """`op_proto.c` of a package: the functions the header declares."""
    return render("op_proto.c.j2", where=where, ops=[_op_context(s) for s in specs],
                  functions=shape_functions(specs),
                  dtypes=[(d.c_enum, d.name) for d in DTYPES_BY_GE_ORDER])
