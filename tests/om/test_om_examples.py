"""examples/models/ build and run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from opbuild.om.build import build_om
from opbuild.om.loader import load_om
from opbuild.om.model import load_model
from opbuild.om.run import OmRunner

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "models"


@pytest.mark.parametrize("name,flag", [("static_mul_leaky", 0), ("dynamic_reduce", 0xC000)])
def test_example(opp, name, flag):
    model = load_model(EXAMPLES / f"{name}.yaml")
    m = load_om(build_om(model, opp), trust=True)
    assert m.model_def["so_in_om_flag"] == flag
    rng = np.random.default_rng(0)
    inputs = {n: (rng.random((16, 1024), np.float32) - 0.5) for n, _, _ in model.inputs}
    out = OmRunner(m).run(inputs)
    if name == "static_mul_leaky":
        t = inputs["x"] * np.load(EXAMPLES / "scale.npy")
        np.testing.assert_allclose(out["y"], np.where(t > 0, t, np.float32(0.1) * t), rtol=1e-6)
    else:
        t = inputs["x"] * inputs["y"]
        np.testing.assert_allclose(out["z"], np.where(t > 0, t, np.float32(0.2) * t).sum(1), rtol=1e-5, atol=1e-4)
