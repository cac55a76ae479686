"""`opbuild new OP --api ascendc`: an op directory with msopgen's Ascend C skeleton that validates
(its host source compiled and read back) at once."""

from __future__ import annotations

import pytest

from opbuild.cli import main
from opbuild.validate import validate_op

pytestmark = pytest.mark.slow  # validation compiles the host source


def test_scaffold_validates(tmp_path, capsys):
    assert main(["new", "SquareAscendc", "--api", "ascendc", "--ops-dir", str(tmp_path / "ops")]) == 0
    op_dir = tmp_path / "ops" / "square_ascendc"
    assert sorted(p.relative_to(op_dir).as_posix() for p in op_dir.rglob("*") if p.is_file()) == [
        "op.yaml", "op_host/square_ascendc.cpp", "op_host/square_ascendc_tiling.h", "op_kernel/square_ascendc.cpp"]
    spec, problems = validate_op(op_dir / "op.yaml")
    assert problems == [] and spec.is_ascendc and [b.name for b in spec.binaries] == [
        "SquareAscendc_FLOAT16", "SquareAscendc_FLOAT32"]
    assert "created" in capsys.readouterr().out


def test_scaffold_refuses_an_existing_directory_and_a_bad_name(tmp_path, capsys):
    (tmp_path / "ops" / "square_ascendc").mkdir(parents=True)
    assert main(["new", "SquareAscendc", "--api", "ascendc", "--ops-dir", str(tmp_path / "ops")]) == 1
    assert "already exists" in capsys.readouterr().err
    assert main(["new", "square", "--api", "ascendc", "--ops-dir", str(tmp_path / "ops")]) == 1
    assert "not CamelCase" in capsys.readouterr().err
