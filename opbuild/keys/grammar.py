"""The simplified-key grammar (docs/package-format.md §2.1).

A full key is `<OpType>/d=<D>,p=<P>/<tail>`:

* d: 0 not deterministic, 1 deterministic;
* p: impl mode, 0 default, 1 high_performance, 2 high_precision;
* tail, default mode (simplifiedKeyMode 0): one `<dt>,<fmt>` group of GE enum integers for every
  input and then every output in IR order, joined by `/`. A dynamic (list) input counts once, by
  its first element. An absent optional input (or an empty list) is the group `_`;
* tail, customized mode (simplifiedKeyMode 2): the fragment GenSimplifiedKey appended, verbatim.

This module is pure string work; it knows nothing of specs beyond the GE enum tables.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

from opbuild.abi.ge_types import DTYPE_TO_GE, FORMAT_TO_GE, GE_TO_DTYPE, GE_TO_FORMAT
from opbuild.abi.vocabulary import DEFAULT_FORMAT, MAX_SIMPLIFIED_KEY_LEN

MAX_FRAGMENT_LEN = MAX_SIMPLIFIED_KEY_LEN
"""Bytes (UTF-8) a GenSimplifiedKey fragment may have (MAX_LEN_SIMPLIFIED_KEY in CANN)."""

ABSENT_GROUP = "_"
"""The default-mode group of an absent optional input."""


class KeyGrammarError(ValueError):
    """A string is not a well-formed full simplified key."""


class ParsedKey(NamedTuple):
    op: str
    d: int
    p: int
    tail: str


def key_head(op: str, d: int, p: int) -> str:
    """`key_head("Op", 0, 1) == "Op/d=0,p=1/"`."""
    return f"{op}/d={d},p={p}/"


def full_key(op: str, d: int, p: int, tail: str) -> str:
    """`full_key("Op", 0, 1, "custom_fp16") == "Op/d=0,p=1/custom_fp16"`."""
    return f"{op}/d={d},p={p}/{tail}"


def tensor_group(dtype: str | None, fmt: str | None) -> str:
    """The default-mode group of one tensor: `"1,2"` for float16/ND; `_` when absent (None)."""
    if dtype is None:
        return ABSENT_GROUP
    try:
        return f"{DTYPE_TO_GE[dtype]},{FORMAT_TO_GE[fmt or DEFAULT_FORMAT]}"
    except KeyError as e:
        raise KeyGrammarError(f"no GE enum for {e.args[0]!r} (dtype {dtype!r}, format {fmt!r})") from None


def default_tail_of(groups: Iterable[tuple[str | None, str | None]]) -> str:
    """Join (dtype, format) pairs, inputs then outputs, into a default-mode tail."""
    return "/".join(tensor_group(dt, fmt) for dt, fmt in groups)


def parse_full_key(key: str) -> ParsedKey:
    """Split a full key into (op, d, p, tail); KeyGrammarError if it is not one."""
    parts = key.split("/", 2)
    if len(parts) != 3 or not parts[0]:
        raise KeyGrammarError(f"{key!r} is not a simplified key (want '<Op>/d=<D>,p=<P>/<tail>')")
    op, head, tail = parts
    fields = head.split(",")
    if len(fields) != 2 or not fields[0].startswith("d=") or not fields[1].startswith("p="):
        raise KeyGrammarError(f"{key!r}: bad key head {head!r} (want 'd=<D>,p=<P>')")
    try:
        d, p = int(fields[0][2:]), int(fields[1][2:])
    except ValueError:
        raise KeyGrammarError(f"{key!r}: d and p must be integers, got {head!r}") from None
    if d not in (0, 1) or p not in (0, 1, 2):
        raise KeyGrammarError(f"{key!r}: d must be 0 or 1 and p 0, 1 or 2")
    if not tail:
        raise KeyGrammarError(f"{key!r}: empty tail")
    return ParsedKey(op, d, p, tail)


def parse_default_tail(tail: str) -> list[tuple[str, str] | None]:
    """The (dtype, format) names of a default-mode tail; None for an `_` group."""
    out: list[tuple[str, str] | None] = []
    for group in tail.split("/"):
        if group == ABSENT_GROUP:
            out.append(None)
            continue
        try:
            dt, fmt = (int(x) for x in group.split(","))
            out.append((GE_TO_DTYPE[dt], GE_TO_FORMAT[fmt]))
        except (ValueError, KeyError):
            raise KeyGrammarError(f"{tail!r}: bad group {group!r} (want '<dtype enum>,<format enum>')") from None
    return out


def check_fragment(fragment: object) -> str | None:
    """Why a customized fragment is invalid (empty, over MAX_FRAGMENT_LEN bytes, whitespace), or None if fine."""
    if not isinstance(fragment, str):
        return f"fragment must be a string, got {type(fragment).__name__}"
    if not fragment:
        return "fragment is empty"
    size = len(fragment.encode("utf-8"))
    if size > MAX_FRAGMENT_LEN:
        return f"fragment is {size} bytes long (UTF-8), more than {MAX_FRAGMENT_LEN}"
    if fragment.split(None, 1) != [fragment]:  # str.split splits at exactly the str.isspace characters
        return f"fragment {fragment!r} contains whitespace"
    return None
