"""±inf and NaN attribute defaults, end to end (issue 10, item 5): an op whose float attributes
default to `.inf`, `-.inf` and `.nan` builds, every generated JSON is strict JSON, its Python
module imports, and a call with the defaults hands those values to the tiling data (the kernel
writes what it sees to the output)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import pkgbuild
import opbuild.runtime as rt

pytestmark = pytest.mark.slow

OP = "NonFiniteCustom"
ATTRS = """attrs:
  - {name: scale, type: float, default: .inf}
  - {name: low, type: float, default: -.inf}
  - {name: bad, type: float, default: .nan}
  - {name: bounds, type: list_float, default: [.inf, -.inf, .nan, 1.5]}
"""
TILING_FIELDS = """  - {name: scale, type: float}
  - {name: low, type: float}
  - {name: bad, type: float}
"""
KERNEL_LOOP = "for (uint64_t i = begin; i < end; ++i) yp[i] = FROM_FLOAT(DTYPE_Y, scale * TO_FLOAT(xp[i]));"
KERNEL_SEEN = ("(void)xp;\n    for (uint64_t i = begin; i < end; ++i)\n"
               "        yp[i] = FROM_FLOAT(DTYPE_Y, i % 3 == 0 ? scale : i % 3 == 1 ? td.low : td.bad);")
"""The kernel writes the tiling data's attribute values to y: scale, low, bad, scale, ..."""


def _strict(text: str, where: str):
    def refuse(token: str):
        raise AssertionError(f"{where}: non-JSON token {token}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def nonfinite_package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from opbuild.codegen.scaffold import scaffold_op

    root = pkgbuild.new_project(tmp_path_factory.mktemp("nonfinite_project"), ops=())
    op_dir = scaffold_op(OP, root / "ops")
    spec = op_dir / "op.yaml"
    text = spec.read_text()
    text = text.replace("attrs:\n  - {name: scale, type: float, default: 2.0}\n", ATTRS)
    text = text.replace("  - {name: scale, type: float}\n", TILING_FIELDS)
    assert ".nan" in text and "name: bad, type: float}" in text, text
    spec.write_text(text)
    tiling = op_dir / "tiling.c"
    anchor = "    td->scale = (float)tiling_attr_float(ctx, NON_FINITE_CUSTOM_ATTR_SCALE);\n"
    assert anchor in tiling.read_text()
    tiling.write_text(tiling.read_text().replace(anchor, anchor
                      + "    td->low = (float)tiling_attr_float(ctx, NON_FINITE_CUSTOM_ATTR_LOW);\n"
                      + "    td->bad = (float)tiling_attr_float(ctx, NON_FINITE_CUSTOM_ATTR_BAD);\n"))
    kernel = op_dir / "kernel.c"
    assert KERNEL_LOOP in kernel.read_text()
    kernel.write_text(kernel.read_text().replace(KERNEL_LOOP, KERNEL_SEEN))
    validate = pkgbuild.subprocess.run([pkgbuild.sys.executable, "-m", "opbuild.cli", "validate", str(spec)],
                                       capture_output=True, text=True)
    assert validate.returncode == 0, validate.stderr
    try:
        return pkgbuild.build_project(root)
    except RuntimeError as exc:
        pytest.fail(str(exc))


def test_every_generated_json_is_strict(nonfinite_package: Path):
    files = sorted(nonfinite_package.rglob("*.json"))
    assert len(files) >= 5, files
    for f in files:
        _strict(f.read_text(), str(f))
    kernel_jsons = [f for f in files if f.parent.name == "non_finite_custom"]
    assert kernel_jsons
    attrs = {a["name"]: a["value"] for a in _strict(kernel_jsons[0].read_text(), "")["supportInfo"]["attrs"]}
    # the binary pins no attribute: it serves every value (null, as asc_opc writes it); pinned
    # non-finite values are spelled "inf"/"-inf"/"nan" (tests/codegen/test_codegen_nonfinite.py)
    assert attrs == {"scale": None, "low": None, "bad": None, "bounds": None}
    ops_info = next(f for f in files if f.name.endswith("-ops-info.json"))
    entry = _strict(ops_info.read_text(), "")[OP]
    assert [entry[f"attr_{n}"]["defaultValue"] for n in ("scale", "low", "bad", "bounds")] == \
        ["inf", "-inf", "nan", "[inf,-inf,nan,1.5]"]


def test_header_documents_the_defaults(nonfinite_package: Path):
    header = (nonfinite_package / "op_api" / "include" / "aclnn_non_finite_custom.h").read_text()
    for text in ("attribute 'scale', float, default inf", "attribute 'low', float, default -inf",
                 "attribute 'bad', float, default nan", "default [inf, -inf, nan, 1.5]"):
        assert text in header, header


def test_python_module_imports_and_the_kernel_sees_the_defaults(nonfinite_package: Path):
    source = (nonfinite_package / "op_api" / "python" / "aclnn_ops.py").read_text()
    assert "scale=float('inf'), low=float('-inf'), bad=float('nan')" in source, source
    ops = rt.import_ops(nonfinite_package)
    x = np.ones(7, dtype=np.float32)
    y = np.asarray(ops.non_finite_custom(x))
    assert y[0::3].tolist() == [math.inf] * 3 and y[1::3].tolist() == [-math.inf] * 2, y
    assert np.isnan(y[2::3]).all(), y
    # the attribute's definition round-trips (the runtime reads it from the module's JSON)
    spec = ops._OPS[OP].spec
    defaults = {a.name: a.default for a in spec.attrs}
    assert defaults["scale"] == math.inf and defaults["low"] == -math.inf and math.isnan(defaults["bad"])
    assert defaults["bounds"][:2] == (math.inf, -math.inf) and math.isnan(defaults["bounds"][2])
    y = np.asarray(ops.non_finite_custom(x, scale=1.0, low=-2.0, bad=3.0))
    assert y.tolist() == [1.0, -2.0, 3.0, 1.0, -2.0, 3.0, 1.0]
