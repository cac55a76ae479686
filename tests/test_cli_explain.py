"""`opbuild explain` (and `opbuild inspect`) on the sample packages built for the runtime tests:
the custom vendor package (AddCustomTemplate, AddNCustom, MulCustom) and the built-in one
(MulCustom, ReduceSumCustom, LeakyReluCustom in ops_math / ops_nn sub-packages)."""

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
def opp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample ops' OPP root, built once per session (shared with tests/runtime)."""
    try:
        return _pkgbuild().sample_opp(tmp_path_factory.getbasetemp())
    except RuntimeError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="module")
def package(opp: Path) -> Path:
    """The custom vendor package (vendors/customize)."""
    pb = _pkgbuild()
    return opp / pb.PACKAGE_DIRS[pb.CUSTOM]


@pytest.fixture(scope="module")
def builtin(opp: Path) -> Path:
    """The built-in package."""
    pb = _pkgbuild()
    return opp / pb.PACKAGE_DIRS[pb.BUILTIN]


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


@pytest.mark.parametrize("shape, chosen", [
    ("[8,2048]", "tiling key 0 (block_dim "),  # whole rows of 64
    ("[3]", "tiling key 1 (block_dim 1, "),  # a partial last row: the tail path
    ("[0]", None),  # nothing to launch: tiling does not run
])
def test_the_tiling_key_of_the_call(capsys, package, shape, chosen):
    status, out, err = explain(capsys, package, "AddCustomTemplate", "-i", f"x=float32{shape}", "-i", f"y=float32{shape}")
    assert status == 0, err
    assert _field(out, "kernel") == "tiling keys 0, 1 (the kernelList of AddCustomTemplate_FP32.json)"
    if chosen is None:
        assert _field(out, "tiling") == "not run: no output has elements, so the call launches nothing"
    else:
        assert _field(out, "tiling").startswith(f"add_custom_template_tiling chose {chosen}")


def test_a_failing_tiling_function_is_reported(capsys, package):
    status, out, _ = explain(capsys, package, "AddCustomTemplate", "-i", "x=float32[3]", "-i", "y=float32[3]",
                             "-i", "z=float32[4]")
    assert status == 1 and _field(out, "tiling").startswith("FAILED: AddCustomTemplate: tiling function "
                                                            "add_custom_template_tiling rejected the call: AddCustomTemplate: "
                                                            "shapes differ (x [3], y [3], z [4])")


def test_snake_name_deterministic_and_impl_mode(capsys, package):
    status, out, _ = explain(capsys, package, "add_custom_template", "-i", "x=float32[3]", "-i", "y=float32[3]",
                             "--deterministic", "--impl-mode", "default")
    assert status == 0 and _field(out, "full key") == "AddCustomTemplate/d=1,p=0/custom_fp32"


def test_python_and_c_callbacks_and_default_keys(capsys, package, builtin):
    status, out, _ = explain(capsys, builtin, "LeakyReluCustom", "-i", "x=bfloat16[10]", "-a", "negative_slope=0")
    assert status == 0 and _field(out, "binary") == "LeakyReluCustom_Relu_BF16"
    assert _field(out, "tiling").startswith("leaky_relu_custom_tiling chose tiling key 1 ")  # slope 0: ReLU
    assert _field(out, "bin path").endswith("ops_nn/leaky_relu_custom/LeakyReluCustom_Relu_BF16.so")
    status, out, _ = explain(capsys, package, "AddNCustom", "-i", "x=int32[4]", "-i", "x=int32[4]")
    assert status == 0 and _field(out, "full key") == "AddNCustom/d=0,p=1/diy,addn,3"
    status, out, _ = explain(capsys, builtin, "ReduceSumCustom", "-i", "x=float16[4,5]", "-a", "axes=[1]",
                             "--deterministic")
    assert status == 0 and _field(out, "binary") == "ReduceSumCustom_FP16_Det"
    assert _field(out, "full key") == "ReduceSumCustom/d=1,p=1/1,2/1,2"
    assert _field(out, "bin path").endswith("ops_math/reduce_sum_custom/ReduceSumCustom_FP16_Det.so")


@pytest.mark.slow  # its package fixture is asked for by name (not seen by tests/conftest.py)
@pytest.mark.parametrize("which, sub", [("package", ""), ("builtin", "ops_math/")])
def test_mul_in_either_package(capsys, request, which, sub):
    """MulCustom is in both packages: each selects its own binary."""
    root = request.getfixturevalue(which)
    status, out, _ = explain(capsys, root, "MulCustom", "-i", "x=float16[2,3]", "-i", "y=float32[3]",
                             "-i", "z=float32[2,3]")
    assert status == 0 and _field(out, "binary") == "MulCustom_FP16_FP32"
    bin_path = Path(_field(out, "bin path"))
    assert bin_path.resolve() == (root / "op_impl/ai_core/tbe/kernel/ascend910b" / f"{sub}mul_custom"
                                  / "MulCustom_FP16_FP32.so").resolve()


@pytest.mark.parametrize("op", ["ReduceSumCustom", "LeakyReluCustom"])
def test_built_in_op_is_not_in_the_custom_package(capsys, package, op):
    status, _, err = explain(capsys, package, op, "-i", "x=float32[2]")
    assert status == 1 and f"no op '{op}'" in err


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
def test_usage_errors(capsys, package, builtin, args, words):
    status, _, err = explain(capsys, builtin if args[0] == "LeakyReluCustom" else package, *args)
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


def test_inspect_lists_every_binary_and_key(capsys, package, builtin):
    assert main(["inspect", str(package)]) == 0
    out = capsys.readouterr().out
    assert "AddCustomTemplate  simplifiedKeyMode=2" in out and "MulCustom  simplifiedKeyMode=0" in out
    assert "key:  AddCustomTemplate/d=0,p=1/custom_fp16" in out
    assert out.count("    MulCustom_") == 4 and "[MISSING]" not in out
    assert "ReduceSumCustom" not in out and "LeakyReluCustom" not in out
    assert main(["inspect", str(builtin)]) == 0
    out = capsys.readouterr().out
    assert "MulCustom  simplifiedKeyMode=0" in out and "ReduceSumCustom  simplifiedKeyMode=" in out
    assert out.count("    ReduceSumCustom_") == 4 and out.count("    LeakyReluCustom_") == 6
    assert out.count("    MulCustom_") == 4 and "[MISSING]" not in out
    assert "AddCustomTemplate" not in out and "AddNCustom" not in out
    assert "config/ascend910b/ops_math/binary_info_config.json" in out
    assert "config/ascend910b/ops_nn/binary_info_config.json" in out
    assert "bin:  op_impl/ai_core/tbe/kernel/ascend910b/ops_math/reduce_sum_custom/ReduceSumCustom_FP32.so" in out


def test_explain_an_ai_cpu_op(capsys, package):
    """Issue 26: an AI CPU op has no simplified key and no kernel binary; explain says what runs
    it (the package's libcust_aicpu_kernels.so, RunCpuKernel -> the compute function) and exits 0."""
    status, out, err = explain(capsys, package, "NonZeroCustom", "-i", "x=float32[3,4]")
    assert status == 0 and err == ""
    lib = package.resolve() / "op_impl" / "cpu" / "aicpu_kernel" / "impl" / "libcust_aicpu_kernels.so"
    assert out.splitlines()[0] == "op:        NonZeroCustom (AI CPU: compute function non_zero_custom_compute in compute.c)"
    assert _field(out, "dtypes") == "declared combination 1 of 7"
    assert _field(out, "output") == ("y int64[2,12] (data-dependent: its bound max=['rank(x)', 'size(x)']; the compute "
                                     "function sets the real shape)")
    assert _field(out, "binary") == "none (an AI CPU op: no simplified key, no kernel binary)"
    assert Path(_field(out, "library")).resolve() == lib
    assert _field(out, "entry") == ("RunCpuKernel -> non_zero_custom_compute (registered for NonZeroCustom; the "
                                    "library has NonZeroCustom, SortCustom)")
    assert "NONE" not in out


def test_explain_an_ai_cpu_op_with_an_undeclared_dtype(capsys, package):
    status, out, _ = explain(capsys, package, "SortCustom", "-i", "x=float64[3,4]", "--attr", "descending=true")
    assert status == 1
    assert _field(out, "dtypes").startswith("NONE: not a declared combination; declared: (x=float32, values=float32, "
                                            "indices=int64); (x=float16")


def test_inspect_lists_the_ai_cpu_ops(capsys, package):
    assert main(["inspect", str(package)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    start = lines.index("aicpu  (op_impl/cpu/config/cust_aicpu_kernel.json)")
    assert lines[start + 1:] == [
        "  NonZeroCustom  engine=aicpu", "      lib:  op_impl/cpu/aicpu_kernel/impl/libcust_aicpu_kernels.so",
        "      entry: RunCpuKernel",
        "  SortCustom  engine=aicpu", "      lib:  op_impl/cpu/aicpu_kernel/impl/libcust_aicpu_kernels.so",
        "      entry: RunCpuKernel"]
