"""The compiled MODEL_DEF schema (opbuild/om/schema_check.py, issue 25: a 100,000-node model's
parse) against jsonschema itself: on a real model and thousands of mutated ones, the predicate,
the check and jsonschema agree on what is valid."""

from __future__ import annotations

import copy
import random
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from opbuild.om import fuzz, schema_check
from opbuild.om.loader import _MODEL_DEF_SCHEMA, parse_om

DATA = Path(__file__).parent / "data" / "v2_static_mul_weight.om"


@pytest.fixture(scope="module")
def model_def() -> dict:
    return parse_om(DATA.read_bytes()).model_def


_REFERENCE = Draft202012Validator(_MODEL_DEF_SCHEMA)
_VALID = schema_check.compile_predicate(_MODEL_DEF_SCHEMA)
_CHECK = schema_check.compile_schema(_MODEL_DEF_SCHEMA)


def _agree(value) -> bool:
    reference = _REFERENCE.is_valid(value)
    valid = _VALID(value)
    problem = schema_check.first_problem(_CHECK, value)
    assert valid == reference == (problem is None), (reference, valid, problem)
    return reference


def test_real_model_is_valid(model_def):
    assert _agree(model_def)


def test_mutated_models_agree(model_def):
    rng = random.Random(25)
    invalid = 0
    for _ in range(3000):
        value = copy.deepcopy(model_def)
        for _ in range(rng.choice((1, 2))):
            value = fuzz._mutate_json(value, rng, 0)
        invalid += not _agree(value)
    assert 300 < invalid < 2900  # both kinds were exercised


@pytest.mark.parametrize("value, ok", [(True, False), (1, True), (1.0, True), (1.5, False), (-1, False)])
def test_integer_minimum_like_json_schema(value, ok):
    schema = {"type": "integer", "minimum": 0}
    assert schema_check.compile_predicate(schema)(value) is ok
    assert (schema_check.first_problem(schema_check.compile_schema(schema), value) is None) is ok
    assert Draft202012Validator(schema).is_valid(value) is ok


def test_enum_tells_true_from_one():
    schema = {"enum": [0, 1]}
    for value, ok in ((True, False), (1, True), (False, False)):
        assert schema_check.compile_predicate(schema)(value) is ok
        assert Draft202012Validator(schema).is_valid(value) is ok


def test_path_and_message(model_def):
    value = copy.deepcopy(model_def)
    value["nodes"][0]["preprocess"] = 3
    path, message = schema_check.first_problem(schema_check.compile_schema(_MODEL_DEF_SCHEMA), value)
    assert path == ["nodes", 0, "preprocess"] and message == "3 is not of type 'boolean'"


def test_unsupported_keyword_refused():
    with pytest.raises(ValueError, match="pattern"):
        schema_check.compile_schema({"type": "string", "pattern": "x"})
    with pytest.raises(ValueError, match="pattern"):
        schema_check.compile_predicate({"type": "string", "pattern": "x"})
