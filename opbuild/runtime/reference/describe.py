"""describe_call in Python: the twin of native/src/describe.c (plans.describe_call says what it
returns)."""

from __future__ import annotations

from typing import Any


def _instances(params: Any, names: Any) -> tuple[tuple[tuple, ...], ...]:
    return tuple([tuple([(names[a.dtype], f, a.shape, None) for a, f in g]) for g in params])


def describe_call(inputs: Any, outputs: Any, names: Any) -> tuple:
    in_inst, out_inst = _instances(inputs, names), _instances(outputs, names)
    signature = tuple([i[:2] for g in in_inst + out_inst for i in g])
    contiguous = all([a.flags.c_contiguous for g in inputs + outputs for a, _ in g])
    return in_inst, out_inst, signature, contiguous, any([a.size for g in outputs for a, _ in g])
