"""`opbuild validate`: every problem as path:line:col on stderr and exit 1, or `ok: N op specs`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from opbuild.cli import COMMANDS, build_parser, main

sys.path.insert(0, str(Path(__file__).parent / "spec"))
from spec_helpers import BASE_SPEC, SAMPLES, sample_copy, where, write_op  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
BROKEN = BASE_SPEC.replace("{same_as: x}", "{same_as: q}").replace("type: uint64}", "type: u64}")


@pytest.fixture
def ops_dir(tmp_path: Path) -> Path:
    root = tmp_path / "ops"
    root.mkdir()
    for name in SAMPLES:
        sample_copy(root, name)
    return root


def test_validate_ok(ops_dir, capsys):
    assert main(["validate", str(ops_dir)]) == 0
    out, err = capsys.readouterr()
    assert out == f"ok: {len(SAMPLES)} op specs\n" and err == ""


def test_validate_defaults_to_ops(ops_dir, capsys, monkeypatch):
    monkeypatch.chdir(ops_dir.parent)
    assert main(["validate"]) == 0
    assert capsys.readouterr().out == f"ok: {len(SAMPLES)} op specs\n"


def test_validate_just_the_given_files(ops_dir, capsys):
    # as pre-commit calls it: only the staged op.yaml files
    write_op(ops_dir, BROKEN)
    files = [str(ops_dir / n / "op.yaml") for n in ("mul_custom", "add_n_custom")]
    assert main(["validate", *files]) == 0
    assert capsys.readouterr().out == "ok: 2 op specs\n"


def test_validate_broken_spec(ops_dir, capsys, monkeypatch):
    path = write_op(ops_dir, BROKEN)
    monkeypatch.chdir(ops_dir.parent)
    assert main(["validate", "ops"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    shown = "ops/test_op/op.yaml"
    # a semantic problem and a schema problem of another section, at once, sorted by line
    line, col = where(BROKEN, "q}")
    assert lines[0].startswith(f"{shown}:{line}:{col}: output 'y' shape: 'q' is not an input")
    line, col = where(BROKEN, "u64")
    assert lines[1] == (f"{shown}:{line}:{col}: 'u64' is not one of: int8, uint8, int16, uint16, int32, uint32, "
                        f"int64, uint64, float, double; did you mean 'uint64'? [$.tiling_data[0].type]")
    assert lines[-1] == "opbuild validate: 2 problem(s) in 1 file(s)"
    assert path.exists()


def test_validate_missing_path(ops_dir, capsys):
    assert main(["validate", str(ops_dir), str(ops_dir / "nope.yaml")]) == 1
    err = capsys.readouterr().err
    assert f"no such file or directory: {ops_dir / 'nope.yaml'}" in err


def test_validate_directory_without_specs(tmp_path, capsys):
    assert main(["validate", str(tmp_path)]) == 1
    assert "no op specs" in capsys.readouterr().err


def test_parser_is_a_registry():
    assert "validate" in COMMANDS
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args([])
    assert exc.value.code == 2


def test_python_dash_m_opbuild(tmp_path):
    path = write_op(tmp_path / "ops", BROKEN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "opbuild", "validate", str(path)],
                          capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    line, col = where(BROKEN, "u64")
    assert lines[1].startswith(f"{path}:{line}:{col}: 'u64' is not one of")
    assert len(lines) == 3


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_validate_checks_the_ops_together(ops_dir, capsys, monkeypatch):
    # AddCustomTemplate now maps ONNX Mul too, for opsets 11-13: MulCustom maps it from opset 7 on,
    # in the same (custom) package. Each op alone is valid; `scons ops` refuses the pair, and so must validate.
    spec = ops_dir / "add_custom_template" / "op.yaml"
    entry = "{op_type: AddCustomTemplate, domain: com.example.custom, min_opset: 1}"
    spec.write_text(spec.read_text().replace(entry, "{op_type: Mul, min_opset: 11, max_opset: 13}"))
    before = _files(ops_dir)
    monkeypatch.chdir(ops_dir.parent)
    assert main(["validate", "ops/add_custom_template/op.yaml"]) == 0  # alone it is fine
    capsys.readouterr()
    assert main(["validate", "ops"]) == 1
    out, err = capsys.readouterr()
    # (at the later op of the two, in the order the ops are found, naming the earlier)
    line, col = where((ops_dir / "mul_custom" / "op.yaml").read_text(), "{op_type: Mul")
    other = "ops/add_custom_template/op.yaml:{}:{}".format(*where(spec.read_text(), "{op_type: Mul"))
    assert out == "" and err.splitlines() == [
        f"ops/mul_custom/op.yaml:{line}:{col}: framework.onnx[0] of op MulCustom (opsets [7, ∞)) and framework.onnx[0] "
        f"of op AddCustomTemplate (opsets [11, 13], {other}) both map ai.onnx::Mul in the custom package: which op a "
        f"node of opset 11 becomes would be ambiguous (make the opset ranges disjoint, or put the ops in different "
        f"packages) [$.framework.onnx[0]]",
        "opbuild validate: 1 problem(s) in 1 file(s)"]
    assert _files(ops_dir) == before  # nothing written


def test_version_is_the_distribution_version(capsys):
    """`opbuild --version` prints the installed distribution's version (pyproject.toml's) and exits 0."""
    import importlib.metadata

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"opbuild {importlib.metadata.version('opbuild')}\n"
