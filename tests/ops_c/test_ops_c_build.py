"""How the sample ops' C sources build: -Werror, exported symbols, and opbuild's own generator.

The session `build` fixture already compiles every binary and the tiling library with
-Wall -Wextra -Werror; a warning fails every test. Here: what the objects export, and that the
sources also compile and run with the header, launch shim and macros opbuild's generator renders.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from .conftest import SAMPLE_OPS
from .harness import OPS_DIR, Build, OpRunner, build_ops, rand, sim_available


def _exports(path: Path) -> set[str]:
    out = subprocess.run(["nm", "-D", "--defined-only", str(path)], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.split()[1:2] == ["T"]} - {"_init", "_fini"}


def test_tiling_library_exports_only_tiling_functions_and_key_callbacks(build: Build):
    assert _exports(build.tiling_lib) == {
        "add_custom_template_tiling", "mul_custom_tiling", "leaky_relu_custom_tiling", "add_n_custom_tiling",
        "reduce_sum_custom_tiling", "add_n_custom_gen_simplified_key",
    }


def test_kernel_binaries_export_only_the_launch_function(build: Build):
    n = 0
    for op in build.ops.values():
        for so in op.kernels.values():
            assert _exports(so) == {"opbuild_kernel_launch"}, so
            n += 1
    assert n == 2 + 4 + 6 + 3 + 4


def test_every_binary_is_built(build: Build):
    assert {b for op in build.ops.values() for b in op.kernels} == {
        "AddCustomTemplate_FP16", "AddCustomTemplate_FP32",
        "MulCustom_FP16", "MulCustom_FP32", "MulCustom_FP16_FP32", "MulCustom_INT32",
        "LeakyReluCustom_FP16", "LeakyReluCustom_FP32", "LeakyReluCustom_BF16",
        "LeakyReluCustom_Relu_FP16", "LeakyReluCustom_Relu_FP32", "LeakyReluCustom_Relu_BF16",
        "AddNCustom_FP16", "AddNCustom_FP32", "AddNCustom_INT32",
        "ReduceSumCustom_FP32_Det", "ReduceSumCustom_FP32", "ReduceSumCustom_FP16_Det", "ReduceSumCustom_FP16",
    }


def test_sample_specs_validate(build: Build):
    """The specs (with this work's tiling_data) pass opbuild's validator, which also checks that
    kernel.c / tiling.c define the entry, tiling function and C key callback."""
    pytest.importorskip("opbuild.spec.loader")
    from opbuild.spec import load_specs

    specs = load_specs([OPS_DIR / op for op in SAMPLE_OPS])
    assert sorted(s.op for s in specs) == sorted(build.ops)
    for spec in specs:
        assert [(f.name, f.type, f.count) for f in spec.tiling_data] == build.ops[spec.op].info.tiling_data


def _real_generator_available() -> bool:
    try:
        import opbuild.codegen.kernel_src  # noqa: F401
        import opbuild.codegen.tiling  # noqa: F401
        import opbuild.spec.loader  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture(scope="module")
def real_build(tmp_path_factory: pytest.TempPathFactory) -> Build:
    if not _real_generator_available():
        pytest.skip("opbuild's generator is not importable")
    return build_ops([OPS_DIR / op for op in SAMPLE_OPS], tmp_path_factory.mktemp("ops_c_real"), generator="real")


def test_every_binary_runs_with_the_real_generator(real_build: Build):
    """One call per binary, on the simulator when it is built, with opbuild's header/shim/macros."""
    backend = "sim" if sim_available() else "threads"
    rng = np.random.default_rng(8)
    ran = set()
    for op, built in real_build.ops.items():
        r = OpRunner(real_build, op, backend)
        for b in built.info.binaries:
            dt = b.dtypes
            if op == "AddCustomTemplate":
                x, y = rand((3, 1001), dt["x"], rng), rand((3, 1001), dt["y"], rng)
                (z,), _ = r.run(b.name, [x, y], [x.shape])
                np.testing.assert_array_equal(z, x + y)
            elif op == "MulCustom":
                x, y = rand((5, 1, 4000), dt["x"], rng), rand((3, 1), dt["y"], rng)
                ref = x.astype(np.float32) * y if dt["x"] != dt["y"] else x * y
                (z,), _ = r.run(b.name, [x, y], [ref.shape])
                np.testing.assert_array_equal(z, ref)
            elif op == "LeakyReluCustom":
                slope = float(b.attr_when.get("negative_slope", 0.2))
                x = rand((9000,), dt["x"], rng)
                (y,), _ = r.run(b.name, [x], [x.shape], attrs={"negative_slope": slope})
                ref = np.where(x >= 0, x, (x.astype(np.float32) * np.float32(slope)).astype(x.dtype))
                np.testing.assert_array_equal(y.astype(np.float32), ref.astype(np.float32))
            elif op == "AddNCustom":
                xs = [rand((4, 2500), dt["x"], rng) for _ in range(3)]
                acc = [v.astype(np.float32) if dt["x"] == "float16" else v for v in xs]
                (y,), _ = r.run(b.name, [xs], [(4, 2500)])
                np.testing.assert_array_equal(y, (acc[0] + acc[1] + acc[2]).astype(xs[0].dtype))
            elif op == "ReduceSumCustom":
                x = rand((40, 30, 50), dt["x"], rng, 0.0, 0.25)
                (y,), t = r.run(b.name, [x], [(30,)], attrs={"axes": [0, -1]})
                assert t.block_dim >= 2
                np.testing.assert_allclose(y.astype(np.float64), x.astype(np.float64).sum(axis=(0, 2)), rtol=1e-3)
            ran.add(b.name)
    assert len(ran) == 19
