"""`opbuild build` (opbuild/builder/project.py): the project layouts, CMakePresets.json, the SCons
command line, argument handling and errors. The builds themselves run in
tests/deploy/test_toolkit_project.py (slow) and test_build_outside_checkout below."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from opbuild.builder import project
from opbuild.cli import main

REPO = Path(__file__).resolve().parents[2]


def _presets(root: Path, vendor: str = "acme", unit: str = "ascend910b;Ascend310P") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    doc = {"version": 1, "configurePresets": [{"name": "default", "cacheVariables": {
        "vendor_name": {"type": "STRING", "value": vendor}, "ASCEND_COMPUTE_UNIT": {"type": "STRING", "value": unit}}}]}
    path = root / project.PRESETS
    path.write_text(json.dumps(doc))
    return path


def test_presets_give_vendor_and_socs(tmp_path: Path) -> None:
    config = project.read_presets(_presets(tmp_path))
    assert config == project.ProjectConfig("acme", ("ascend910b", "ascend310p"))
    cmd = project.scons_command(tmp_path, config, ["-j2", "OPS=X"])
    assert cmd[:6] == [sys.executable, "-m", "SCons", "-C", str(tmp_path), "-f"]
    assert Path(cmd[6]) == project.SCONSTRUCT and project.SCONSTRUCT.is_file()
    assert cmd[7:] == ["VENDOR=acme", "SOC=ascend910b,ascend310p", "-j2", "OPS=X"]
    # the command line wins over the project config
    assert project.scons_command(tmp_path, config, ["VENDOR=other"])[7:] == ["SOC=ascend910b,ascend310p",
                                                                            "VENDOR=other"]


def test_the_root_sconstruct_reads_the_packaged_one() -> None:
    assert "opbuild.builder" in (REPO / "SConstruct").read_text()
    assert "from opbuild.builder.sconstruct import main" in project.SCONSTRUCT.read_text()


@pytest.mark.parametrize("presets, expected", [
    ("{", ":1:2: not valid JSON"),
    ("[]", "no configurePresets[0]"),
    ('{"configurePresets": [{"cacheVariables": {"vendor_name": "a b"}}]}', "vendor_name 'a b' contains"),
])
def test_bad_presets(tmp_path: Path, capsys, presets: str, expected: str) -> None:
    (tmp_path / "ops" / "x").mkdir(parents=True)
    (tmp_path / "ops" / "x" / "op.yaml").write_text("op: X\n")
    (tmp_path / project.PRESETS).write_text(presets)
    assert main(["build", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"{tmp_path / project.PRESETS}" in err and expected in err, err


def test_layout_errors(tmp_path: Path, capsys) -> None:
    assert main(["build", str(tmp_path / "none")]) == 1
    assert "no such project directory" in capsys.readouterr().err
    assert main(["build", str(tmp_path)]) == 1
    assert "not an op project" in capsys.readouterr().err
    (tmp_path / "op_host").mkdir()
    (tmp_path / "op_kernel").mkdir()
    try:
        import opbuild.ascendc.importer  # noqa: F401
    except ImportError:
        assert main(["build", str(tmp_path)]) == 1
        assert "Ascend C projects need the Ascend C front end" in capsys.readouterr().err
        assert not (tmp_path / "build_out").exists()


@pytest.mark.slow
def test_build_outside_checkout_with_presets_vendor(tmp_path: Path, capsys) -> None:
    root = tmp_path / "proj"
    _presets(root, vendor="acme", unit="ascend910b")
    shutil.copytree(REPO / "ops" / "add_custom_template", root / "ops" / "add_custom_template")
    assert main(["build", str(root), "--package", "--", "-j1", "-Q"]) == 0
    assert (root / "out" / "opp" / "vendors" / "acme" / "op_api" / "lib" / "libcust_opapi.so").is_file()
    runs = list((root / "build_out").glob("custom_opp_*.run"))
    assert len(runs) == 1 and "wrote" in capsys.readouterr().out
    assert not (REPO / "ops" / "add_custom_template" / "out").exists()


@pytest.mark.parametrize("argv, project_dir, scons_args, packs", [
    (["-j2", "SOC=ascend910b"], ".", ["-j2", "SOC=ascend910b"], False),
    (["OPS=A", "SOC=ascend910b"], ".", ["OPS=A", "SOC=ascend910b"], False),
    (["--package", "-j", "3", "OPS=A"], ".", ["-j3", "OPS=A"], True),
    (["proj", "-j2", "OPS=A"], "proj", ["-j2", "OPS=A"], False),
    (["proj", "--", "-c"], "proj", ["-c"], False),
    (["--", "-j2"], ".", ["-j2"], False),
])
def test_build_takes_the_scons_options_at_the_front_door(monkeypatch, argv, project_dir, scons_args, packs) -> None:
    """`opbuild build` passes scons ops' options on (-j N, NAME=value) with or without `--`
    (issue 26: the front door for users who never type scons)."""
    seen = []
    monkeypatch.setattr(project, "build", lambda p, rest, pkg=False: seen.append((str(p), rest, pkg)) or 0)
    assert main(["build", *argv]) == 0
    assert seen == [(project_dir, scons_args, packs)]


def test_build_refuses_zero_jobs(capsys) -> None:
    assert main(["build", "-j", "0"]) == 1
    assert capsys.readouterr().err == "opbuild build: error: -j 0: the number of jobs must be at least 1\n"
