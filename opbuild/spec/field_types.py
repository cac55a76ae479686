"""The small type language in which op-spec fields are declared (see opbuild/spec/fields.py).

Each type knows three renderings of itself, so that one declaration yields every artefact:
`schema()` (its JSON Schema fragment, for schemas/op_spec.schema.json), `describe()` (a short
Markdown phrase, for the field tables of docs/spec-format.md) and `py_type()` (the Python type a
value of it has in the typed model, for the test that keeps opbuild/spec/model.py in step).
`x-message` entries replace the validator's message for one keyword (see opbuild/spec/schema.py).
"""

from __future__ import annotations

import json
import types
from dataclasses import dataclass
from typing import Any, Literal, Mapping


class SpecType:
    """A value type of the spec format."""

    def schema(self) -> dict[str, Any]:
        raise NotImplementedError

    def describe(self, defs: Mapping[str, "SpecType"]) -> str:
        raise NotImplementedError

    def py_type(self, defs: Mapping[str, "SpecType"]) -> Any:
        raise NotImplementedError


def yaml_code(value: Any) -> str:
    """A value as the YAML author writes it, in Markdown code: `float16`, `true`, `[ND]`."""
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, str):
        return f"`{value}`" if value else '`""`'
    if isinstance(value, list):
        return "`[" + ", ".join(yaml_code(v).strip("`") for v in value) + "]`"
    return f"`{json.dumps(value)}`"


def _choices(values: tuple[Any, ...]) -> str:
    return ", ".join(yaml_code(v) for v in values)


def _messages(**by_keyword: str | None) -> dict[str, Any]:
    found = {k: v for k, v in by_keyword.items() if v is not None}
    return {"x-message": found} if found else {}


@dataclass(frozen=True)
class Str(SpecType):
    """A string, optionally matching `pattern` (whose failure message may be `pattern_message`)."""

    pattern: str | None = None
    pattern_message: str | None = None
    min_length: int | None = None
    doc: str | None = None

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "string"}
        if self.min_length is not None:
            out["minLength"] = self.min_length
        if self.pattern is not None:
            out["pattern"] = self.pattern
        return out | _messages(pattern=self.pattern_message)

    def describe(self, defs: Mapping[str, SpecType]) -> str:
        if self.doc:
            return self.doc
        return f"string `{self.pattern}`" if self.pattern else "string"

    def py_type(self, defs: Mapping[str, SpecType]) -> Any:
        return str


@dataclass(frozen=True)
class Enum(SpecType):
    """One of a fixed set of values (strings, or YAML booleans)."""

    values: tuple[Any, ...]
    message: str | None = None

    def schema(self) -> dict[str, Any]:
        return {"enum": list(self.values)} | _messages(enum=self.message)

    def describe(self, defs: Mapping[str, SpecType]) -> str:
        return _choices(self.values)

    def py_type(self, defs: Mapping[str, SpecType]) -> Any:
        return Literal[tuple(str(v).lower() if isinstance(v, bool) else v for v in self.values)]


@dataclass(frozen=True)
class Bool(SpecType):
    def schema(self) -> dict[str, Any]:
        return {"type": "boolean"}

    def describe(self, defs: Mapping[str, SpecType]) -> str:
        return "boolean"

    def py_type(self, defs: Mapping[str, SpecType]) -> Any:
        return bool


@dataclass(frozen=True)
class Int(SpecType):
    """An integer, optionally within [minimum, maximum] (whose failure message may be
    `range_message`; `doc` replaces the generated description)."""

    minimum: int | None = None
    maximum: int | None = None
    range_message: str | None = None
    doc: str | None = None

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "integer"}
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        return out | _messages(minimum=self.range_message, maximum=self.range_message)

    def describe(self, defs: Mapping[str, SpecType]) -> str:
        if self.doc:
            return self.doc
        bounds = [f"≥ {self.minimum}"] if self.minimum is not None else []
        bounds += [f"≤ {self.maximum}"] if self.maximum is not None else []
        return " ".join(["integer", *bounds])

    def py_type(self, defs: Mapping[str, SpecType]) -> Any:
        return int


@dataclass(frozen=True)
class AnyValue(SpecType):
    """Any YAML value; a semantic check gives it meaning (an attribute default, say)."""

    doc: str

    def schema(self) -> dict[str, Any]:
        return {}

    def describe(self, defs: Mapping[str, SpecType]) -> str:
        return self.doc

    def py_type(self, defs: Mapping[str, SpecType]) -> Any:
        return Any


@dataclass(frozen=True)
class Ref(SpecType):
    """A named type of `fields.DEFS` (a `$defs` entry of the schema)."""

    name: str

    def schema(self) -> dict[str, Any]:
        return {"$ref": f"#/$defs/{self.name}"}

    def describe(self, defs: Mapping[str, SpecType]) -> str:
        return defs[self.name].describe(defs)

    def py_type(self, defs: Mapping[str, SpecType]) -> Any:
        return defs[self.name].py_type(defs)


@dataclass(frozen=True)
class List(SpecType):
    """A YAML sequence; the model stores it as a tuple."""

    items: SpecType
    min_items: int | None = None
    unique: bool = False
    doc: str | None = None

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "array"}
        if self.min_items is not None:
            out["minItems"] = self.min_items
        if self.unique:
            out["uniqueItems"] = True
        out["items"] = self.items.schema()
        return out

    def describe(self, defs: Mapping[str, SpecType]) -> str:
        words = ["non-empty list"] if self.min_items else ["list"]
        if self.unique:
            words.append("without repeats")
        text = " ".join(words) + " of " + self.items.describe(defs)
        return f"{text} ({self.doc})" if self.doc else text

    def py_type(self, defs: Mapping[str, SpecType]) -> Any:
        return types.GenericAlias(tuple, (self.items.py_type(defs), ...))  # tuple[item, ...], built at run time


@dataclass(frozen=True)
class Map(SpecType):
    """A YAML mapping from names (`keys`) to values of one type; the model stores it as a tuple
    of (name, value) pairs, in the order written."""

    keys: SpecType
    values: SpecType
    doc: str

    def schema(self) -> dict[str, Any]:
        return {"type": "object", "propertyNames": self.keys.schema(), "additionalProperties": self.values.schema()}

    def describe(self, defs: Mapping[str, SpecType]) -> str:
        return self.doc

    def py_type(self, defs: Mapping[str, SpecType]) -> Any:
        pair = types.GenericAlias(tuple, (self.keys.py_type(defs), self.values.py_type(defs)))
        return types.GenericAlias(tuple, (pair, ...))  # tuple[tuple[key, value], ...], built at run time


@dataclass(frozen=True)
class OneOf(SpecType):
    """Exactly one of several types (`package: custom` or `package: [custom, built-in]`); the model
    stores the last, most general one (a tuple for `package`)."""

    options: tuple[SpecType, ...]

    def schema(self) -> dict[str, Any]:
        return {"oneOf": [o.schema() for o in self.options]}

    def describe(self, defs: Mapping[str, SpecType]) -> str:
        return " or ".join(o.describe(defs) for o in self.options)

    def py_type(self, defs: Mapping[str, SpecType]) -> Any:
        return self.options[-1].py_type(defs)


@dataclass(frozen=True)
class WhenMap(SpecType):
    """A binary's `when`: name -> value, where a map value must be `then` (a tensor choice)."""

    then: SpecType
    doc: str

    def schema(self) -> dict[str, Any]:
        return {"type": "object", "minProperties": 1,
                "additionalProperties": {"if": {"type": "object"}, "then": self.then.schema()}}

    def describe(self, defs: Mapping[str, SpecType]) -> str:
        return self.doc

    def py_type(self, defs: Mapping[str, SpecType]) -> Any:
        return dict


@dataclass(frozen=True)
class Field:
    """One field of a spec record: everything the schema, the model and the docs say about it.

    `model` is the attribute of the record's model class the field becomes (None: it becomes
    something else, said in `becomes`), `model_type` overrides the Python type derived from
    `type` when the model stores the value transformed, and `check` names the `SpecChecker`
    method that checks what the schema can't (rules between fields)."""

    name: str
    type: SpecType
    doc: str
    required: bool = False
    default: Any = None
    model: str | None = None
    model_type: Any = None
    becomes: str | None = None
    check: str | None = None

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"description": self.doc} | self.type.schema()
        if self.default is not None:
            out["default"] = self.default
        return out


@dataclass(frozen=True)
class Record(SpecType):
    """A YAML mapping with a closed set of fields; `model` is the dataclass it becomes.

    `derived` lists the model attributes that come from no single field of this record (set by
    the checks, or by the record around it), so model and declaration can be compared whole."""

    name: str
    doc: str
    fields: tuple[Field, ...]
    model: type | None = None
    derived: tuple[str, ...] = ()
    one_of_required: tuple[str, ...] = ()
    one_of_message: str | None = None
    dependent_required: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"description": self.doc, "type": "object", "additionalProperties": False}
        required = [f.name for f in self.fields if f.required]
        if required:
            out["required"] = required
        out["properties"] = {f.name: f.schema() for f in self.fields}
        if self.one_of_required:
            out["oneOf"] = [{"required": [name]} for name in self.one_of_required]
        if self.dependent_required:
            out["dependentRequired"] = {k: list(v) for k, v in self.dependent_required}
        return out | _messages(oneOf=self.one_of_message)

    def describe(self, defs: Mapping[str, SpecType]) -> str:
        return f"[`{self.name}`](#{self.name}-fields) map"

    def py_type(self, defs: Mapping[str, SpecType]) -> Any:
        return self.model

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)
