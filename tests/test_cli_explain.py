"""`opbuild explain` (and `opbuild inspect`) on the sample package built for the runtime tests."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from opbuild.cli import main

_HELPER = Path(__file__).resolve().parent / "runtime" / "pkgbuild.py"


def _pkgbuild():
    name = "opbuild_tests_runtime_pkgbuild"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, _HELPER)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample package, built once per session (shared with tests/runtime)."""
    try:
        return _pkgbuild().sample_package(tmp_path_factory.getbasetemp())
    except RuntimeError as exc:
        pytest.fail(str(exc))


def explain(capsys, package: Path, *args: str) -> tuple[int, str, str]:
    status = main(["explain", str(package), *args])
    out = capsys.readouterr()
    return status, out.out, out.err


def _field(report: str, name: str) -> str:
    for line in report.splitlines():
        if line.startswith(f"{name}:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no {name!r} line in:\n{report}")


@pytest.mark.parametrize("dtype, key, binary", [
    ("float16", "AddCustomTemplate/d=0,p=1/custom_fp16", "AddCustomTemplate_FP16"),
    ("float32", "AddCustomTemplate/d=0,p=1/custom_fp32", "AddCustomTemplate_FP32"),
])
def test_seed_table_1(capsys, package, dtype, key, binary):
    status, out, err = explain(capsys, package, "AddCustomTemplate", "-i", f"x={dtype}[8,2048]",
                               "-i", f"y={dtype}[8,2048]")
    assert status == 0, err
    assert _field(out, "fragment") == key.rsplit("/", 1)[1]
    assert _field(out, "full key") == key
    assert _field(out, "binary") == binary
    assert _field(out, "bin path").endswith(f"add_custom_template/{binary}.so")
    assert "x=float16" in out or "x=float32" in out  # the call as the key rule saw it


def test_snake_name_deterministic_and_impl_mode(capsys, package):
    status, out, _ = explain(capsys, package, "add_custom_template", "-i", "x=float32[3]", "-i", "y=float32[3]",
                             "--deterministic", "--impl-mode", "default")
    assert status == 0 and _field(out, "full key") == "AddCustomTemplate/d=1,p=0/custom_fp32"


def test_python_and_c_callbacks_and_default_keys(capsys, package):
    status, out, _ = explain(capsys, package, "LeakyReluCustom", "-i", "x=bfloat16[10]", "-a", "negative_slope=0")
    assert status == 0 and _field(out, "binary") == "LeakyReluCustom_Relu_BF16"
    status, out, _ = explain(capsys, package, "AddNCustom", "-i", "x=int32[4]", "-i", "x=int32[4]")
    assert status == 0 and _field(out, "full key") == "AddNCustom/d=0,p=1/diy,addn,3"
    status, out, _ = explain(capsys, package, "ReduceSumCustom", "-i", "x=float16[4,5]", "-a", "axes=[1]",
                             "--deterministic")
    assert status == 0 and _field(out, "binary") == "ReduceSumCustom_FP16_Det"
    assert _field(out, "full key") == "ReduceSumCustom/d=1,p=1/1,2/1,2"


def test_no_binary_lists_nearest_keys(capsys, package):
    status, out, _ = explain(capsys, package, "MulCustom", "-i", "x=float32[2]", "-i", "y=float16[2]",
                             "-i", "z=float32[2]")
    assert status == 1
    assert _field(out, "full key") == "MulCustom/d=0,p=1/0,2/1,2/0,2"
    assert _field(out, "binary").startswith("NONE")
    nearest = out.split("nearest existing keys:")[1].strip().splitlines()
    assert nearest and all("->" in line and line.strip().startswith("MulCustom/") for line in nearest)


def test_failing_key_rule_is_reported(capsys, package):
    status, out, _ = explain(capsys, package, "AddCustomTemplate", "-i", "x=float16[2]", "-i", "y=float32[2]",
                             "-i", "z=float16[2]")
    assert status == 1 and _field(out, "fragment").startswith("FAILED")


@pytest.mark.parametrize("args, words", [
    (["NoSuchOp", "-i", "x=float16[2]"], ["no op 'NoSuchOp'", "AddCustomTemplate"]),
    (["AddCustomTemplate", "-i", "x=float16[2"], ["bad tensor"]),
    (["AddCustomTemplate", "-i", "x=float99[2]"], ["unknown dtype float99"]),
    (["AddCustomTemplate", "-i", "x=float16[2]"], ["input y not given"]),
    (["AddCustomTemplate", "-i", "x=float16[2]", "-i", "y=float16[2]", "-i", "w=float16[2]"], ["no tensor w"]),
    (["LeakyReluCustom", "-i", "x=float16[2]", "-a", "slope=1"], ["no attribute 'slope'"]),
    (["AddCustomTemplate", "-i", "x=float16[2]", "-i", "y=float16[2]", "--impl-mode", "fast"], ["unknown impl mode"]),
])
def test_usage_errors(capsys, package, args, words):
    status, _, err = explain(capsys, package, *args)
    assert status == 1 and err.startswith("opbuild explain: error:")
    for w in words:
        assert w in err


def test_explain_as_a_command(package):
    result = subprocess.run([sys.executable, "-m", "opbuild", "explain", str(package), "AddCustomTemplate",
                             "--input", "x=float16[8,2048]", "--input", "y=float16[8,2048]"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "full key:  AddCustomTemplate/d=0,p=1/custom_fp16" in result.stdout
    assert "binary:    AddCustomTemplate_FP16" in result.stdout


def test_inspect_lists_every_binary_and_key(capsys, package):
    assert main(["inspect", str(package)]) == 0
    out = capsys.readouterr().out
    assert "AddCustomTemplate  simplifiedKeyMode=2" in out and "MulCustom  simplifiedKeyMode=0" in out
    assert "key:  AddCustomTemplate/d=0,p=1/custom_fp16" in out
    assert out.count("    ReduceSumCustom_") == 4 and "[MISSING]" not in out
