"""Key rules: the full keys a binary has, and the GenSimplifiedKey fragment of a call.

Build side: `binary_full_keys(spec, binary)` lists the keys written into binary_info_config.json.
Call side: `make_fragment_fn(spec)` returns the function that turns a `KeyContext` into the tail
of the key (default-mode groups, or a customized fragment from the table, a Python callback or a
C callback the caller wraps). `full_key_of(spec, ctx, fn)` prepends `Op/d=..,p=../`.

This package is used by codegen, the build and the runtime, so it imports none of them.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from opbuild.abi.vocabulary import DEFAULT_FORMAT
from opbuild.keys.context import Instance, KeyContext
from opbuild.keys.grammar import (
    check_fragment,
    default_tail_of,
    full_key,
    tensor_group,
)

if TYPE_CHECKING:  # only for annotations: keys must stay importable without the spec loader
    from opbuild.spec.model import Binary, OpSpec, Param, TensorChoice

FragmentFn = Callable[[KeyContext], str]


class KeyRuleError(Exception):
    """GenSimplifiedKey cannot produce a key: no table entry, a bad callback, an invalid fragment."""


# ---- the parameters a default-mode key is made of -------------------------------------------

def keyed_params(spec: OpSpec) -> list[tuple[bool, int, Param]]:
    """(is_output, IR index, param) of every parameter a default-mode key has a group for, in key
    order: required and dynamic inputs, then required and dynamic outputs. Optional ones are
    left out, present or absent (nnopbase skips parameters whose description is 0). The one
    definition the build (binary_tails) and the call side (default_tail) both use."""
    out = [(False, i, p) for i, p in enumerate(spec.inputs) if p.param_type != "optional"]
    out += [(True, i, p) for i, p in enumerate(spec.outputs) if p.param_type != "optional"]
    return out


# ---- build side: the keys of a binary -------------------------------------------------------

def _choice(binary: Binary, name: str) -> TensorChoice | None:
    for tensor, choice in binary.when:
        if tensor == name:
            return choice
    return None


def binary_columns(spec: OpSpec, binary: Binary) -> list[dict[str, TensorChoice]]:
    """The declared combination columns a binary serves: same dtypes, and same format where pinned.

    A tensor the binary's `when` leaves out matches anything (an optional input left out of
    `when` means the binary serves calls without it; see binary_tails).
    """
    out = []
    for column in spec.combinations():
        for p in spec.tensors:
            bc = _choice(binary, p.name)
            if bc is None:
                continue
            cc = column[p.name]
            if cc.dtype != bc.dtype or (bc.format is not None and cc.format != bc.format):
                break
        else:
            out.append(column)
    return out


def binary_tensor_format(param: Param, binary: Binary) -> str:
    """The format a binary is compiled for: the pinned one, else the tensor's first declared format."""
    bc = _choice(binary, param.name)
    if bc is not None and bc.format is not None:
        return bc.format
    return param.formats[0] if param.formats else DEFAULT_FORMAT


def _group_of(param: Param, binary: Binary, column: Mapping[str, TensorChoice] | None) -> str:
    bc = _choice(binary, param.name)
    if bc is None:
        if column is None:
            raise KeyRuleError(f"binary {binary.name} does not say which dtype {param.name} has")
        return tensor_group(column[param.name].dtype, column[param.name].format)
    fmt = bc.format or (column[param.name].format if column is not None else binary_tensor_format(param, binary))
    return tensor_group(bc.dtype, fmt)


def binary_tails(spec: OpSpec, binary: Binary) -> list[str]:
    """The key tails of one binary (without `Op/d=,p=/`), in a stable order.

    Customized mode: the binary's `key`. Default mode: one `dt,fmt/...` tail per declared column
    the binary serves (so a binary whose `when` pins no format gets a key for each declared format
    of its dtypes); if no column matches (an invalid spec), the pinned or first declared formats.
    """
    if spec.key_rule.mode == "customized":
        if binary.key is None:
            raise KeyRuleError(f"{spec.op}: binary {binary.name} has no `key` (customized simplified-key mode)")
        return [binary.key]
    tails: list[str] = []
    columns: Iterable[Mapping[str, TensorChoice] | None] = binary_columns(spec, binary) or [None]
    for column in columns:
        tail = "/".join(_group_of(p, binary, column) for _, _, p in keyed_params(spec))
        if tail not in tails:
            tails.append(tail)
    return tails


def binary_full_keys(spec: OpSpec, binary: Binary) -> list[str]:
    """Every full key of a binary: d ascending, then p in the binary's impl_mode order, then tails
    (asc_opc's order: `d=0,p=1`, `d=0,p=0`, `d=1,p=1`, `d=1,p=0`)."""
    tails = binary_tails(spec, binary)
    return [full_key(spec.op, d, p, tail) for d in sorted(binary.d_values) for p in binary.p_values for tail in tails]


def all_binary_keys(spec: OpSpec) -> dict[str, list[str]]:
    """Full key -> names of the binaries that have it (more than one name is a conflict)."""
    out: dict[str, list[str]] = {}
    for binary in spec.binaries:
        for key in binary_full_keys(spec, binary):
            out.setdefault(key, []).append(binary.name)
    return out


# ---- call side: contexts --------------------------------------------------------------------

def context_for_choices(
    spec: OpSpec,
    choices: Mapping[str, TensorChoice | None],
    attrs: Mapping[str, Any] | None = None,
    deterministic: int = 0,
    impl_mode: int = 0,
    soc: str = "",
    *,
    shape: tuple[int, ...] = (1,),
    list_len: int = 1,
) -> KeyContext:
    """A KeyContext for one dtype/format choice per tensor (None or missing = absent tensor).

    Dynamic inputs get `list_len` identical instances; every tensor gets `shape`. Attributes not
    given take their spec default.
    """
    def instances(p: Param) -> list[Instance]:
        c = choices.get(p.name)
        if c is None:
            return []
        n = list_len if p.param_type == "dynamic" else 1
        return [(c.dtype, c.format or DEFAULT_FORMAT, shape)] * n

    merged = {a.name: a.default for a in spec.attrs}
    if attrs:
        merged.update(attrs)
    return KeyContext(
        [instances(p) for p in spec.inputs],
        [instances(p) for p in spec.outputs],
        merged,
        deterministic,
        impl_mode,
        soc,
        attr_types={a.name: a.type for a in spec.attrs},
    )


def describe_call(spec: OpSpec, ctx: KeyContext) -> str:
    """`x=float16/ND, y=float16/ND, z=float16/ND, alpha=1.0, d=0, p=1`: a call, for messages."""
    parts = []
    for i, p in enumerate(spec.inputs):
        dt = ctx.input_dtype(i) if i < ctx.num_inputs else None
        parts.append(f"{p.name}={dt}/{ctx.input_format(i)}" if dt else f"{p.name}=absent")
    for i, p in enumerate(spec.outputs):
        dt = ctx.output_dtype(i) if i < ctx.num_outputs else None
        parts.append(f"{p.name}={dt}/{ctx.output_format(i)}" if dt else f"{p.name}=absent")
    for a in spec.attrs:
        if a.name in ctx.attrs:
            parts.append(f"{a.name}={ctx.attrs[a.name]!r}")
    parts.append(f"d={ctx.deterministic}, p={ctx.impl_mode}")
    return ", ".join(parts)


# ---- default mode ---------------------------------------------------------------------------

def default_groups(spec: OpSpec, ctx: KeyContext) -> list[tuple[str, str]]:
    """(dtype, storage format) of each keyed parameter of a call (keyed_params; a list by its
    first element). KeyRuleError for an empty list, which has no group."""
    if ctx.num_inputs != len(spec.inputs) or ctx.num_outputs != len(spec.outputs):
        raise KeyRuleError(
            f"{spec.op}: the call has {ctx.num_inputs} inputs and {ctx.num_outputs} outputs, "
            f"the op has {len(spec.inputs)} and {len(spec.outputs)}"
        )
    groups = []
    for is_out, i, p in keyed_params(spec):
        dtype = ctx.output_dtype(i) if is_out else ctx.input_dtype(i)
        fmt = ctx.output_format(i) if is_out else ctx.input_format(i)
        if dtype is None:
            kind = "output" if is_out else "input"
            raise KeyRuleError(f"{spec.op}: {kind} {p.name!r} has no tensor, and a default-mode key needs its "
                               f"dtype and format ({p.param_type} parameters always have one)")
        groups.append((dtype, fmt or DEFAULT_FORMAT))
    return groups


def default_tail(spec: OpSpec, ctx: KeyContext) -> str:
    """Default-mode tail of a call: `dt,fmt` of each keyed parameter (keyed_params), inputs then outputs."""
    return default_tail_of(default_groups(spec, ctx))


# ---- customized mode: the table -------------------------------------------------------------

def _norm(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_norm(v) for v in value)
    return value


_MISSING = object()


class _Table:
    """The `table` GenSimplifiedKey, precompiled from the binaries' `when`, `attr_when` and `key`."""

    __slots__ = ("spec", "rows", "defaults")

    def __init__(self, spec: OpSpec) -> None:
        self.spec = spec
        self.defaults = {a.name: a.default for a in spec.attrs}
        where = {p.name: (False, i) for i, p in enumerate(spec.inputs)}
        where.update({p.name: (True, i) for i, p in enumerate(spec.outputs)})
        rows = []
        for order, b in enumerate(spec.binaries):
            if b.key is None:
                continue
            conds: list[tuple[bool, int, str | None, str | None]] = []
            for p in spec.tensors:
                bc = _choice(b, p.name)
                is_out, idx = where[p.name]
                if bc is None:
                    if p.param_type == "optional":
                        conds.append((is_out, idx, None, None))  # must be absent
                    continue
                conds.append((is_out, idx, bc.dtype, bc.format))
            attr_conds = tuple((name, _norm(v)) for name, v in b.attr_when)
            rows.append((b.key, b, tuple(conds), attr_conds, frozenset(b.d_values), frozenset(b.p_values), order))
        self.rows = rows

    def _attr(self, ctx: KeyContext, name: str) -> Any:
        value = ctx.attrs.get(name, _MISSING)
        return self.defaults.get(name) if value is _MISSING else value

    def __call__(self, ctx: KeyContext) -> str:
        best = None
        best_rank = None
        for key, _b, conds, attr_conds, dset, pset, order in self.rows:
            ok = True
            for is_out, idx, dtype, fmt in conds:
                if is_out:
                    got_dt, got_fmt = ctx.output_dtype(idx), ctx.output_format(idx)
                else:
                    got_dt, got_fmt = ctx.input_dtype(idx), ctx.input_format(idx)
                if got_dt != dtype or (fmt is not None and got_fmt != fmt):
                    ok = False
                    break
            if not ok:
                continue
            for name, value in attr_conds:
                if _norm(self._attr(ctx, name)) != value:
                    ok = False
                    break
            if not ok:
                continue
            serves = ctx.deterministic in dset and ctx.impl_mode in pset
            rank = (serves, len(attr_conds), -order)
            if best_rank is None or rank > best_rank:
                best, best_rank = key, rank
        if best is None:
            raise KeyRuleError(self._no_entry(ctx))
        return best

    def _no_entry(self, ctx: KeyContext) -> str:
        entries = []
        for _key, b, _conds, attr_conds, *_ in self.rows:
            desc = ", ".join(f"{t}={c.dtype}" + (f"/{c.format}" if c.format else "") for t, c in b.when)
            if attr_conds:
                desc += ", " + ", ".join(f"{n}={v!r}" for n, v in attr_conds)
            entries.append(f"{b.key} ({desc})")
        return (f"{self.spec.op}: the simplified-key table has no entry for a call with "
                f"{describe_call(self.spec, ctx)}; the table has: {'; '.join(entries) or 'no entries'}")


_TABLES: dict[int, tuple[OpSpec, _Table]] = {}


def _table_of(spec: OpSpec) -> _Table:
    hit = _TABLES.get(id(spec))
    if hit is not None and hit[0] is spec:
        return hit[1]
    if len(_TABLES) > 256:
        _TABLES.clear()
    table = _Table(spec)
    _TABLES[id(spec)] = (spec, table)
    return table


def table_fragment(spec: OpSpec, ctx: KeyContext) -> str:
    """The `key` of the binary whose `when` (dtypes; formats if pinned) and `attr_when` match the call.

    Several matches: prefer one whose deterministic/impl_mode serve the call, then the one with
    more attribute conditions, then the first declared. No match: KeyRuleError naming the call.
    """
    return _table_of(spec)(ctx)


# ---- customized mode: Python callbacks ------------------------------------------------------

_PY_CACHE: dict[tuple[str, int], Callable[..., Any]] = {}
_PY_LOCK = threading.Lock()


def callback_path(spec: OpSpec) -> Path:
    rule = spec.key_rule
    if rule.py_module is None:
        raise KeyRuleError(f"{spec.op}: the simplified-key rule has no Python module")
    return spec.op_dir / f"{rule.py_module.replace('.', '/')}.py"


def load_python_callback(spec: OpSpec) -> Callable[[KeyContext], Any]:
    """Import `<op_dir>/<py_module>.py` by path and return its `py_function`.

    The module gets a name of its own (`opbuild_keyrule_<snake>_<hash of path>`), so two ops'
    `key_rule.py` never clash; it is cached per (path, mtime) and reloaded after an edit.
    """
    rule = spec.key_rule
    path = callback_path(spec)
    fn_name = rule.py_function or ""
    where = f"{spec.op}: GenSimplifiedKey callback {path.name}:{fn_name}"
    try:
        mtime = path.stat().st_mtime_ns
    except OSError as e:
        raise KeyRuleError(f"{where}: cannot read {path}: {e.strerror or e}") from None
    cache_key = (str(path.resolve()), mtime)
    with _PY_LOCK:
        cached = _PY_CACHE.get(cache_key)
        if cached is not None:
            return cached
        digest = hashlib.sha1(cache_key[0].encode()).hexdigest()[:10]
        mod_name = f"opbuild_keyrule_{spec.snake}_{digest}"
        ispec = importlib.util.spec_from_file_location(mod_name, path)
        if ispec is None or ispec.loader is None:
            raise KeyRuleError(f"{where}: {path} cannot be imported as a Python module")
        module = importlib.util.module_from_spec(ispec)
        sys.modules[mod_name] = module
        try:
            ispec.loader.exec_module(module)
        except BaseException as e:  # SystemExit, KeyboardInterrupt too: the rule's, not the caller's
            sys.modules.pop(mod_name, None)
            raise KeyRuleError(f"{where}: importing {path} failed: {type(e).__name__}: {e}") from e
        fn = getattr(module, fn_name, None)
        if fn is None:
            raise KeyRuleError(f"{where}: {path} defines no function {fn_name!r}")
        if not callable(fn):
            raise KeyRuleError(f"{where}: {path}: {fn_name!r} is not callable")
        for old in [k for k in _PY_CACHE if k[0] == cache_key[0]]:
            del _PY_CACHE[old]
        _PY_CACHE[cache_key] = fn
        return fn


def _checked(spec: OpSpec, what: str, fn: Callable[[KeyContext], Any]) -> FragmentFn:
    def fragment(ctx: KeyContext) -> str:
        try:
            result = fn(ctx)
        except KeyRuleError:
            raise
        except BaseException as e:  # SystemExit, KeyboardInterrupt too: never past the API
            raise KeyRuleError(f"{spec.op}: GenSimplifiedKey {what} raised {type(e).__name__}: {e}") from e
        problem = check_fragment(result)
        if problem is not None:
            raise KeyRuleError(f"{spec.op}: GenSimplifiedKey {what} returned an invalid fragment: {problem}")
        return result

    fragment.__qualname__ = f"fragment[{spec.op}:{what}]"
    return fragment


def make_fragment_fn(spec: OpSpec, c_callback: Callable[[KeyContext], Any] | None = None) -> FragmentFn:
    """The function KeyContext -> key tail for the op's rule.

    default: the `dt,fmt` groups; customized `table`: `table_fragment` (precompiled once);
    `python`: the op's callback (loaded now), its result checked; `c`: `c_callback`, which the
    caller (runtime/build) builds around the C symbol, its result checked likewise.
    """
    rule = spec.key_rule
    if rule.mode == "default":
        return lambda ctx: default_tail(spec, ctx)
    if rule.callback == "table":
        return _table_of(spec)
    if rule.callback == "python":
        fn = load_python_callback(spec)
        return _checked(spec, f"callback {rule.py_module}.py:{rule.py_function}", fn)
    if rule.callback == "c":
        if c_callback is None:
            raise KeyRuleError(
                f"{spec.op}: the simplified key comes from the C function {rule.c_symbol}; "
                "the caller must pass a c_callback that calls it"
            )
        return _checked(spec, f"C function {rule.c_symbol}", c_callback)
    raise KeyRuleError(f"{spec.op}: unknown simplified-key callback kind {rule.callback!r}")


def full_key_of(spec: OpSpec, ctx: KeyContext, fragment_fn: FragmentFn) -> str:
    """`Op/d=<ctx.deterministic>,p=<ctx.impl_mode>/<fragment_fn(ctx)>`."""
    return full_key(spec.op, ctx.deterministic, ctx.impl_mode, fragment_fn(ctx))
