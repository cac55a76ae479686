"""Spec selection (opbuild/builder/select.py): OPS=, and the checked specs shared through the build
cache by content (a clean checkout does not check again what a build already checked)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from opbuild.builder import cache
from opbuild.builder.select import SelectionError, SharedSpecs, SpecCache, select_specs
from opbuild.spec.serialize import spec_to_dict

REPO = Path(__file__).resolve().parents[2]


def _checkout(root: Path, *ops: str) -> Path:
    for op in ops:
        shutil.copytree(REPO / "ops" / op, root / "ops" / op)
    return root / "ops"


def _entries(cache_dir: Path) -> list[Path]:
    return sorted(cache_dir.glob("*/*.opspec"))


def test_ops_selects_and_lists_the_others(tmp_path):
    ops = _checkout(tmp_path, "add_custom_template", "mul_custom", "add_n_custom")
    selection = select_specs(ops, "MulCustom,add_n_custom")
    assert [s.op for s in selection.specs] == ["AddNCustom", "MulCustom"]
    assert [s.op for s in selection.others] == ["AddCustomTemplate"]
    assert select_specs(ops).others == []
    with pytest.raises(SelectionError, match="NoSuchOp"):
        select_specs(ops, "NoSuchOp")


def test_a_second_checkout_reuses_the_checked_specs(tmp_path, monkeypatch):
    shared_dir = tmp_path / "cache"
    first = select_specs(_checkout(tmp_path / "one", "mul_custom", "leaky_relu_custom"),
                         shared=SharedSpecs(str(shared_dir))).specs
    assert len(_entries(shared_dir)) == 2

    import opbuild.builder.select as select

    def no_check(path):
        raise AssertionError(f"{path} was checked again")

    monkeypatch.setattr(select, "validate_op", no_check)
    other = _checkout(tmp_path / "two", "mul_custom", "leaky_relu_custom")
    second = select_specs(other, cache=SpecCache(tmp_path / "two" / "specs.pickle"),
                          shared=SharedSpecs(str(shared_dir))).specs
    assert [spec_to_dict(s) for s in second] == [spec_to_dict(s) for s in first]
    assert [s.spec_path for s in second] == [other / "leaky_relu_custom" / "op.yaml", other / "mul_custom" / "op.yaml"]
    assert second[0].op_dir == other / "leaky_relu_custom"  # its Python key rule is found in this checkout


def test_an_edited_or_corrupt_spec_is_checked_again(tmp_path, capsys):
    shared_dir = tmp_path / "cache"
    select_specs(_checkout(tmp_path / "one", "add_custom_template"), shared=SharedSpecs(str(shared_dir)))
    other = _checkout(tmp_path / "two", "add_custom_template")
    spec = other / "add_custom_template" / "op.yaml"
    spec.write_text(spec.read_text().replace("socs:", "sock:"))  # invalid: the entry must not hide it
    with pytest.raises(SelectionError, match="sock"):
        select_specs(other, shared=SharedSpecs(str(shared_dir)))
    (other / "add_custom_template" / "op.yaml").write_text((REPO / "ops/add_custom_template/op.yaml").read_text())

    [entry] = _entries(shared_dir)
    entry.write_bytes(entry.read_bytes().replace(b'"op"', b'"xx"'))  # the stored sha256 no longer matches
    assert [s.op for s in select_specs(other, shared=SharedSpecs(str(shared_dir))).specs] == ["AddCustomTemplate"]
    assert "corrupt spec entry" in capsys.readouterr().err
    assert len(_entries(shared_dir)) == 1 and cache.load_verified(str(_entries(shared_dir)[0]))[0] is not None

