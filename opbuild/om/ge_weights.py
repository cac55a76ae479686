"""WEIGHTS_DATA in GE's layout: the raw bytes of every weight, located by its Const op.

The partition is the weights' C-order bytes, each starting at a multiple of ALIGN (zero padding
between them). Each weight's `Const` op in MODEL_DEF carries, in its `value` TensorDef's
descriptor, `data_offset` (where its bytes start in WEIGHTS_DATA) and `weight_size` (how many),
as GE's Const ops do. `locate` checks both against the partition and the weight's dtype and shape
before any byte is read.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

import numpy as np

from opbuild.abi.vocabulary import DTYPE
from opbuild.om import tables
from opbuild.om.errors import OmError

ALIGN = 64
"""Alignment of each weight's offset (a cache line; GE aligns its own weight memory too)."""


def build(weights: Iterable[tuple[str, np.ndarray]]) -> tuple[bytes, list[tuple[int, int]]]:
    """(partition bytes, [(data_offset, weight_size)] in the order given)."""
    chunks: list[bytes] = []
    places: list[tuple[int, int]] = []
    pos = 0
    for _, arr in weights:
        raw = np.ascontiguousarray(arr).tobytes()
        pad = -pos % ALIGN
        if pad:
            chunks.append(b"\0" * pad)
            pos += pad
        places.append((pos, len(raw)))
        chunks.append(raw)
        pos += len(raw)
    return b"".join(chunks), places


def locate(data: bytes | memoryview, weights: Sequence[dict[str, Any]], base: int = 0) -> dict[str, tables.Item]:
    """Weight name -> Item({dtype, shape}, its bytes) for the MODEL_DEF weights
    ({name, dtype, shape, data_offset, weight_size}); OmError for any that does not fit."""
    buf = memoryview(data)
    out: dict[str, tables.Item] = {}
    for w in weights:
        where = f"WEIGHTS_DATA weight {w['name']!r}"
        offset, size = w.get("data_offset"), w.get("weight_size")
        if type(offset) is not int or type(size) is not int or offset < 0 or size < 0:
            raise OmError(f"Const desc data_offset {offset!r} / weight_size {size!r}: not non-negative integers",
                          where, base)
        if w["shape"] is None or any(type(d) is not int or d < 0 for d in w["shape"]):
            raise OmError(f"shape {w['shape']}: a weight has a static shape", where, base)
        need = DTYPE[w["dtype"]].itemsize * math.prod(w["shape"])
        if size != need:
            raise OmError(f"weight_size {size}, but {w['dtype']}{w['shape']} takes {need} bytes", where, base)
        if offset > len(buf) or size > len(buf) - offset:
            raise OmError(f"bytes {offset}..{offset + size} run past the end of the partition ({len(buf)} bytes)",
                          where, base + min(offset, len(buf)))
        if w["name"] in out:
            raise OmError("appears twice", where, base)
        out[w["name"]] = tables.Item(w["name"], {"dtype": w["dtype"], "shape": list(w["shape"])},
                                     buf[offset:offset + size])
    return out
