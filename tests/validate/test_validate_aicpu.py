"""What `opbuild validate` (and the build, through validate_op) checks in an AI CPU op's compute
source (issue 26), each at the author's file:line:col: attribute names and accessor types read by
`aicpu_attr*(ctx, "name")`, and a `static` compute function."""

from __future__ import annotations

from pathlib import Path

from opbuild.cli import main
from opbuild.validate import validate_op
from spec_helpers import AICPU_SPEC, COMPUTE_C



def where(text: str, needle: str) -> tuple[int, int]:
    pos = text.index(needle)
    return text.count("\n", 0, pos) + 1, pos - (text.rfind("\n", 0, pos) + 1) + 1


def problems(tmp_path: Path, compute: str) -> list[str]:
    """validate_op's problems, as printed (`path:line:col: message`), of the op with this compute source."""
    op_dir = tmp_path / "test_op"
    op_dir.mkdir()
    (op_dir / "op.yaml").write_text(AICPU_SPEC)
    (op_dir / "compute.c").write_text(compute)
    spec, found = validate_op(op_dir / "op.yaml")
    assert (spec is None) == bool(found)
    return [str(p) for p in found]


def test_misspelt_attribute_name_in_the_compute_source(tmp_path):
    compute = COMPUTE_C.replace("{ return AICPU_OK; }",
                                '{\n    int f = aicpu_attr_bool(ctx, "flga");\n    return f ? AICPU_OK : AICPU_OK;\n}')
    line, col = where(compute, '"flga"')
    assert problems(tmp_path, compute) == [
        f"{tmp_path / 'test_op' / 'compute.c'}:{line}:{col}: TestOp: aicpu_attr_bool() reads attribute 'flga', which "
        f"the op does not declare (its attrs: flag); did you mean 'flag'?"]


def test_attribute_read_with_the_accessor_of_another_type(tmp_path):
    compute = COMPUTE_C.replace("{ return AICPU_OK; }",
                                '{ return aicpu_attr_float(ctx, "flag") > 0 ? AICPU_OK : AICPU_OK; }')
    line, col = where(compute, '"flag"')
    assert problems(tmp_path, compute) == [
        f"{tmp_path / 'test_op' / 'compute.c'}:{line}:{col}: TestOp: aicpu_attr_float() reads attribute 'flag', a "
        f"bool (it would read 0); use aicpu_attr_bool()"]


def test_attribute_reads_in_comments_and_of_declared_names_pass(tmp_path):
    compute = COMPUTE_C.replace("{ return AICPU_OK; }",
                                '{ /* aicpu_attr_bool(ctx, "nope") */\n'
                                '    return aicpu_attr_bool(ctx, "flag") + aicpu_attr(ctx, "flag")->i ? 0 : 0; }')
    assert problems(tmp_path, compute) == []


def test_static_compute_function(tmp_path):
    compute = COMPUTE_C.replace("uint32_t test_op_compute", "static uint32_t test_op_compute")
    line, col = where(compute, "test_op_compute")
    assert problems(tmp_path, compute) == [
        f"{tmp_path / 'test_op' / 'compute.c'}:{line}:{col}: TestOp: compute function 'test_op_compute' is static: "
        f"libcust_aicpu_kernels.so's registry cannot call it (the library would fail to load, for every AI CPU op "
        f"of the package); remove `static`"]


def test_opbuild_validate_prints_them_at_the_authors_path(tmp_path, monkeypatch, capsys):
    """As `opbuild validate ops` prints them (the path as given), exit 1."""
    op_dir = tmp_path / "ops" / "test_op"
    op_dir.mkdir(parents=True)
    (op_dir / "op.yaml").write_text(AICPU_SPEC)
    compute = COMPUTE_C.replace("{ return AICPU_OK; }", '{ return aicpu_attr_int(ctx, "flg") ? 1 : 0; }')
    (op_dir / "compute.c").write_text(compute)
    monkeypatch.chdir(tmp_path)
    assert main(["validate", "ops"]) == 1
    line, col = where(compute, '"flg"')
    assert capsys.readouterr().err == (
        f"ops/test_op/compute.c:{line}:{col}: TestOp: aicpu_attr_int() reads attribute 'flg', which the op does not "
        f"declare (its attrs: flag); did you mean 'flag'?\nopbuild validate: 1 problem(s) in 1 file(s)\n")
