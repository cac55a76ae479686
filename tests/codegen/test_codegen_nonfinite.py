"""Non-finite attribute values (±inf, NaN) in every generated language, without a build (the
end-to-end build is tests/runtime/test_nonfinite_attrs.py)."""

from __future__ import annotations

import json
import math

import pytest
from opbuild_spec_factory import make_spec, when

from opbuild import nonfinite
from opbuild.codegen.kernel_json import render_kernel_json
from opbuild.codegen.package_json import render_ops_info
from opbuild.codegen.python_api import render_python_api
from opbuild.keys.check import attr_samples
from opbuild.spec.model import Binary
from opbuild.spec.serialize import spec_from_dict, spec_to_dict

INF, NAN = math.inf, math.nan


def _spec():
    return make_spec("NonFinite", inputs=[("x", ["float32"])], outputs=[("y", ["float32"])],
                     attrs=[("hi", "float", INF), ("lo", "float", -INF), ("bad", "float", NAN),
                            ("many", "list_float", (INF, 1.0, NAN)), ("name", "str", "inf")],
                     binaries=[Binary("NonFinite_FP32", when(x="float32", y="float32"),
                                      (("hi", INF), ("lo", -INF), ("bad", NAN), ("many", (INF, 1.0, NAN)),
                                       ("name", "inf")))])  # pinned: the kernel JSON writes the values


def _strict(text: str):
    def refuse(token: str):
        raise AssertionError(f"non-JSON token {token}")

    return json.loads(text, parse_constant=refuse)


def test_json_spelling_round_trips_by_type():
    data = nonfinite.to_json({"a": [INF, -INF, NAN, 2.5], "b": (1, INF)})
    assert data == {"a": ["inf", "-inf", "nan", 2.5], "b": [1, "inf"]}
    assert nonfinite.from_json("float", "-inf") == -INF
    assert math.isnan(nonfinite.from_json("list_float", ["nan", 1.0])[0])
    assert nonfinite.from_json("str", "inf") == "inf"  # a string attribute keeps its string
    with pytest.raises(ValueError):
        json.dumps(INF, allow_nan=False)
    assert nonfinite.dumps([INF, NAN]) == '["inf", "nan"]'


def test_python_literals_evaluate_to_the_values():
    for value in (INF, -INF, 1.5, [INF, -2.0], (NAN,), "inf", True, None):
        text = nonfinite.python_literal(value)
        back = eval(text, {})  # noqa: S307 - our own literal, no names available
        expect = list(value) if isinstance(value, tuple) else value
        assert nonfinite.same(back, expect) or (isinstance(back, list) and all(map(nonfinite.same, back, expect)))


def test_serialized_spec_is_strict_json_and_round_trips():
    spec = _spec()
    text = nonfinite.dumps(spec_to_dict(spec), sort_keys=True)
    back = spec_from_dict(_strict(text), spec.spec_path)
    defaults = [a.default for a in back.attrs]
    assert defaults[0] == INF and defaults[1] == -INF and math.isnan(defaults[2])
    assert defaults[3][0] == INF and math.isnan(defaults[3][2]) and defaults[4] == "inf"


def test_generated_files_are_strict():
    spec = _spec()
    kernel = _strict(render_kernel_json(spec, spec.binaries[0], "ascend910b", bin_file_name="NonFinite_FP32",
                                        bin_suffix=".so", sha256="0" * 64))
    assert [a["value"] for a in kernel["supportInfo"]["attrs"]] == ["inf", "-inf", "nan", ["inf", 1.0, "nan"], "inf"]
    _strict(render_ops_info([spec], "ascend910b"))
    module = render_python_api([spec])
    compile(module, "aclnn_ops.py", "exec")
    assert "hi=float('inf'), lo=float('-inf'), bad=float('nan'), many=[float('inf'), 1.0, float('nan')]" in module


def test_consistency_samples_keep_non_finite_defaults_and_add_a_finite_value():
    spec = _spec()
    hi, lo, bad = (attr_samples(spec, a) for a in spec.attrs[:3])
    assert hi[0] == INF and len(hi) == 2 and math.isfinite(hi[1])
    assert lo[0] == -INF and len(lo) == 2 and math.isfinite(lo[1])
    assert math.isnan(bad[0]) and len(bad) == 2 and bad[1] == 1.5
