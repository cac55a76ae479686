"""The field declarations (opbuild/spec/fields.py) and everything derived from them: the committed
schema and docs tables, the model dataclasses, the serializer and the checks' section list."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal

import pytest

from opbuild.spec import load_spec
from opbuild.spec import fields
from opbuild.spec.checks import SpecChecker, broken_sections
from opbuild.spec.field_docs import DocRegionError, fill_doc
from opbuild.spec.generate import REPO_DOC, expected_files, stale_files
from opbuild.spec.schema import SCHEMA_PATH, schema
from opbuild.spec.model import OpSpec
from opbuild.spec.serialize import spec_from_dict, spec_to_dict
from spec_helpers import BASE_SPEC, REPO, SAMPLES, write_op

MODELS = sorted({r.model for r in fields.RECORDS if r.model is not None}, key=lambda m: m.__name__)


# ~~~ committed artefacts ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~

def test_committed_schema_and_docs_are_what_the_declarations_produce():
    assert stale_files(REPO) == [], "run `python -m opbuild.spec.generate` and commit the result"


def test_the_validator_uses_the_generated_schema():
    assert SCHEMA_PATH.resolve() == (REPO / fields.REPO_SCHEMA).resolve()
    assert schema() == fields.schema_document()


def _copy_repo_files(root: Path) -> None:
    for rel in (fields.REPO_SCHEMA, REPO_DOC):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / rel, root / rel)


def _generate(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "opbuild.spec.generate", "--root", str(root), *args],
                          capture_output=True, text=True, cwd=REPO)


def test_check_mode_names_the_stale_file_and_generation_fixes_it(tmp_path):
    _copy_repo_files(tmp_path)
    assert _generate(tmp_path, "--check").returncode == 0

    schema_file = tmp_path / fields.REPO_SCHEMA
    edited = json.loads(schema_file.read_text())
    edited["$defs"]["format"]["enum"].append("NC1HWC0")  # a hand edit the declaration does not make
    schema_file.write_text(json.dumps(edited, indent=2) + "\n")
    doc_file = tmp_path / REPO_DOC
    doc_file.write_text(doc_file.read_text().replace("| `count` | integer ≥ 1 | no | `1` |", "| `count` | int | no | `2` |"))

    result = _generate(tmp_path, "--check")
    assert result.returncode == 1
    assert f"{fields.REPO_SCHEMA} is stale" in result.stderr
    assert f"{REPO_DOC} is stale" in result.stderr
    assert "python -m opbuild.spec.generate" in result.stderr

    result = _generate(tmp_path)
    assert result.returncode == 0, result.stderr
    assert _generate(tmp_path, "--check").returncode == 0
    assert schema_file.read_text() == (REPO / fields.REPO_SCHEMA).read_text()
    assert doc_file.read_text() == (REPO / REPO_DOC).read_text()


def test_check_mode_leaves_files_alone(tmp_path):
    _copy_repo_files(tmp_path)
    schema_file = tmp_path / fields.REPO_SCHEMA
    schema_file.write_text("{}\n")
    assert _generate(tmp_path, "--check").returncode == 1
    assert schema_file.read_text() == "{}\n"


def test_docs_prose_outside_the_regions_is_kept(tmp_path):
    _copy_repo_files(tmp_path)
    doc_file = tmp_path / REPO_DOC
    doc_file.write_text(doc_file.read_text() + "\nA note of the author's.\n")
    assert _generate(tmp_path).returncode == 0
    assert doc_file.read_text().endswith("\nA note of the author's.\n")
    assert expected_files(tmp_path)[REPO_DOC] == doc_file.read_text()


def test_a_record_without_a_docs_region_is_an_error():
    text = (REPO / REPO_DOC).read_text()
    start = text.index("<!-- BEGIN fields:binary ")
    end = text.index("<!-- END fields:binary -->") + len("<!-- END fields:binary -->")
    with pytest.raises(DocRegionError, match="no region for record.*binary"):
        fill_doc(text[:start] + text[end:])
    with pytest.raises(DocRegionError, match="more than one region for binary"):
        fill_doc(text + "\n" + text[start:end] + "\n")


def test_every_docs_table_row_is_a_declared_field():
    text = (REPO / REPO_DOC).read_text()
    for record in fields.RECORDS:
        body = text.split(f"<!-- BEGIN fields:{record.name} ")[1].split(f"<!-- END fields:{record.name} -->")[0]
        rows = [line.split("|")[1].strip() for line in body.splitlines() if line.startswith("| `")]
        assert rows == [f"`{f.name}`" for f in record.fields]


# ~~~ the model ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~

def _data_fields(model: type) -> list[str]:
    return [f.name for f in dataclasses.fields(model) if f.compare]  # `mark` (compare=False) is not data


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_model_attributes_are_the_declared_ones(model):
    assert sorted(fields.model_attributes(model)) == sorted(_data_fields(model))


def _matches(declared: Any, actual: Any) -> bool:
    """Whether the model's annotation `actual` stores what the declaration says. An enum may be
    stored as a plain `str`; if the model spells a Literal, it holds every declared value."""
    if declared is Any or actual is Any:
        return declared is actual
    d_origin, a_origin = typing.get_origin(declared), typing.get_origin(actual)
    if d_origin is Literal:
        if actual is str:
            return all(isinstance(v, str) for v in typing.get_args(declared))
        return a_origin is Literal and set(typing.get_args(declared)) <= set(typing.get_args(actual))
    if d_origin in (typing.Union, types.UnionType) or a_origin in (typing.Union, types.UnionType):
        d_args = typing.get_args(declared) if d_origin in (typing.Union, types.UnionType) else (declared,)
        a_args = typing.get_args(actual) if a_origin in (typing.Union, types.UnionType) else (actual,)
        if (type(None) in d_args) != (type(None) in a_args):
            return False
        d_rest = [a for a in d_args if a is not type(None)]
        a_rest = [a for a in a_args if a is not type(None)]
        return len(d_rest) == len(a_rest) == 1 and _matches(d_rest[0], a_rest[0])
    if d_origin is tuple:
        d_args, a_args = typing.get_args(declared), typing.get_args(actual)
        return a_origin is tuple and len(d_args) == len(a_args) and all(
            x is y if x is Ellipsis else _matches(x, y) for x, y in zip(d_args, a_args))
    return declared == actual


def _declared_type(field: fields.Field) -> Any:
    py = field.model_type if field.model_type is not None else field.type.py_type(fields.DEFS)
    optional = not field.required and field.default is None and field.model_type is None and py is not Any
    return py | None if optional else py


def _model_fields() -> list[tuple[str, type, fields.Field]]:
    return [(f"{r.name}.{f.name}", r.model, f) for r in fields.RECORDS if r.model for f in r.fields if f.model]


@pytest.mark.parametrize("where, model, field", _model_fields(), ids=[w for w, _, _ in _model_fields()])
def test_model_attribute_types_are_the_declared_ones(where, model, field):
    actual = typing.get_type_hints(model)[field.model]
    assert _matches(_declared_type(field), actual), f"{model.__name__}.{field.model}: {actual} vs {_declared_type(field)}"


def _literal_values(t: Any) -> set[Any]:
    """The values of every Literal inside a type (`tuple[Literal["a"], ...] | None` -> {"a"})."""
    if typing.get_origin(t) is Literal:
        return set(typing.get_args(t))
    return set().union(*(_literal_values(a) for a in typing.get_args(t) if a is not Ellipsis))


def test_model_literals_hold_exactly_the_declared_values():
    """Where the model spells an enum as a Literal, its values are the union of what the records
    mapping to that attribute declare (Param.param_type: the inputs' and the outputs')."""
    declared: dict[tuple[type, str], set[Any]] = {}
    for _, model, field in _model_fields():
        declared.setdefault((model, field.model), set()).update(_literal_values(_declared_type(field)))
    checked = 0
    for (model, attr), values in declared.items():
        in_model = _literal_values(typing.get_type_hints(model)[attr])
        if in_model:
            checked += 1
            assert in_model == values, f"{model.__name__}.{attr}"
    assert checked >= 5  # param_type, attr type, tiling type, key mode, deterministic, core_type


def test_type_comparison_can_fail():
    assert not _matches(Literal["a", "b"], Literal["a"])
    assert not _matches(tuple[str, ...], str)
    assert not _matches(str | None, str)
    assert not _matches(int, bool)


def test_declared_defaults_reach_the_model(tmp_path):
    spec = load_spec(write_op(tmp_path, BASE_SPEC))
    top = fields.OP_SPEC
    assert spec.description == "y = x"  # given; the others are defaults
    assert spec.packages == (top.field("package").default,)
    assert spec.socs == tuple(top.field("socs").default)
    assert spec.core_type == top.field("core_type").default
    assert spec.attrs == () and top.field("attrs").default == []
    assert spec.intercore_sync is fields.KERNEL.field("intercore_sync").default
    assert spec.key_rule.mode == fields.SIMPLIFIED_KEY.field("mode").default
    assert spec.inputs[0].formats == tuple(fields.DEFS["input"].field("formats").default)
    assert spec.inputs[0].param_type == fields.DEFS["input"].field("param_type").default
    assert spec.tiling_data[0].count == fields.DEFS["tiling_field"].field("count").default
    binary = fields.DEFS["binary"]
    assert spec.binaries[0].deterministic == binary.field("deterministic").default
    assert spec.binaries[0].impl_modes == tuple(binary.field("impl_mode").default)


def test_every_named_check_exists():
    named = {f.check for r in fields.RECORDS for f in r.fields if f.check}
    assert named and all(callable(getattr(SpecChecker, name, None)) for name in named), \
        sorted(n for n in named if not hasattr(SpecChecker, n))


def test_every_field_has_a_doc_and_a_destination():
    for record in fields.RECORDS:
        for f in record.fields:
            assert f.doc.strip() and "\n" not in f.doc, f"{record.name}.{f.name}"
            assert (f.model is None) != (f.becomes is None), f"{record.name}.{f.name}: model or becomes, not both"


# ~~~ derived elsewhere ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~

def test_broken_root_breaks_every_declared_section():
    assert broken_sections([()]) == set(fields.SECTIONS) | {"*"}


def test_serializer_round_trip_keeps_every_attribute(tmp_path):
    text = BASE_SPEC.replace("description: y = x", "description: y = x\nsocs: [ascend910b, ascend310p]\n"
                             "attrs:\n  - {name: alpha, type: list_float, default: [1, 2.5]}")
    text = text.replace("kernel: {source: kernel.c, entry: test_op}",
                        "kernel: {source: kernel.c, entry: test_op, intercore_sync: true}")
    text = text.replace("function: test_op_tiling}", "function: test_op_tiling, keys: [3, 1]}")
    spec = load_spec(write_op(tmp_path, text))
    data = json.loads(json.dumps(spec_to_dict(spec)))
    again = spec_from_dict(data, spec.spec_path)
    assert again == spec
    assert again.intercore_sync is True and again.attrs[0].default == (1.0, 2.5) and again.tiling_keys == (3, 1)
    # kernel_api, tiling_class and tiling_header are left out at their defaults (a C-API op is
    # written as before Ascend C ops existed)
    assert set(data) == ({"format_version"} | set(fields.model_attributes(OpSpec))
                         - {"spec_path", "kernel_api", "tiling_class", "tiling_header"})


def test_serializer_leaves_out_default_tiling_keys(tmp_path):
    """An op without declared tiling keys is written as before they existed (byte-identical
    packages); reading it back gives the default."""
    spec = load_spec(write_op(tmp_path, BASE_SPEC))
    data = json.loads(json.dumps(spec_to_dict(spec)))
    assert "tiling_keys" not in data and spec.tiling_keys == tuple(fields.TILING.field("keys").default)
    assert spec_from_dict(data, spec.spec_path) == spec


@pytest.mark.parametrize("name", SAMPLES)
def test_serializer_round_trip_of_the_samples(name):
    spec = load_spec(REPO / "ops" / name / "op.yaml")
    assert spec_from_dict(json.loads(json.dumps(spec_to_dict(spec))), spec.spec_path) == spec


def test_serializer_reads_data_written_before_the_declarations(tmp_path):
    spec = load_spec(write_op(tmp_path, BASE_SPEC))
    data = json.loads(json.dumps(spec_to_dict(spec)))
    data["extra"] = {"intercore_sync": data.pop("intercore_sync")}  # the old layout of later attributes
    for p in data["inputs"]:
        del p["shape"]  # omitted when None
    assert spec_from_dict(data, spec.spec_path) == spec


def test_other_tables_of_spec_vocabulary_agree():
    from opbuild.codegen.kernel_json import CORE_TYPE_SHORT, CORE_TYPES
    from opbuild.codegen.package_json import CORE_TYPE_INT
    from opbuild.codegen.tiling import TILING_C_TYPE, TILING_SIZE

    assert tuple(TILING_C_TYPE) == tuple(TILING_SIZE) == fields.TILING_FIELD_TYPES
    assert CORE_TYPES == fields.CORE_TYPES
    assert set(CORE_TYPE_SHORT) == set(CORE_TYPE_INT) == set(fields.CORE_TYPES)
