"""OpSpec <-> plain JSON data, so a built package carries its ops' definitions.

The generated Python aclnn module of a package embeds `spec_to_dict(spec)` for each op; the
runtime rebuilds the OpSpec with `spec_from_dict` and never needs the source tree. Marks and
absolute paths are left out (builds stay reproducible); `spec_path` is re-rooted by the caller.

Which attributes of each model class are written is not listed here: it is
`fields.model_attributes(cls)`, the declaration in opbuild/spec/fields.py (a test keeps it equal
to the dataclasses). Values are converted by the model's type hints: records become dicts,
tuples become lists and back. A binary's `when` is written as `[tensor, dtype, format]` triples.
Written as JSON with `opbuild.nonfinite.dumps` (a non-finite float becomes "inf" / "-inf" /
"nan"); `spec_from_dict` turns those back into floats for float attributes (`_floats`).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from pathlib import Path
from typing import Any, Callable

from opbuild.nonfinite import from_json
from opbuild.spec.fields import model_attributes
from opbuild.spec.model import Binary, OpSpec, TensorChoice

FORMAT_VERSION = 1

_NOT_WRITTEN = frozenset({"spec_path"})
"""Absolute, machine-specific: the reader passes its own."""
_WRITTEN_UNLESS_DEFAULT = frozenset({(OpSpec, "tiling_keys"), (OpSpec, "kernel_api"), (OpSpec, "tiling_class"),
                                     (OpSpec, "tiling_header")})
"""(model, attribute) left out at its dataclass default (the reader takes that default back):
attributes added after packages were first written, so the definition of an op that does not use
them stays byte for byte what it was."""


def _when_to_json(when: tuple[tuple[str, TensorChoice], ...]) -> list[list[Any]]:
    return [[t, c.dtype, c.format] for t, c in when]


def _when_from_json(data: list[list[Any]]) -> tuple[tuple[str, TensorChoice], ...]:
    return tuple((t, TensorChoice(dtype, fmt)) for t, dtype, fmt in data)


_CODECS: dict[tuple[type, str], tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    (Binary, "when"): (_when_to_json, _when_from_json),
}
"""(model, attribute) -> (to JSON, from JSON), where the generic conversion is not wanted."""


def _to_json(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        out = {}
        for name in model_attributes(cls):
            if name in _NOT_WRITTEN:
                continue
            codec = _CODECS.get((cls, name))
            item = getattr(value, name)
            if (cls, name) in _WRITTEN_UNLESS_DEFAULT and item == _defaults(cls)[name]:
                continue
            out[name] = codec[0](item) if codec else _to_json(item)
        return out
    if isinstance(value, (tuple, list)):
        return [_to_json(v) for v in value]
    return value


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


@functools.cache
def _defaults(cls: type) -> dict[str, Any]:
    return {f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}


def _from_json(data: Any, hint: Any) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if data is None:
            return None
        (hint,) = [a for a in args if a is not type(None)]
        return _from_json(data, hint)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_from_json(v, args[0]) for v in data)
        return tuple(_from_json(v, a) for v, a in zip(data, args, strict=True))
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _record(hint, data)
    if isinstance(data, list):  # `Any` (an attribute value): lists are stored as tuples
        return tuple(_from_json(v, Any) for v in data)
    return data


def _record(cls: type, data: dict[str, Any], **given: Any) -> Any:
    """An instance of model `cls` from its dict; a missing attribute takes its dataclass default."""
    kwargs = dict(given)
    for name in model_attributes(cls):
        if name in data and name not in kwargs:
            codec = _CODECS.get((cls, name))
            kwargs[name] = codec[1](data[name]) if codec else _from_json(data[name], _hints(cls)[name])
    return cls(**kwargs)


def spec_to_dict(spec: OpSpec) -> dict[str, Any]:
    """Everything the runtime needs of an op, as JSON-compatible data."""
    return {"format_version": FORMAT_VERSION, **_to_json(spec)}


def spec_from_dict(d: dict[str, Any], spec_path: Path) -> OpSpec:
    """The OpSpec of `spec_to_dict` output; `spec_path` locates python key-rule modules."""
    if d.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"op definition format {d.get('format_version')!r} is not {FORMAT_VERSION}")
    data = dict(d)
    data.update(data.pop("extra", {}))  # written by earlier versions: attributes added after the first ones
    return _floats(_record(OpSpec, data, spec_path=spec_path))


def _floats(spec: OpSpec) -> OpSpec:
    """`spec` with the non-finite floats of its float attributes as floats again (their defaults
    and the values binaries pin them to): JSON spells them "inf", "-inf", "nan" (opbuild.nonfinite)."""
    types_ = {a.name: a.type for a in spec.attrs}

    def value(attr_type: str, v: Any) -> Any:
        back = from_json(attr_type, list(v) if isinstance(v, tuple) else v)
        return tuple(back) if isinstance(back, list) else back

    attrs = tuple(dataclasses.replace(a, default=value(a.type, a.default)) for a in spec.attrs)
    binaries = tuple(dataclasses.replace(b, attr_when=tuple((n, value(types_.get(n, ""), v)) for n, v in b.attr_when))
                     for b in spec.binaries)
    return dataclasses.replace(spec, attrs=attrs, binaries=binaries)
