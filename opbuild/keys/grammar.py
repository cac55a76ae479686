"""The simplified-key grammar (docs/package-format.md §2.1).

A full key is `<OpType>/d=<D>,p=<P>/<tail>`:

* d: 0 not deterministic, 1 deterministic;
* p: impl mode, 0 default, 1 high_performance, 2 high_precision;
* tail, default mode (simplifiedKeyMode 0): one `<dt>,<fmt>` group of GE enum integers for every
  required or dynamic input and then every required or dynamic output in IR order, joined by `/`.
  A dynamic (list) input counts once, by its first element. Optional parameters are left out,
  present or not: nnopbase's NnopbaseExecutorGenDynamicKey skips every parameter whose
  description is 0 (optional), and asc_opc writes the kernel's keys the same way (opbase's
  QuantBatchMatmulV3 mock: 3 required inputs, 3 optional ones, 1 output -> 4 groups);
* tail, customized mode (simplifiedKeyMode 2): the fragment GenSimplifiedKey appended, verbatim.

The runtime matches keys as bytes (`key_bytes`): the op type's characters, one byte each for d
and p, then one byte per number of the tail (NnopbaseCollectorConvertDynamicVerbKey); the call
side builds the same bytes from the call's dtypes and storage formats (`call_key_bytes`,
NnopbaseExecutorGenDynamicKey). Both are here so a test can hold them side by side.

This module is pure string work; it knows nothing of specs beyond the GE enum tables.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

from opbuild.abi.ge_types import DTYPE_TO_GE, FORMAT_TO_GE, GE_TO_DTYPE, GE_TO_FORMAT
from opbuild.abi.vocabulary import DEFAULT_FORMAT, MAX_SIMPLIFIED_KEY_LEN

MAX_FRAGMENT_LEN = MAX_SIMPLIFIED_KEY_LEN
"""Bytes (UTF-8) a GenSimplifiedKey fragment may have (MAX_LEN_SIMPLIFIED_KEY in CANN)."""

ABSENT_GROUP = "_"
"""How a static-shape key (staticList) marks an absent optional input. Default-mode keys never
contain it: they leave optional parameters out."""


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


def tensor_group(dtype: str, fmt: str | None) -> str:
    """The default-mode group of one tensor: `"1,2"` for float16/ND."""
    try:
        return f"{DTYPE_TO_GE[dtype]},{FORMAT_TO_GE[fmt or DEFAULT_FORMAT]}"
    except KeyError as e:
        raise KeyGrammarError(f"no GE enum for {e.args[0]!r} (dtype {dtype!r}, format {fmt!r})") from None


def default_tail_of(groups: Iterable[tuple[str, str | None]]) -> str:
    """Join (dtype, format) pairs of the keyed parameters, inputs then outputs, into a default-mode tail."""
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


def parse_default_tail(tail: str) -> list[tuple[str, str]]:
    """The (dtype, format) names of a default-mode tail."""
    out: list[tuple[str, str]] = []
    for group in tail.split("/"):
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
    if any(c.isspace() for c in fragment):
        return f"fragment {fragment!r} contains whitespace"
    return None


def key_bytes(key: str) -> bytes:
    """The bytes nnopbase matches a default-mode text key by (NnopbaseCollectorConvertDynamicVerbKey).

    The op type's characters; of the `d=..,p=..` part only the digits 0, 1 and 2, one byte each;
    then each decimal number of the tail as one byte (every non-digit ends a number).
    `key_bytes("Mul/d=0,p=1/1,2/0,2") == b"Mul\\x00\\x01\\x01\\x02\\x00\\x02"`.
    """
    op, _, rest = key.partition("/")
    head, _, tail = rest.partition("/")
    out = bytearray(op.encode())
    out += bytes(int(c) for c in head if c in "012")
    number = 0
    for c in tail:
        if c.isdigit():
            number = (number * 10 + int(c)) & 0xFF
        else:
            out.append(number)
            number = 0
    if tail:
        out.append(number)
    return bytes(out)


def call_key_bytes(op: str, d: int, p: int, groups: Iterable[tuple[str, str | None]]) -> bytes:
    """The bytes nnopbase builds for a call (NnopbaseExecutorGenDynamicKey): the op type, d, p,
    then (dtype, storage format) as GE enum bytes for each keyed parameter, inputs then outputs."""
    out = bytearray(op.encode())
    out += bytes((d, p))
    for dtype, fmt in groups:
        out += bytes((DTYPE_TO_GE[dtype] & 0xFF, FORMAT_TO_GE[fmt or DEFAULT_FORMAT] & 0xFF))
    return bytes(out)
