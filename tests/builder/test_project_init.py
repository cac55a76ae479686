"""`opbuild init [DIR]` and `opbuild new` in an empty directory (issue 26): an op project outside
the checkout that the installed opbuild alone builds (`opbuild build`, or `scons ops` through the
project's SConstruct), packs and runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from opbuild.cli import main
from opbuild.codegen.scaffold_project import PROJECT_FILES

REPO = Path(__file__).resolve().parents[2]
LISTING = sorted([*PROJECT_FILES, "ops"])


def test_init_writes_a_project(tmp_path: Path, capsys) -> None:
    root = tmp_path / "myops"
    assert main(["init", str(root)]) == 0
    assert sorted(p.name for p in root.iterdir()) == LISTING and not any((root / "ops").iterdir())
    assert capsys.readouterr().out == (f"created an op project in {root}/ (ops/, SConstruct, .gitignore, "
                                       f".pre-commit-config.yaml, README.md); add an op with `opbuild new OpName`, "
                                       f"build with `opbuild build`\n")
    assert "SConscript(str(opbuild.builder.project.SCONSTRUCT))" in (root / "SConstruct").read_text()
    assert "/out/" in (root / ".gitignore").read_text().splitlines()
    assert "entry: opbuild validate" in (root / ".pre-commit-config.yaml").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["myops"]  # no temporary directory left


def test_init_refuses_a_directory_that_is_not_empty(tmp_path: Path, capsys) -> None:
    (tmp_path / "mine.txt").write_text("mine")
    assert main(["init", str(tmp_path)]) == 1
    assert capsys.readouterr().err == (f"opbuild init: error: {tmp_path} is not an empty directory; not writing a "
                                       f"project into it (choose a new directory, or `opbuild new OpName` to add an "
                                       f"op to a project)\n")
    assert [p.name for p in tmp_path.iterdir()] == ["mine.txt"]


def test_new_in_an_empty_directory_writes_the_project_first(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["new", "ScaleCustom"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == LISTING
    assert (tmp_path / "ops" / "scale_custom" / "op.yaml").is_file()
    assert main(["new", "FilterCustom", "--engine", "aicpu"]) == 0  # (not empty now: just the op)
    assert sorted(p.name for p in (tmp_path / "ops").iterdir()) == ["filter_custom", "scale_custom"]
    assert capsys.readouterr().out.count("created an op project") == 1


def test_new_ai_cpu_refuses_ascendc(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["new", "X", "--engine", "aicpu", "--api", "ascendc"]) == 1
    assert capsys.readouterr().err == ("opbuild new: error: --engine aicpu writes a C compute function; --api ascendc "
                                       "is for AI Core ops\n")
    assert list(tmp_path.iterdir()) == []


def _run(args: list[str], cwd: Path, code: Path, **kw) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("OPBUILD_CACHE_DIR", "SCONSFLAGS", "OPBUILD_FULL_CHECK",
                                                             "ASCEND_CUSTOM_OPP_PATH", "ASCEND_OPP_PATH")}
    env.update(PYTHONPATH=str(code), PYTHONDONTWRITEBYTECODE="1", **kw.pop("env", {}))
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{args}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.mark.slow
def test_a_project_outside_the_checkout_builds_packs_and_runs(tmp_path: Path, code: Path) -> None:
    """init in a temporary directory, one AI Core and one AI CPU op from `opbuild new`, built by
    `opbuild build --package` with only opbuild's code on the path (a snapshot, as if installed),
    installed from its .run and run from there; `scons ops` in the project works too."""
    opbuild = [sys.executable, "-m", "opbuild"]
    root = tmp_path / "myops"
    _run([*opbuild, "init", str(root)], tmp_path, code)
    _run([*opbuild, "new", "ScaleCustom"], root, code)
    _run([*opbuild, "new", "FilterCustom", "--engine", "aicpu"], root, code)
    _run([*opbuild, "validate"], root, code)
    built = _run([*opbuild, "build", "--package", "--", "-j2"], root, code)
    assert "opbuild: ok: 2 ops, 2 kernel binaries," in built.stdout
    [run_file] = (root / "build_out").glob("custom_opp_*.run")
    assert _run([sys.executable, "-m", "SCons", "-Q", "ops"], root, code).stdout.count("opbuild: ok: 2 ops") == 1
    opp = tmp_path / "installed"
    _run(["bash", str(run_file), f"--install-path={opp}", "--quiet"], tmp_path, code)
    script = ("import numpy as np, opbuild.runtime as rt\n"
              f"ops = rt.import_ops({str(opp / 'vendors' / 'customize')!r})\n"
              "print(ops.scale_custom(np.arange(4, dtype=np.float32)).tolist())\n"
              "print(ops.filter_custom(np.array([1, -2, 3, 0], np.int32)).tolist())\n"
              "print(ops.filter_custom(np.array([0.5, 2.5], np.float32), threshold=1.0).tolist())\n")
    out = _run([sys.executable, "-c", script], tmp_path, code).stdout
    assert out.splitlines() == ["[0.0, 2.0, 4.0, 6.0]", "[1, 3]", "[2.5]"]
    assert not (REPO / "out" / "opp" / "vendors" / "customize" / "op_api" / "include" / "aclnn_filter_custom.h").exists()
