"""The broken-spec corpus (corpus.py): `opbuild validate` prints exactly each case's expected
lines (file:line:col in op.yaml, the key rule file or the C source) and exits 1; `scons ops`
rejects the same spec with the same lines before it writes anything."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from corpus import BROKEN, GOOD, cases, copy_case, expected_lines, good_cases, run_validate

from opbuild.cli import main

CASES = cases()


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 25


def _want(case: str, case_dir: Path) -> list[str]:
    want = expected_lines(case, case_dir)
    assert want, f"{case}: expected.txt is empty"
    files = len({line.split(":", 1)[0] for line in want})
    return [*want, f"opbuild validate: {len(want)} problem(s) in {files} file(s)"]


@pytest.mark.parametrize("case", CASES)
def test_validate_reports_exactly(case, tmp_path, validate_cache, monkeypatch, capsys):
    # in-process (`opbuild validate ops` is cli.main): fast; the subprocess runs are below
    case_dir = copy_case(BROKEN / case, tmp_path / case)
    monkeypatch.chdir(case_dir)
    monkeypatch.setenv("OPBUILD_VALIDATE_CACHE", str(validate_cache))
    assert main(["validate", "ops"]) == 1
    out, err = capsys.readouterr()
    assert (out, err.splitlines()) == ("", _want(case, case_dir))


@pytest.mark.parametrize("case", ["python_rule_attr_typo", "c_rule_reaches_no_binary", "python_rule_symlinked_outside",
                                  "kernel_entry_undefined"])
def test_validate_command_reports_exactly(case, tmp_path, validate_cache):
    case_dir = copy_case(BROKEN / case, tmp_path / case)
    result = run_validate(case_dir, validate_cache)
    assert (result.returncode, result.stdout, result.stderr.splitlines()) == (1, "", _want(case, case_dir))


@pytest.mark.parametrize("case", good_cases())
def test_the_unbroken_op_validates(case, tmp_path, validate_cache, monkeypatch, capsys):
    monkeypatch.chdir(copy_case(GOOD / case, tmp_path / case))
    monkeypatch.setenv("OPBUILD_VALIDATE_CACHE", str(validate_cache))
    assert main(["validate", "ops"]) == 0
    assert capsys.readouterr() == ("ok: 1 op specs\n", "")


def _project(case_dir: Path, code: Path) -> "Project":  # noqa: F821
    from build_helpers import Project

    project = Project(case_dir / "project", code)
    shutil.rmtree(project.root / "ops")
    shutil.move(str(case_dir / "ops"), project.root / "ops")
    for other in case_dir.iterdir():  # files a symlink case keeps outside ops/, at the same place
        if other.name != "project":
            shutil.move(str(other), project.root / other.name)
    return project


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_scons_rejects_before_writing(case, tmp_path, code, validate_cache):
    project = _project(copy_case(BROKEN / case, tmp_path / case), code)
    result = project.scons("ops", env={"OPBUILD_VALIDATE_CACHE": str(validate_cache)}, jobs=1)
    assert result.rc != 0, str(result)
    lines = result.stderr.splitlines()
    for line in expected_lines(case, project.root):
        assert line in lines, f"{case}: missing from scons's output: {line}\n{result}"
    assert not project.out.exists(), f"{case}: scons wrote {sorted(p.name for p in project.out.rglob('*'))}"


@pytest.mark.slow
@pytest.mark.parametrize("case", ["c", "python"])
def test_the_unbroken_op_builds(case, tmp_path, code, validate_cache):
    project = _project(copy_case(GOOD / case, tmp_path / case), code)
    project.build(env={"OPBUILD_VALIDATE_CACHE": str(validate_cache)})
    assert list(project.pkg.rglob("*ScaleCustom_FP16*"))
