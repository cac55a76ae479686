"""ONNX's node conformance tests of the mapped ops (tests/om/onnx_node_suite.py) against the sample
packages: no case gives a wrong result, the cases that pass today keep passing, and every refusal
is one of the reasons a user can act on."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("onnx")
sys.path.insert(0, str(Path(__file__).resolve().parent))
import onnx_node_suite  # noqa: E402

PASSING = {
    "test_leakyrelu", "test_leakyrelu_default", "test_leakyrelu_example",
    "test_mul", "test_mul_bcast", "test_mul_example", "test_nonzero_example",
    "test_sum_example", "test_sum_one_input", "test_sum_two_inputs",
    *(f"test_reduce_sum_{c}" for c in (
        "default_axes_keepdims_example", "default_axes_keepdims_random", "do_not_keepdims_example",
        "do_not_keepdims_random", "empty_set", "empty_set_non_reduced_axis_zero", "keepdims_example",
        "keepdims_random", "negative_axes_keepdims_example", "negative_axes_keepdims_random")),
    *(f"test_reduce_sum_square_{c}_expanded" for c in (
        "default_axes_keepdims_example", "default_axes_keepdims_random", "do_not_keepdims_example",
        "do_not_keepdims_random", "empty_set", "keepdims_example", "keepdims_random",
        "negative_axes_keepdims_example", "negative_axes_keepdims_random")),
}

REFUSAL_REASONS = (
    "no plugin maps ai.onnx::CastLike",                  # the _expanded LeakyRelu graphs
    "no declared dtype combination has x=",              # Mul of int8/16, uint8/16/32/64: MulCustom has none
    "ONNX attribute 'noop_with_empty_axes' = 1",         # a non-default value ReduceSumCustom has no attr for
)


@pytest.fixture(scope="module")
def results(opp):
    return onnx_node_suite.run_suite(opp)


def test_no_case_gives_a_wrong_result(results):
    assert {n: d for n, (s, d) in results.items() if s == "FAIL"} == {}


def test_the_cases_that_pass_keep_passing(results):
    assert PASSING <= {n for n, (s, _) in results.items() if s == "pass"}


def test_every_refusal_is_a_known_reason(results):
    unexplained = {n: d for n, (s, d) in results.items()
                   if s == "refused" and not any(r in d for r in REFUSAL_REASONS)}
    assert unexplained == {}
