"""Spec factories for the keys and codegen tests.

`make_spec(...)` builds an OpSpec directly. `sample_spec(name)` loads one of the sample specs
under ops/: with `opbuild.spec.load_spec` when it exists, else with `_mini_load`, a small reader
for the subset of op.yaml the samples use (kept here only so these tests do not depend on the
loader's progress; it is not the loader).
"""

from __future__ import annotations

import atexit
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from opbuild.spec.model import (
    DEFAULT_IMPL_MODES,
    Attr,
    Binary,
    KeyRule,
    OpSpec,
    Param,
    ShapeRule,
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


def _snake(name: str) -> str:
    import re

    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def _params(items: list[dict], is_output: bool) -> tuple[Param, ...]:
    out = []
    for i, it in enumerate(items or []):
        shape = None
        if "shape" in it:
            s = it["shape"]
            if "same_as" in s:
                shape = ShapeRule("same_as", (s["same_as"],))
            elif "broadcast" in s:
                shape = ShapeRule("broadcast", tuple(s["broadcast"]))
            elif "reduce" in s:
                shape = ShapeRule("reduce", (s["reduce"],), s.get("axes"), s.get("keep_dims"))
            else:
                shape = ShapeRule("function", (s["function"],))
        out.append(Param(it["name"], i, tuple(it["dtypes"]), tuple(it.get("formats", ["ND"])),
                         it.get("param_type", "required"), is_output, shape))
    return tuple(out)


def _key_rule(d: dict | None) -> KeyRule:
    if not d:
        return KeyRule("default")
    mode = d.get("mode", "default")
    cb = d.get("callback")
    if mode == "default":
        return KeyRule("default")
    if cb == "table":
        return KeyRule("customized", "table")
    if cb.startswith("c:"):
        return KeyRule("customized", "c", c_symbol=cb[2:])
    _, mod, fn = cb.split(":")
    return KeyRule("customized", "python", py_module=mod, py_function=fn)


def _mini_load(path: Path) -> OpSpec:
    doc = yaml.safe_load(path.read_text())
    inputs = _params(doc.get("inputs"), False)
    outputs = _params(doc.get("outputs"), True)
    tensor_names = {p.name for p in inputs + outputs}
    binaries = []
    for b in doc["binaries"]:
        when = tuple((k, TensorChoice(*v.split("/")) if "/" in str(v) else TensorChoice(v))
                     for k, v in b["when"].items() if k in tensor_names)
        attr_when = tuple((k, v) for k, v in b["when"].items() if k not in tensor_names)
        det = b.get("deterministic", "ignore")
        det = {True: "true", False: "false"}.get(det, det)
        binaries.append(Binary(b["name"], when, attr_when, b.get("key"), det,
                               tuple(b.get("impl_mode", DEFAULT_IMPL_MODES)), b.get("block_dim", -1)))
    return OpSpec(
        op=doc["op"], snake=_snake(doc["op"]), description=doc.get("description", ""),
        inputs=inputs, outputs=outputs,
        attrs=tuple(Attr(a["name"], i, a["type"], tuple(a["default"]) if isinstance(a.get("default"), list)
                         else a.get("default")) for i, a in enumerate(doc.get("attrs", []))),
        tiling_data=tuple(TilingField(f["name"], f["type"], f.get("count", 1)) for f in doc.get("tiling_data", [])),
        kernel=SourceRef(doc["kernel"]["source"], doc["kernel"]["entry"]),
        tiling=SourceRef(doc["tiling"]["source"], doc["tiling"]["function"]),
        key_rule=_key_rule(doc.get("simplified_key")), binaries=tuple(binaries),
        socs=tuple(doc.get("socs", ["ascend910b"])), spec_path=path,
    )


_STUB_ROOT: Path | None = None
_CACHE: dict[str, OpSpec] = {}


def _stubbed_copy(name: str) -> Path:
    """ops/<name> copied to a temporary directory, with stub C sources where the real ones are
    still missing (the kernels are written by others in parallel), so the loader can check it."""
    global _STUB_ROOT
    if _STUB_ROOT is None:
        _STUB_ROOT = Path(tempfile.mkdtemp(prefix="opbuild-codegen-tests-"))
        atexit.register(shutil.rmtree, _STUB_ROOT, True)
    dest = _STUB_ROOT / name
    if not dest.exists():
        shutil.copytree(OPS / name, dest)
        doc = yaml.safe_load((dest / "op.yaml").read_text())
        kernel, tiling = dest / doc["kernel"]["source"], dest / doc["tiling"]["source"]
        if not kernel.exists():
            kernel.write_text(f"void {doc['kernel']['entry']}(void) {{}}\n")
        if not tiling.exists():
            text = f"unsigned {doc['tiling']['function']}(void *ctx) {{ return 0; }}\n"
            cb = (doc.get("simplified_key") or {}).get("callback", "")
            if cb.startswith("c:"):
                text += f"unsigned {cb[2:]}(void *ctx, char *key) {{ return 0; }}\n"
            tiling.write_text(text)
    return dest / "op.yaml"


def sample_spec(name: str) -> OpSpec:
    """A sample spec via opbuild.spec.load_spec (on a stubbed copy while its C sources are missing),
    or via _mini_load when there is no loader yet."""
    if name in _CACHE:
        return _CACHE[name]
    path = OPS / name / "op.yaml"
    try:
        from opbuild.spec import load_spec  # type: ignore[attr-defined]
    except ImportError:
        spec = _mini_load(path)
    else:
        doc = yaml.safe_load(path.read_text())
        sources_there = all((path.parent / doc[s]["source"]).exists() for s in ("kernel", "tiling"))
        spec = load_spec(path if sources_there else _stubbed_copy(name))
    _CACHE[name] = spec
    return spec


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
    snake = _snake(op)
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
