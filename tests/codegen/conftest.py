"""Spec factories for the keys and codegen tests.

`make_spec(...)` builds an OpSpec directly. `sample_spec(name)` loads one of the sample specs
under ops/ with `opbuild.spec.load_spec`.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from opbuild.spec.model import (
    Attr,
    Binary,
    KeyRule,
    OpSpec,
    Param,
    SourceRef,
    TensorChoice,
    TilingField,
)

# Test modules (here and in tests/keys) import the helpers as `opbuild_spec_factory`.
sys.modules.setdefault("opbuild_spec_factory", sys.modules[__name__])

REPO = Path(__file__).resolve().parents[2]
OPS = REPO / "ops"
SAMPLES = ("add_custom_template", "add_n_custom", "leaky_relu_custom", "mul_custom", "reduce_sum_custom")
HAVE_GCC = shutil.which("gcc") is not None


_CACHE: dict[str, OpSpec] = {}


def sample_spec(name: str) -> OpSpec:
    """A sample spec (ops/<name>/op.yaml) through the real loader, loaded once."""
    if name not in _CACHE:
        from opbuild.spec import load_spec

        _CACHE[name] = load_spec(OPS / name / "op.yaml")
    return _CACHE[name]


def make_spec(
    op: str = "AddCustomTemplate",
    *,
    inputs: list[tuple[str, list[str]] | tuple[str, list[str], str] | tuple[str, list[str], str, list[str]]] = None,
    outputs: list[tuple[str, list[str]] | tuple[str, list[str], str] | tuple[str, list[str], str, list[str]]] = None,
    attrs: list[tuple[str, str, Any]] = (),
    tiling: list[tuple[str, str] | tuple[str, str, int]] = (("total_length", "uint64"),),
    key_rule: KeyRule | None = None,
    binaries: list[Binary] = (),
    op_dir: Path | None = None,
    core_type: str = "VectorCore",
) -> OpSpec:
    """A spec from short tuples: params (name, dtypes[, param_type[, formats]]), attrs (name, type, default)."""
    def params(items, is_output):
        out = []
        for i, it in enumerate(items):
            name, dtypes = it[0], it[1]
            ptype = it[2] if len(it) > 2 else "required"
            formats = it[3] if len(it) > 3 else ["ND"]
            out.append(Param(name, i, tuple(dtypes), tuple(formats), ptype, is_output))
        return tuple(out)

    inputs = inputs if inputs is not None else [("x", ["float16", "float32"]), ("y", ["float16", "float32"])]
    outputs = outputs if outputs is not None else [("z", ["float16", "float32"])]
    from opbuild.spec.naming import snake_case

    snake = snake_case(op)
    op_dir = op_dir or (Path("/nonexistent/ops") / snake)
    return OpSpec(
        op=op, snake=snake, description="test op",
        inputs=params(inputs, False), outputs=params(outputs, True),
        attrs=tuple(Attr(n, i, t, d) for i, (n, t, d) in enumerate(attrs)),
        tiling_data=tuple(TilingField(*f) for f in tiling),
        kernel=SourceRef("kernel.c", f"{snake}"), tiling=SourceRef("tiling.c", f"{snake}_tiling"),
        key_rule=key_rule or KeyRule("default"), binaries=tuple(binaries), socs=("ascend910b",),
        spec_path=op_dir / "op.yaml", core_type=core_type,
    )


def when(**tensors: str) -> tuple[tuple[str, TensorChoice], ...]:
    """when(x="float16", y="float16/ND") -> the Binary.when tuple."""
    return tuple((k, TensorChoice(*v.split("/"))) for k, v in tensors.items())


@pytest.fixture(params=SAMPLES)
def sample(request) -> OpSpec:
    return sample_spec(request.param)


@pytest.fixture
def samples() -> dict[str, OpSpec]:
    return {name: sample_spec(name) for name in SAMPLES}


def gcc(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["gcc", *args], cwd=cwd, capture_output=True, text=True)
