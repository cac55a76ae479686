"""Whatever a spec holds, validation reports problems and never crashes."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opbuild.spec import check_spec
from spec_helpers import SAMPLES, sample_copy

JUNK = [None, 0, 1, -1, 1.5, True, False, "", "x", "float16", "ND", "table", "c:nope", "python:a:b",
        [], ["x"], [1, 2], {}, {"a": 1}, {"dtype": "float16"}, {"same_as": "x"}, "../../etc/passwd"]


def paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from paths(v, prefix + (i,))


def mutate(doc, path, value, delete):
    if not path:
        return value
    node = doc
    for part in path[:-1]:
        node = node[part]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return doc


@pytest.fixture(scope="module")
def copies(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("robust")
    return {name: sample_copy(root, name) for name in SAMPLES}


@pytest.mark.fuzz
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_samples_never_crash(copies, data):
    name = data.draw(st.sampled_from(SAMPLES))
    path = copies[name]
    original = path.read_text()
    doc = yaml.safe_load(original)
    targets = list(paths(doc))
    for _ in range(data.draw(st.integers(1, 3))):
        target = data.draw(st.sampled_from(targets))
        doc = mutate(doc, target, copy.deepcopy(data.draw(st.sampled_from(JUNK))), data.draw(st.booleans()) and bool(target))
        targets = list(paths(doc))
    try:
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        spec, problems = check_spec(path)
        assert (spec is None) == bool(problems)
        for p in problems:
            assert p.file == str(path) and p.message and p.json_path.startswith("$")
    finally:
        path.write_text(original)
