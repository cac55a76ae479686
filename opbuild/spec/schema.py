"""The JSON Schema of op specs (schemas/op_spec.schema.json) and its errors as `Problem`s.

The schema says what the structure is (fields, types, enums, required fields). Errors come from
`Draft202012Validator.iter_errors` (all of them, not the first); a schema node may carry
`x-message: {<keyword>: "... {instance} ..."}` to replace the validator's message for that keyword.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Iterator

from opbuild.runtime_paths import schemas_dir
from opbuild.suggest import did_you_mean

from .errors import JsonPath, Problem
from .yaml_marks import Marks

SCHEMA_PATH = schemas_dir() / "op_spec.schema.json"


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    """The op-spec schema document."""
    try:
        return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    except FileNotFoundError:  # pragma: no cover - an installation problem, not a spec problem
        raise RuntimeError(f"opbuild: the op-spec schema is missing: {SCHEMA_PATH}") from None


@lru_cache(maxsize=1)
def validator() -> Any:
    """A Draft 2020-12 validator of the schema (built once; jsonschema is imported lazily)."""
    from jsonschema import Draft202012Validator

    Draft202012Validator.check_schema(schema())
    return Draft202012Validator(schema())


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _message(error: Any) -> str:
    custom = error.schema.get("x-message") if isinstance(error.schema, dict) else None
    if isinstance(custom, dict) and error.validator in custom:
        return custom[error.validator].format(instance=_short(error.instance))
    if error.validator == "enum":
        choices = ", ".join(json.dumps(c) if not isinstance(c, str) else c for c in error.validator_value)
        hint = did_you_mean(error.instance, error.validator_value) if isinstance(error.instance, str) else ""
        return f"{_short(error.instance)} is not one of: {choices}{hint}"
    if error.validator == "required":
        missing = [f for f in error.validator_value if isinstance(error.instance, dict) and f not in error.instance]
        return f"missing required field {missing[0]!r}" if len(missing) == 1 else error.message
    if error.validator == "type":
        return f"{_short(error.instance)} is not of type {error.validator_value!r}"
    if error.validator in ("oneOf", "anyOf") and error.context:
        from jsonschema.exceptions import best_match

        return _message(best_match(error.context))
    return error.message


def schema_problems(data: Any, marks: Marks) -> Iterator[tuple[JsonPath, Problem]]:
    """(absolute path, problem) for every schema violation of `data`."""
    reported_missing: set[JsonPath] = set()  # jsonschema gives one `required` error per missing field
    for error in validator().iter_errors(data):
        path: JsonPath = tuple(error.absolute_path)
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            known = error.schema.get("properties", {})
            allowed = ", ".join(known) if known else "none"
            for key in error.instance:
                if key not in known:
                    yield path + (key,), marks.problem(path + (key,), f"unknown field {key!r} (allowed here: {allowed})",
                                              at_key=True)
            continue
        if error.validator == "required" and isinstance(error.instance, dict):
            for field in error.validator_value:
                if field not in error.instance and path + (field,) not in reported_missing:
                    reported_missing.add(path + (field,))
                    yield path + (field,), marks.problem(path, f"missing required field {field!r}")
            continue
        yield path, marks.problem(path, _message(error))
