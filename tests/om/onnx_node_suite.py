"""ONNX's own node conformance tests (onnx.backend.test.case.node) on the ops the sample packages'
plugins map: each case's model is converted to an .om against an OPP tree and run on its first data
set; the outputs are compared with ONNX's expected values at the case's tolerances.

A case either passes, is refused (an OmError: a node no plugin maps, a dtype no op declares, an
attribute value the op has no counterpart for), or fails (a wrong result or any other exception,
which the test module treats as a defect). When the converter names a graph input that must be
a constant (`--freeze-input NAME=FILE.npy`, as ReduceSum's `axes` in these cases), the case is
retried with that input frozen to its test value, as a user following the hint would.

    python tests/om/onnx_node_suite.py out/opp      # the table, then the counts
"""

from __future__ import annotations

import re
import sys
import tempfile
import warnings
from collections import Counter
from pathlib import Path

import numpy as np

MAPPED_OP_TESTS = re.compile(r"test_(sum|leakyrelu|mul|nonzero|reduce_sum)(_|$)")
"""The node tests of the ONNX ops the sample plugins map (Sum, LeakyRelu, Mul, NonZero, ReduceSum)."""

UNMAPPED_OP = re.compile(r"test_reduce_sum_square_(?!.*_expanded$)")
"""ReduceSumSquare cases whose graph is the one ReduceSumSquare node (no plugin maps it): not counted.
Their `_expanded` twins (Mul + ReduceSum) are."""

FREEZE_HINT = re.compile(r"--freeze-input (\S+)=FILE\.npy")


def cases():
    """ONNX's node test cases of the mapped ops, in ONNX's order."""
    from onnx.backend.test.case import node

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the case generators divide by zero on purpose)
        every = node.collect_testcases(None)
    return [c for c in every if MAPPED_OP_TESTS.match(c.name) and not UNMAPPED_OP.match(c.name)]


def run_case(case, opp: Path, work: Path) -> tuple[str, str]:
    """("pass" | "refused" | "FAIL", detail) of one case."""
    import onnx

    from opbuild.om.build import build_om
    from opbuild.om.errors import OmError
    from opbuild.om.loader import load_om
    from opbuild.om.onnx_model import onnx_model
    from opbuild.om.run import OmRunner

    path = work / f"{case.name}.onnx"
    onnx.save(case.model, str(path))
    inputs, expected = case.data_sets[0]
    feeds = dict(zip((i.name for i in case.model.graph.input), inputs))
    frozen: dict[str, np.ndarray] = {}
    try:
        while True:
            try:
                om = build_om(onnx_model(path, opp, frozen_inputs=frozen), opp)
                break
            except OmError as exc:
                hint = FREEZE_HINT.search(str(exc))
                if hint is None or hint.group(1) in frozen or hint.group(1) not in feeds:
                    raise
                frozen[hint.group(1)] = feeds.pop(hint.group(1))
        got = OmRunner(load_om(om, trust=True)).run(feeds)
        for output, want in zip(case.model.graph.output, expected):
            value = got[output.name]
            if value.dtype != want.dtype or value.shape != want.shape:
                return "FAIL", f"{output.name}: {value.dtype}{list(value.shape)}, expected {want.dtype}{list(want.shape)}"
            np.testing.assert_allclose(value, want, rtol=case.rtol, atol=case.atol)
    except OmError as exc:
        return "refused", str(exc)
    except Exception as exc:  # noqa: BLE001 - a wrong result or a defect: reported, not raised
        return "FAIL", f"{type(exc).__name__}: {exc}"
    return "pass", f"with --freeze-input {', '.join(sorted(frozen))}" if frozen else ""


def run_suite(opp: Path) -> dict[str, tuple[str, str]]:
    with tempfile.TemporaryDirectory() as work:
        return {c.name: run_case(c, opp, Path(work)) for c in cases()}


def main(argv: list[str]) -> int:
    results = run_suite(Path(argv[0] if argv else "out/opp"))
    for name, (status, detail) in results.items():
        print(f"{status:8} {name}  {detail.splitlines()[0][:160] if detail else ''}")
    counts = Counter(status for status, _ in results.values())
    print(f"{len(results)} cases: {counts['pass']} passed, {counts['refused']} refused, {counts['FAIL']} failed")
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
