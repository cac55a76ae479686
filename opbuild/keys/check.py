"""Do GenSimplifiedKey and the declared binaries agree? (docs/package-format.md §2.4; the seeds' main failure mode.)

`check_key_consistency(spec, fragment_fn)` calls the key rule on every declared call and reports:

* a call whose full key no binary has (it would fail at run time);
* a binary that no call reaches (dead weight, usually a typo in `key`);
* a call on which the rule raises or returns an invalid fragment;
* a full key that two binaries claim (the lookup would be ambiguous).

The calls enumerated: every declared dtype/format column (`spec.combinations()`), crossed with
attribute samples, d in {0, 1} and p in the union of the binaries' impl modes. Attribute samples:
the default, every value any binary's `attr_when` names, and for int/float attributes one value
different from all of those (max + 1, max + 1.5 of the finite ones; ±inf and NaN defaults are tried as such); bool attributes both values; str/list
attributes the default only (or "" / [] when required). A dynamic input has one element, every
shape is [1]. An optional input is present, and also absent when some binary's `when` leaves it
out (such a binary serves calls without it).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Mapping

from opbuild.keys.context import KeyContext
from opbuild.keys.grammar import check_fragment, full_key
from opbuild.keys.rules import (
    FragmentFn,
    all_binary_keys,
    binary_full_keys,
    context_for_choices,
    describe_call,
)
from opbuild.nonfinite import same

if TYPE_CHECKING:
    from opbuild.spec.model import Attr, Binary, OpSpec, TensorChoice


def _add(values: list[Any], value: Any) -> None:
    if not any(same(v, value) for v in values):  # NaN counts once
        values.append(value)


def attr_samples(spec: OpSpec, attr: Attr) -> list[Any]:
    """The values of one attribute the consistency check tries (see the module doc)."""
    values: list[Any] = []
    if attr.default is not None:
        _add(values, attr.default)
    for b in spec.binaries:
        for name, value in b.attr_when:
            if name == attr.name:
                _add(values, value)
    if attr.type == "bool":
        _add(values, False)
        _add(values, True)
    elif attr.type in ("int", "float"):
        # finite numbers only: inf + 1.5 is inf, and nan + 1.5 nan (not a value different from all)
        numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
        if attr.type == "int":
            _add(values, int(max(numbers)) + 1 if numbers else 1)
        else:
            _add(values, float(max(numbers)) + 1.5 if numbers else 1.5)
    elif not values:
        values.append("" if attr.type == "str" else [])
    return values


def _columns(spec: OpSpec) -> list[dict[str, TensorChoice | None]]:
    """Declared columns (deduplicated), with optional-absent variants where a binary serves them."""
    absent_ok = [
        p.name for p in spec.inputs
        if p.param_type == "optional" and any(p.name not in dict(b.when) for b in spec.binaries)
    ]
    seen: set[tuple] = set()
    out: list[dict[str, TensorChoice | None]] = []
    for column in spec.combinations():
        for absent in itertools.product((False, True), repeat=len(absent_ok)):
            col: dict[str, TensorChoice | None] = dict(column)
            for name, gone in zip(absent_ok, absent, strict=True):
                if gone:
                    col[name] = None
            sig = tuple(sorted((k, (v.dtype, v.format) if v else None) for k, v in col.items()))
            if sig not in seen:
                seen.add(sig)
                out.append(col)
    return out


@dataclass(frozen=True)
class KeyFinding:
    """One disagreement between a key rule and the binaries, with what a locator needs.

    kind: `duplicate` (a full key two binaries claim), `raised` (the rule raised on a call),
    `invalid` (it returned an invalid fragment), `no_binary` (the call's key has no binary),
    `unreached` (a binary no call reaches). `message` is the stand-alone text.
    """

    kind: Literal["duplicate", "raised", "invalid", "no_binary", "unreached"]
    message: str
    column: Mapping[str, TensorChoice | None] | None = None
    ctx: KeyContext | None = None
    error: BaseException | None = None
    fragment: str | None = None
    key: str | None = None
    binary: Binary | None = None


def key_findings(spec: OpSpec, fragment_fn: FragmentFn, soc: str | None = None) -> list[KeyFinding]:
    """Every disagreement between the key rule and the binaries, per call; [] when they agree."""
    op = spec.op
    findings: list[KeyFinding] = []
    keys = all_binary_keys(spec)
    for key, owners in keys.items():
        if len(owners) > 1:
            findings.append(KeyFinding("duplicate", f"{op}: key '{key}' belongs to several binaries: {', '.join(owners)}",
                                       key=key))
    p_values = sorted({p for b in spec.binaries for p in b.p_values})
    attr_names = [a.name for a in spec.attrs]
    attr_value_lists = [attr_samples(spec, a) for a in spec.attrs]
    soc = soc if soc is not None else (spec.socs[0] if spec.socs else "")
    reached: set[str] = set()

    for column in _columns(spec):
        for values in itertools.product(*attr_value_lists):
            attrs = dict(zip(attr_names, values, strict=True))
            for d in (0, 1):
                for p in p_values:
                    ctx = context_for_choices(spec, column, attrs, d, p, soc)
                    try:
                        fragment = fragment_fn(ctx)
                    except Exception as e:  # noqa: BLE001 - every failure is a finding
                        findings.append(KeyFinding(
                            "raised", f"{op}: GenSimplifiedKey failed for a call with {describe_call(spec, ctx)}: "
                                      f"{type(e).__name__}: {e}", column, ctx, error=e))
                        continue
                    problem = check_fragment(fragment)
                    if problem is not None:
                        findings.append(KeyFinding(
                            "invalid", f"{op}: GenSimplifiedKey returned an invalid fragment for a call with "
                                       f"{describe_call(spec, ctx)}: {problem}", column, ctx, fragment=fragment))
                        continue
                    key = full_key(op, d, p, fragment)
                    if key in keys:
                        reached.add(key)
                    else:
                        findings.append(KeyFinding(
                            "no_binary", f"{op}: a call with {describe_call(spec, ctx)} gives key '{key}' which no "
                                         f"binary has", column, ctx, fragment=fragment, key=key))

    for b in spec.binaries:
        bkeys = binary_full_keys(spec, b)
        if not any(k in reached for k in bkeys):
            findings.append(KeyFinding("unreached", f"{op}: binary {b.name} (keys {', '.join(bkeys)}) is reached by "
                                                    f"no declared combination", binary=b))
    return findings


def check_key_consistency(spec: OpSpec, fragment_fn: FragmentFn, soc: str | None = None) -> list[str]:
    """Messages for every disagreement between the key rule and the binaries; [] when they agree."""
    return [f.message for f in key_findings(spec, fragment_fn, soc)]
