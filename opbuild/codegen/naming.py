"""Names and literals shared by the generators."""

from __future__ import annotations

import math
from typing import Any

from opbuild import nonfinite
from opbuild.spec.model import OpSpec


def upper(name: str) -> str:
    """A C macro spelling of a spec name: `negative_slope` -> `NEGATIVE_SLOPE`."""
    return name.upper()


def spec_display_path(spec: OpSpec) -> str:
    """The spec's path for generated comments: relative, `ops/<op dir>/op.yaml`, never absolute."""
    return f"ops/{spec.op_dir.name}/{spec.spec_path.name}"


def c_string(text: str) -> str:
    """A C string literal (quotes included); non-ASCII and control bytes as octal escapes."""
    out = ['"']
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 0x20 <= byte < 0x7F and ch != "?":
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    out.append('"')
    return "".join(out)


def c_literal(value: Any) -> str:
    """The C spelling of an attribute value: 1/0, 42, 42LL, 0.01, "text", {1, 2}."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return f"{value}LL" if not -(2**31) <= value < 2**31 else str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return '__builtin_nan("")'
        if math.isinf(value):
            return "__builtin_inf()" if value > 0 else "(-__builtin_inf())"
        return repr(value)
    if isinstance(value, str):
        return c_string(value)
    if isinstance(value, (list, tuple)):
        return "{" + ", ".join(c_literal(v) for v in value) + "}"
    raise TypeError(f"no C literal for {value!r} ({type(value).__name__})")


def dumps(data: Any) -> str:
    """Deterministic JSON text: sorted keys, 2-space indent, trailing newline, UTF-8 kept; strict
    (a non-finite float is written as "inf" / "-inf" / "nan", see opbuild.nonfinite)."""
    return nonfinite.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def canonical(data: Any) -> str:
    """Compact canonical JSON (for hashes), strict like `dumps`."""
    return nonfinite.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
