"""Issue 25, finding 1: a static `.om` whose MODEL_DEF descriptors are smaller than what a node's
precomputed tiling covers (a shape, a narrower dtype) made the kernel write past the output
buffer the runner allocated from the descriptor: SIGSEGV or a glibc abort, with or without
isolation. Now the descriptors are checked against the tiling and kernel before any launch
(opbuild/om/static_check.py), and output buffers are sized from what the tiling covers."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from omtools import build, model_dict, set_output_desc
from opbuild.om.errors import OmError
from opbuild.om.loader import load_om, parse_om
from opbuild.om.run import OmRunner


@pytest.fixture(scope="module")
def one_node(opp) -> bytes:
    return build(opp, model_dict("static1", [16, 1024], ops=1))


@pytest.fixture(scope="module")
def three_nodes(opp) -> bytes:
    return build(opp, model_dict("static3", [16, 1024]))


def _run_cli(tmp_path, data: bytes, isolation: str) -> subprocess.CompletedProcess:
    (tmp_path / "m.om").write_bytes(data)
    np.save(tmp_path / "x.npy", np.ones((16, 1024), np.float32))
    env = dict(os.environ, OPBUILD_ISOLATION=isolation)
    return subprocess.run([sys.executable, "-m", "opbuild", "om", "run", "m.om", "-i", "x=x.npy", "-i", "y=x.npy",
                           "--output-dir", "o", "--trust"], cwd=tmp_path, capture_output=True, text=True, env=env,
                          timeout=120)


@pytest.mark.parametrize("isolation", ["in-process", "process"])
@pytest.mark.parametrize("edit, message", [
    ({"shape": [16, 16]}, "output t0 descriptor is float32[16, 16], but its tiling was computed for "
                          "float32[16, 1024] (what the kernel writes)"),
    ({"dtype": "float16"}, "output t0 descriptor is float16[16, 1024], but the selected kernel MulCustom_FP32 "
                           "writes float32"),
])
def test_smaller_output_descriptor_is_one_error(one_node, tmp_path, isolation, edit, message):
    """The reproducer: the node's output descriptor (and its consumer's, consistently) shrunk.
    Before: exit 134 (double free or corruption) in both modes."""
    r = _run_cli(tmp_path, set_output_desc(one_node, "mul0", **edit), isolation)
    assert r.returncode == 1, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("opbuild om run: error: MODEL_DEF: model 'static1' (m.om): node mul0 (MulCustom): ")
    assert message in lines[0]
    assert not (tmp_path / "o").exists()  # nothing written


def test_checked_before_any_launch(one_node):
    """OmRunner refuses the model when it is made, before a kernel could run."""
    data = set_output_desc(one_node, "mul0", shape=[16, 16])
    with pytest.raises(OmError, match=r"node mul0 \(MulCustom\): output t0 descriptor is float32\[16, 16\]"):
        OmRunner(load_om(data, trust=True))


def test_descriptor_edited_alone_is_a_parse_error(one_node):
    """Only the producer's descriptor changed: its consumer (NetOutput) still says the real shape."""
    data = set_output_desc(one_node, "mul0", shape=[16, 16], consumers=False)
    with pytest.raises(OmError, match=r"MODEL_DEF @\d+ .*op Node_Output: input_desc 0 \(mul0:0\) is "
                                      r"float32\[16, 1024\], but its producer's output descriptor 't0' is "
                                      r"float32\[16, 16\]"):
        parse_om(data)


def test_file_without_the_outputs_record(three_nodes):
    """A file written before `selected` recorded the outputs: the consumer's tiling still
    catches a shrunk intermediate tensor (its input shapes)."""
    def old(sel):
        return {k: v for k, v in sel.items() if k not in ("output_dtypes", "output_shapes")}

    data = set_output_desc(three_nodes, "mul0", shape=[16, 16], selected=old)
    with pytest.raises(OmError, match=r"node act0 \(LeakyReluCustom\): input 0.0 is float32\[16, 16\], but its "
                                      r"tiling was computed for input shapes \[\[\[16, 1024\]\]\]"):
        OmRunner(load_om(data, trust=True))


def test_buffers_sized_from_the_tiling(one_node, inputs):
    """The runner allocates the outputs the tiling covers (selected.output_shapes)."""
    runner = OmRunner(load_om(one_node, trust=True))
    out = runner.run(inputs)
    np.testing.assert_array_equal(out["t0"], inputs["x"] * inputs["y"])
    sel = runner.model.model_def["nodes"][0]["selected"]
    assert sel["output_shapes"] == [[16, 1024]] and sel["output_dtypes"] == ["float32"]


@pytest.mark.parametrize("dtype", [["float16"], {"float16": 1}, 16])
def test_descriptor_dtype_not_a_string_is_an_om_error(dtype):
    """A kernel descriptor's supportInfo dtype of another JSON type (a list or an object: unhashable)
    raised TypeError out of the loader; it is the OmError naming the entry (found by mypy)."""
    from opbuild.om.static_check import kernel_dtypes

    with pytest.raises(OmError, match="names no dtype"):
        kernel_dtypes({"supportInfo": {"inputs": [{"dtype": dtype}]}}, "inputs", 1, "node n")
