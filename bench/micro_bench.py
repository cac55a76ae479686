"""Per-call costs that used to be wall-clock assertions in the tests (issue 10, item 10), each
printed with its goal and as a ratio to a baseline measured in the same run, so that a slow or
busy machine shows up in both numbers rather than as a failed test.

    python bench/micro_bench.py [--repeat 5]

Baseline: `yaml.safe_load` (libyaml when available) of the sample op.yaml of the row, or for
the rows that read no spec, of ops/add_custom_template/op.yaml.

| row | goal | was |
|---|---|---|
| spec load (`load_spec`), per sample | < 5 ms | tests/spec/test_spec_samples.py::test_load_time_per_sample |
| code generation (all artefacts of one op), per sample | < 5 ms | tests/codegen/test_codegen_json.py::test_codegen_is_fast |
| table key rule, per call | < 50 us | tests/keys/test_keys_rules.py::test_table_fn_is_fast |
| tiling context build (3 tensors) | < 200 us (target ~10 us) | tests/runtime/test_tiling_context.py::test_build_is_fast (then under tests/abi) |
| binary index: load of 100 000 binaries; lookup among 200 000 keys vs among 200 | load < 20 s; lookup ratio < 10 | tests/runtime/test_runtime_package.py (timing part) |
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import yaml

REPO = Path(__file__).resolve().parents[1]
OPS = REPO / "ops"
SAMPLES = ("add_custom_template", "add_n_custom", "leaky_relu_custom", "mul_custom", "reduce_sum_custom")
SOC = "ascend910b"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def best(fn: Callable[[], object], number: int, repeat: int) -> float:
    """Best seconds per call of `fn` over `repeat` rounds of `number` calls."""
    fn()
    result = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        result = min(result, (time.perf_counter() - start) / number)
    return result


def yaml_baseline(name: str, repeat: int) -> float:
    text = (OPS / name / "op.yaml").read_text()
    return best(lambda: yaml.load(text, Loader=_LOADER), 50, repeat)


def row(what: str, seconds: float, goal: float, baseline: float) -> None:
    flag = "" if seconds < goal else "  OVER GOAL"
    print(f"{what:46} {seconds * 1e6:11.1f} {goal * 1e6:11.0f} {seconds / baseline:9.3g}x{flag}")


def spec_and_codegen(repeat: int) -> None:
    from opbuild import codegen
    from opbuild.spec.loader import load_spec

    for name in SAMPLES:
        path = OPS / name / "op.yaml"
        base = yaml_baseline(name, repeat)
        row(f"spec load: {name}", best(lambda: load_spec(path), 20, repeat), 5e-3, base)
        spec = load_spec(path)

        def artefacts() -> None:
            codegen.render_tiling_header(spec)
            codegen.render_launch_shim(spec)
            codegen.render_op_kernel_config(spec, SOC, ".so")
            codegen.render_binary_info_config([spec], SOC, ".so")
            codegen.render_ops_info([spec], SOC)
            for b in spec.binaries:
                codegen.render_kernel_json(spec, b, SOC, bin_file_name=b.name, bin_suffix=".so", sha256="0" * 64)
                json.dumps(codegen.binary_macros(spec, b))

        row(f"codegen: {name}", best(artefacts, 20, repeat), 5e-3, base)


def table_key_rule(repeat: int, base: float) -> None:
    sys.path.insert(0, str(REPO / "tests" / "codegen"))
    from conftest import make_spec, when  # the tests' spec factory

    from opbuild.keys import context_for_choices, make_fragment_fn
    from opbuild.spec.model import Binary, KeyRule, TensorChoice

    f16 = TensorChoice("float16", "ND")
    spec = make_spec("T", inputs=[("x", ["float16"])], outputs=[("y", ["float16"])],
                     key_rule=KeyRule("customized", "table"),
                     binaries=[Binary("B", when(x="float16", y="float16"), key="k")])
    fn = make_fragment_fn(spec)
    ctx = context_for_choices(spec, {"x": f16, "y": f16})
    row("table key rule, per call", best(lambda: fn(ctx), 2000, repeat), 50e-6, base)


def tiling_context(repeat: int, base: float) -> None:
    from opbuild.runtime.host.tiling_context import build_tiling_context

    args = ("AddCustom", [[("float16", "ND", (8, 2048), None)], [("float16", "ND", (8, 2048), None)]],
            [[("float16", "ND", (8, 2048), None)]], [("float", 1.0)], SOC, 40, 196608, False, 1, 4096)
    row("tiling context build (3 tensors)", best(lambda: build_tiling_context(*args), 200, repeat), 200e-6, base)


def binary_index(repeat: int, base: float) -> None:
    import numpy as np

    from opbuild.runtime.package import binary_index as load_index

    sys.path.insert(0, str(REPO / "tests" / "runtime"))
    from test_runtime_package import _synthetic_package  # the test's synthetic package

    with tempfile.TemporaryDirectory() as tmp:
        big = _synthetic_package(Path(tmp) / "big", 100_000)
        small = _synthetic_package(Path(tmp) / "small", 100)
        start = time.perf_counter()
        index = load_index(big, SOC)
        load_s = time.perf_counter() - start
        small_index = load_index(small, SOC)
    rng = np.random.default_rng(0)
    big_keys = [f"Synth/d=0,p=1/k{i}" for i in rng.integers(0, 100_000, 20_000)]
    small_keys = [f"Synth/d=0,p=1/k{i}" for i in rng.integers(0, 100, 20_000)]

    def lookups(by_key, keys) -> Callable[[], None]:
        def run() -> None:
            for k in keys:
                by_key[k]
        return run

    big_s = best(lookups(index.by_key, big_keys), 1, repeat) / len(big_keys)
    small_s = best(lookups(small_index.by_key, small_keys), 1, repeat) / len(small_keys)
    row("binary index: load 100 000 binaries", load_s, 20.0, base)
    row("binary index: lookup among 200 000 keys", big_s, 10 * small_s + 500e-9, base)
    print(f"{'':46} lookup ratio 200 000 / 200 keys: {big_s / small_s:.2f} (goal < 10)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'what':46} {'us/call':>11} {'goal us':>11} {'x yaml':>10}")
    spec_and_codegen(args.repeat)
    base = yaml_baseline("add_custom_template", args.repeat)
    table_key_rule(args.repeat, base)
    tiling_context(args.repeat, base)
    binary_index(args.repeat, base)


if __name__ == "__main__":
    main()
