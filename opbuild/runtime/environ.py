"""Reading environment variables on the runtime's per-call path.

A call's cache key includes the search environment and every miss asks for the SoC, so these
are read on every call: `os.environ.get` costs ~10x more than a lookup in os.environ's own dict
(encoded keys, raw values), which `raw_reader` does where that dict exists.
"""

from __future__ import annotations

import os
from typing import Callable


def raw_reader(*names: str) -> Callable[[], tuple[bytes | str | None, ...]]:
    """A function returning the current values of `names` as a tuple: os.environ's raw values
    (bytes on POSIX) read straight from its dict, or, for another os.environ implementation,
    the decoded strings. None for an unset variable. Values compare equal while unchanged."""
    data = getattr(os.environ, "_data", None)
    encode = getattr(os.environ, "encodekey", None)
    if isinstance(data, dict) and encode is not None:
        keys = tuple(encode(n) for n in names)
        get = data.get
        # unrolled for the sizes the runtime reads (a tuple display is ~3x faster than map)
        if len(keys) == 1:
            (k0,) = keys
            return lambda: (get(k0),)
        if len(keys) == 4:
            k0, k1, k2, k3 = keys
            return lambda: (get(k0), get(k1), get(k2), get(k3))
        return lambda: tuple(map(get, keys))
    return lambda: tuple([os.environ.get(n) for n in names])  # pragma: no cover - another os.environ


def decode(raw: bytes | str) -> str:
    """The string of a value raw_reader returned."""
    if isinstance(raw, str):
        return raw
    decode_value = getattr(os.environ, "decodevalue", None)
    return decode_value(raw) if decode_value is not None else os.fsdecode(raw)
