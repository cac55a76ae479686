"""The YAML loader: plain data, a line/column for every key, value and item, and its own errors."""

from __future__ import annotations

import pytest

from opbuild.spec.yaml_marks import load_yaml
from spec_helpers import where

DOC = """\
op: AddCustomTemplate
inputs:
  - name: x
    dtypes: [float16, float32]
  - name: y
    dtypes:
      - float16
      - float32
binaries:
  - {name: A, when: {x: float16}, key: ka}
  - {name: B, when: {x: float32}, key: kb}
  - name: C
    when: {x: float32}
    key: kc
"""


def test_data_is_plain_python():
    data, _, problems = load_yaml(DOC, "op.yaml")
    assert problems == []
    assert data["inputs"][1] == {"name": "y", "dtypes": ["float16", "float32"]}
    assert data["binaries"][2]["key"] == "kc"


def test_marks_of_nested_items():
    _, marks, _ = load_yaml(DOC, "op.yaml")
    # the dtypes of the 2nd input: key, the (block) value, and its items
    assert marks.key(("inputs", 1, "dtypes")) == where(DOC, "dtypes", 2)
    assert marks.value(("inputs", 1, "dtypes", 0)) == where(DOC, "float16", 2)
    assert marks.value(("inputs", 1, "dtypes", 1)) == (8, 9)
    # a block collection is pointed at by its key, a flow one by its value
    assert marks.at(("inputs", 1, "dtypes")) == (6, 5)
    assert marks.at(("inputs", 0, "dtypes")) == where(DOC, "[float16")
    # the 3rd binary's key (block mapping inside a sequence)
    assert marks.key(("binaries", 2, "key")) == (14, 5)
    assert marks.value(("binaries", 2, "key")) == (14, 10)
    assert marks.at(("binaries", 2)) == (12, 5)
    # inside flow mappings
    assert marks.value(("binaries", 1, "when", "x")) == where(DOC, "float32}", 1)
    assert marks.key(("binaries", 0, "key")) == where(DOC, "key: ka")
    # a path that was never written falls back to its nearest ancestor
    assert marks.at(("binaries", 0, "deterministic")) == marks.at(("binaries", 0))
    assert marks.at(()) == (1, 1)


def test_duplicate_key_reported_at_second_occurrence():
    text = "op: A\ninputs:\n  - name: x\n    name: y\n"
    data, _, problems = load_yaml(text, "f.yaml")
    assert [(p.line, p.col, p.json_path) for p in problems] == [(4, 5, "$.inputs[0].name")]
    assert "duplicate key 'name' (first defined at line 3, column 5)" in problems[0].message
    assert data["inputs"][0]["name"] == "x"


def test_duplicate_key_in_flow_mapping():
    text = "when: {x: float16, x: float32}\n"
    _, _, problems = load_yaml(text, "f.yaml")
    assert [(p.line, p.col) for p in problems] == [where(text, "x: float32")]


def test_syntax_error_has_position():
    text = "op: A\ninputs:\n  - name: x\n   dtypes: [a\n"
    data, _, problems = load_yaml(text, "f.yaml")
    assert data is None and len(problems) == 1
    p = problems[0]
    assert p.message.startswith("YAML syntax error:")
    assert p.line >= 4 and p.col >= 1
    assert str(p).startswith(f"f.yaml:{p.line}:{p.col}: YAML syntax error")


def test_unclosed_flow_sequence():
    _, _, problems = load_yaml("a: [1, 2\nb: 3\n", "f.yaml")
    assert problems[0].message.startswith("YAML syntax error")


def test_empty_document():
    data, _, problems = load_yaml("# nothing\n", "f.yaml")
    assert data is None and problems[0].message == "the file holds no YAML document"


def test_multiple_documents_rejected():
    data, _, problems = load_yaml("a: 1\n---\nb: 2\n", "f.yaml")
    assert data is None and (problems[0].line, problems[0].col) == (2, 1)


def test_non_string_key():
    text = "when:\n  on: float16\n  1: x\n"
    _, _, problems = load_yaml(text, "f.yaml")
    assert [(p.line, p.col) for p in problems] == [(2, 3), (3, 3)]
    assert "quote it" in problems[0].message


def test_merge_keys_and_tags_rejected():
    _, _, problems = load_yaml("base: &b {a: 1}\nx:\n  <<: *b\n", "f.yaml")
    assert "merge keys" in problems[0].message and problems[0].line == 3
    _, _, problems = load_yaml("x: !custom 1\n", "f.yaml")
    assert "unsupported YAML tag" in problems[0].message


def test_recursive_alias():
    _, _, problems = load_yaml("a: &x [1, *x]\n", "f.yaml")
    assert "recursive alias" in problems[0].message


def test_aliases_are_shared_values():
    data, _, problems = load_yaml("a: &d [float16, float32]\nb: *d\n", "f.yaml")
    assert problems == [] and data["b"] == ["float16", "float32"]


@pytest.mark.parametrize("text,value", [
    ("v: yes", True), ("v: 1.5", 1.5), ("v: 0x10", 16), ("v: ~", None), ("v: '1'", "1"), ("v: 1e3", "1e3"),
])
def test_scalars_follow_safe_loader(text, value):
    data, _, _ = load_yaml(text, "f.yaml")
    assert data["v"] == value and type(data["v"]) is type(value)
