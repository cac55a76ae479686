"""`opbuild compare`: per-tensor metrics, per-dtype thresholds, NaN/inf rules, directory and
module references, the table, --json and the exit status (dumps written here by hand, in the
layout opbuild.runtime.debug.dump writes: no build needed)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from opbuild.cli import main
from opbuild.debug.compare import TOLERANCES, compare_arrays, compare_dump


def _write_launch(root: Path, name: str, op: str, inputs: dict, outputs: dict, attrs: dict | None = None) -> None:
    d = root / name
    d.mkdir(parents=True)
    index = {"op": op, "attrs": attrs or {}, "dump_mode": "all", "inputs": [], "outputs": []}
    for kind, tensors in (("input", inputs), ("output", outputs)):
        for i, (tname, a) in enumerate(tensors.items()):
            file = f"{kind}.{i}.{tname}.npy"
            np.save(d / file, a)
            index[f"{kind}s"].append({"name": tname, "file": file, "shape": list(a.shape), "dtype": a.dtype.name})
    (d / "launch.json").write_text(json.dumps(index))


def test_metrics_of_one_wrong_element():
    ref = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    got = ref.copy()
    got[1, 2] += 1.0  # 7 -> 8
    m = compare_arrays(got, ref, TOLERANCES["float32"])
    assert m["over"] == 1 and m["total"] == 12 and m["first_bad"] == [1, 2]
    assert m["max_abs"] == 1.0 and m["mean_abs"] == pytest.approx(1 / 12)
    assert m["max_rel"] == pytest.approx(1 / 7)
    assert m["cosine"] == pytest.approx(float(np.dot(got.ravel(), ref.ravel()) / np.linalg.norm(got) / np.linalg.norm(ref)))
    assert compare_arrays(ref, ref, 0.0)["over"] == 0


def test_nan_and_inf_rules():
    ref = np.array([np.nan, np.inf, -np.inf, 1.0], np.float32)
    assert compare_arrays(ref.copy(), ref, 1e-4)["over"] == 0  # NaN matches NaN, inf the same inf
    got = ref.copy()
    got[0] = 0.0
    got[1] = -np.inf
    m = compare_arrays(got, ref, 1e-4)
    assert m["over"] == 2 and m["first_bad"] == [0]


def test_per_dtype_thresholds_and_override(tmp_path):
    ref = np.linspace(1, 2, 64).astype(np.float16)
    close = (ref.astype(np.float32) * (1 + 5e-4)).astype(np.float16)  # within fp16's 1e-3
    far = ref.copy()
    far[5] = np.float16(float(ref[5]) * 1.01)
    dump, refdir = tmp_path / "dump", tmp_path / "ref"
    _write_launch(dump, "000000.Op", "Op", {}, {"z": close})
    _write_launch(dump, "000001.Op", "Op", {}, {"z": far})
    _write_launch(refdir, "000000.Op", "Op", {}, {"z": ref})
    _write_launch(refdir, "000001.Op", "Op", {}, {"z": ref})
    ok, bad = compare_dump(dump, str(refdir))
    assert ok.ok and ok.tolerance == 1e-3 and ok.over == 0
    assert not bad.ok and bad.over == 1 and bad.first_bad == [5]
    assert all(r.ok for r in compare_dump(dump, str(refdir), {"float16": 2e-2}))
    ints = tmp_path / "ints"
    _write_launch(ints, "000000.Op", "Op", {}, {"z": np.array([1, 2, 3], np.int32)})
    iref = tmp_path / "iref"
    _write_launch(iref, "000000.Op", "Op", {}, {"z": np.array([1, 2, 4], np.int32)})
    [r] = compare_dump(ints, str(iref))
    assert not r.ok and r.over == 1 and r.tolerance == 0.0  # integers are exact


def test_reference_directory_mismatches(tmp_path, capsys):
    dump, ref = tmp_path / "dump", tmp_path / "ref"
    _write_launch(dump, "000000.Op", "Op", {"x": np.ones(4, np.float32)}, {"z": np.ones(4, np.float32)})
    _write_launch(dump, "000001.Op", "Op", {}, {"z": np.ones(4, np.float32)})
    _write_launch(ref, "000000.Op", "Op", {"x": np.ones(4, np.float32)}, {"z": np.ones((2, 2), np.float32)})
    results = compare_dump(dump, str(ref))
    assert [(r.launch, r.tensor, r.ok, r.problem) for r in results] == [
        ("000000.Op", "input x", True, None),
        ("000000.Op", "output z", False, "shape [4], the reference [2, 2]"),
        ("000001.Op", "output z", False, "missing in the reference"),
    ]
    assert main(["compare", str(dump), "--reference", str(ref)]) == 1
    out = capsys.readouterr().out
    assert "FAIL: missing in the reference" in out and out.rstrip().endswith("3 tensors compared, 2 failed")


def test_reference_module_per_op_with_attrs(tmp_path, capsys):
    x = np.arange(100, dtype=np.float32)
    z = x * 2
    z[37] += 1
    dump = tmp_path / "dump"
    _write_launch(dump, "000000.Scale", "Scale", {"x": x}, {"z": z}, {"factor": 2})
    _write_launch(dump, "000001.Other", "Other", {"x": x}, {"z": x})
    module = tmp_path / "ref.py"
    module.write_text("def Scale(x, *, factor):\n    return x.astype('float64') * factor\n")
    scale, other = compare_dump(dump, str(module))
    assert not scale.ok and scale.over == 1 and scale.first_bad == [37] and scale.max_abs == 1.0
    assert not other.ok and other.problem == f"{module} has no function Other"
    assert main(["compare", str(dump), "--reference", str(module), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and doc["tensors"][0]["first_bad"] == [37] and doc["tolerances"]["float32"] == 1e-4


def test_torch_reference(tmp_path):
    pytest.importorskip("torch")
    x = np.arange(8, dtype=np.float32)
    dump = tmp_path / "dump"
    _write_launch(dump, "000000.Relu", "Relu", {"x": x - 4}, {"y": np.maximum(x - 4, 0)})
    module = tmp_path / "tref.py"
    module.write_text("import torch\n\ndef Relu(x):\n    return torch.relu(torch.from_numpy(x))\n")
    [r] = compare_dump(dump, str(module))
    assert r.ok and r.over == 0


@pytest.mark.parametrize("args, message", [
    (["compare", "NOPE", "--reference", "NOPE"], "NOPE: not a directory"),
    (["compare", "{dump}", "--reference", "{dump}", "--tolerance", "float16"], "--tolerance 'float16': expected DTYPE=VALUE"),
    (["compare", "{dump}", "--reference", "missing.py"], "missing.py: no such reference file"),
])
def test_usage_errors_are_one_line_and_exit_1(tmp_path, capsys, args, message):
    dump = tmp_path / "dump"
    _write_launch(dump, "000000.Op", "Op", {}, {"z": np.ones(2, np.float32)})
    assert main([a.format(dump=dump) for a in args]) == 1
    err = capsys.readouterr().err
    assert err.startswith("opbuild compare: error: ") and message in err and err.count("\n") == 1, err


def test_identical_dumps_pass(tmp_path, capsys):
    dump = tmp_path / "dump"
    _write_launch(dump, "000000.Op", "Op", {"x": np.ones(3, np.float32)}, {"z": np.ones(3, np.float32)})
    assert main(["compare", str(dump), "--reference", str(dump)]) == 0
    assert capsys.readouterr().out.rstrip().endswith("2 tensors compared, 0 failed")
