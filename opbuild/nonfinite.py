"""Attribute values that are not finite numbers (±inf, NaN), in every language opbuild writes.

A float attribute may default to `.inf`, `-.inf` or `.nan` (YAML). Each target language spells
such a value its own way, and each has exactly one function here:

* JSON has no token for them: a non-finite float is written as the **string** `"inf"`, `"-inf"`
  or `"nan"` (`to_json`; `dumps` writes JSON with `allow_nan=False`, so a bare `Infinity` /
  `NaN` token can never be written). These strings are what Python's `float()` and C's
  `strtod()` read back; `from_json` turns them into floats where the value is known to be a
  float (an attribute of type float / list_float).
* Python source: `float('inf')`, `float('-inf')`, `float('nan')` (`python_literal`; `repr`
  would write the undefined names `inf` / `nan`).
* C source: `__builtin_inf()`, `(-__builtin_inf())`, `__builtin_nan("")`
  (`opbuild.codegen.naming.c_literal`).
* Prose (C header comments, ops-info `defaultValue`): `inf`, `-inf`, `nan` (`text`).

Imports nothing of opbuild but the vocabulary (which imports nothing): the spec serializer, the
code generators and the key checks use it.
"""

from __future__ import annotations

import json
import math
from typing import Any

from opbuild.abi.vocabulary import ATTR_TYPES

_SPELLING = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}
FLOAT_ATTR_TYPES = frozenset(t.name for t in ATTR_TYPES if t.element == "float")
"""Attribute types whose values are floats (and so may be non-finite): float, list_float."""


def json_spelling(value: float) -> str:
    """The JSON string of one non-finite float: "inf", "-inf" or "nan"."""
    if math.isnan(value):
        return "nan"
    return "inf" if value > 0 else "-inf"


def to_json(value: Any) -> Any:
    """`value` as JSON-compatible data: non-finite floats become "inf" / "-inf" / "nan"
    (inside lists, tuples and dict values too; tuples become lists)."""
    if isinstance(value, float) and not math.isfinite(value):
        return json_spelling(value)
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    return value


def from_json(attr_type: str, value: Any) -> Any:
    """An attribute value read from JSON: for float / list_float attributes, the strings of
    `to_json` become floats again; any other value is returned as it is."""
    if attr_type not in FLOAT_ATTR_TYPES:
        return value
    if isinstance(value, str) and value in _SPELLING:
        return _SPELLING[value]
    if isinstance(value, list):
        return [_SPELLING.get(v, v) if isinstance(v, str) else v for v in value]
    return value


def dumps(data: Any, **kwargs: Any) -> str:
    """`json.dumps` of `to_json(data)`, strict: a non-finite float that escaped `to_json`
    (inside an object it does not walk) raises ValueError instead of writing `Infinity`."""
    return json.dumps(to_json(data), allow_nan=False, **kwargs)


def python_literal(value: Any) -> str:
    """Python source that evaluates to `value` (lists and tuples written as lists)."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({json_spelling(value)!r})"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(python_literal(v) for v in value) + "]"
    return repr(value)


def text(value: float) -> str:
    """A float in prose (comments, ops-info strings): `inf`, `-inf`, `nan`, else repr."""
    return json_spelling(value) if not math.isfinite(value) else repr(value)


def same(a: Any, b: Any) -> bool:
    """Equal values of the same type, NaN equal to NaN (for de-duplicating sample values)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b
